"""The Chair writes only through its internal operations: they exist for the Chair alone, every
change they make is labelled and stamped with the Chair as principal, and a refused one changes
nothing."""

from __future__ import annotations

import pytest

from roundtable import chair
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.tools.context import CHAIR, OPERATOR, Caller
from roundtable.tools.registry import get_registry

pytestmark = pytest.mark.anyio

CHAIR_OPS = (
    "chair.assign_tasks",
    "chair.mark_in_review",
    "chair.sweep_claims",
    "chair.expire_turns",
    "chair.schedule_turn",
    "chair.record_error",
    "chair.end_run",
    "chair.note_retry",
)


def test_the_chair_operations_are_internal_and_never_advertised() -> None:
    registry = get_registry()
    for name in CHAIR_OPS:
        spec = registry.lookup(name)
        assert spec is not None and spec.audience == "internal" and not spec.advertised, name


@pytest.mark.parametrize("caller", [OPERATOR, Caller("agent", "http", agent_id="implementer-1")])
async def test_no_one_else_can_name_them(runtime: Runtime, run_id: str, caller: Caller) -> None:
    with pytest.raises(ToolError, match=r"tool not implemented: chair\.record_error"):
        await runtime.call("chair.record_error", {"run_id": run_id, "step": "x", "error": "y"}, caller)
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM events WHERE type = 'chair.error'") == 0


async def test_tick_changes_are_the_chairs(runtime: Runtime, run_id: str) -> None:
    await runtime.call("task.create", {"title": "t", "body_md": "b", "task_id": "T-1"})
    changes = runtime.bus.subscribe()
    report = await chair.tick(runtime, run_id)
    assert report.assigned == [{"task_id": "T-1", "agent_id": "implementer-1"}]
    tools = {c.tool for c in changes.drain()}
    changes.close()
    assert "chair.assign_tasks" in tools and all(t.startswith("chair.") for t in tools), tools
    async with runtime.db.read() as r:
        row = await r.fetchone("SELECT actor_id, principal, transport, run_id FROM events WHERE type = 'task.assigned'")
    assert row is not None and tuple(row) == ("chair-1", "chair", "chair", run_id)


async def test_an_invalid_call_is_refused_with_state_untouched(runtime: Runtime, run_id: str) -> None:
    with pytest.raises(ToolError, match=r"chair\.end_run: argument status must be one of"):
        await runtime.call("chair.end_run", {"run_id": run_id, "status": "archived", "iterations": 1}, CHAIR)
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT status FROM runs WHERE id = ?", (run_id,)) == "active"
