"""Runtime.call: dispatch by either spelling, schema validation, one transaction per call."""

from __future__ import annotations

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.args import Args, NoArgs, Text
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("nope", {}, "tool not implemented: nope"),
        ("", {}, "tool not implemented: "),
        ("repo.dependency_context", {"path": "x"}, "tool not implemented: repo.dependency_context"),
        ("task.create", [1], "arguments must be a JSON object"),
        ("task.create", {"title": "x"}, "missing required argument body_md"),
        ("task.create", {"title": "x", "body_md": "y", "bogus": 1}, "unknown argument bogus (allowed:"),
        ("task.create", {"title": "  ", "body_md": "y"}, "argument title must not be empty"),
        ("task.create", {"title": "x", "body_md": "y", "priority": 2.5}, "argument priority must be an integer"),
        ("task.create", {"title": "x", "body_md": None}, "argument body_md must be a string"),
        ("agent.turn_start", {"run_id": "r", "agent_id": "a", "request_event_id": 0}, "must be at least 1"),
    ],
)
async def test_bad_calls_are_clear_errors(runtime: Runtime, tool: str, args: object, message: str) -> None:
    with pytest.raises(ToolError) as info:
        await runtime.call(tool, args)
    assert message in str(info.value)


class FailArgs(Args):
    a: Text = ""


async def test_failed_call_leaves_database_untouched(runtime: Runtime) -> None:
    async def half_then_fail(call: Call) -> dict[str, object]:
        await call.w.insert("tasks", {"id": "T-1", "title": "t", "body_md": "b"})
        await call.w.append_event("", "task.created", {"task_id": "T-1"})
        raise ToolError("refused after writing")

    spec = ToolSpec(
        name="x.fail", description="test", args=FailArgs, output_schema={"type": "object"}, handler=half_then_fail
    )
    runtime.registry._by_any_name["x.fail"] = spec
    with pytest.raises(ToolError, match="refused after writing"):
        await runtime.call("x.fail", {})
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM tasks") == 0
        assert await r.scalar("SELECT count(*) FROM events") == 0


async def test_internal_errors_do_not_leak(runtime: Runtime) -> None:
    async def crash(call: Call) -> dict[str, object]:
        raise RuntimeError("secret detail /home/x")

    runtime.registry._by_any_name["x.crash"] = ToolSpec(
        name="x.crash", description="t", args=NoArgs, output_schema={"type": "object"}, handler=crash
    )
    with pytest.raises(ToolError) as info:
        await runtime.call("x.crash", {})
    assert "secret detail" not in str(info.value)
    assert "internal error" in str(info.value)
