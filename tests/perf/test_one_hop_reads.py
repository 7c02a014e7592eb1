"""Point reads (`ToolSpec.point_read`) run whole in one hop on a reader's thread: they are
read-mode tools, they answer through `Runtime.call` and through their generated handler alike
(the record, or the refusal for a missing one), and they leave no snapshot open."""

from __future__ import annotations

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.tools.context import OPERATOR, Call
from roundtable.tools.registry import get_registry
from roundtable.tools.tasks import GetArgs

pytestmark = pytest.mark.anyio
POINT_READS = {"task.get", "resource.get", "vote.list", "human.approval_status"}


def test_point_reads_are_read_mode_tools() -> None:
    specs = {spec.name: spec for spec in get_registry() if spec.point_read is not None}
    assert POINT_READS <= set(specs)
    assert all(spec.mode == "read" and spec.read_only and spec.handler is not None for spec in specs.values())


async def test_task_get_through_the_one_hop_path(runtime: Runtime) -> None:
    created = (await runtime.call("task.create", {"title": "t", "body_md": "b", "readable_paths": ["src"]}))["task"]
    got = (await runtime.call("task.get", {"task_id": created["id"]}))["task"]
    assert got == created and got["readable_paths"] == ["src"]
    with pytest.raises(ToolError, match="T-missing"):
        await runtime.call("task.get", {"task_id": "T-missing"})
    # The snapshot of every pooled reader was closed in the hop that ran the call.
    assert not any(conn.in_transaction for conn in runtime.db._all_readers)
    # The generated handler answers the same inside an ordinary read.
    spec = runtime.registry.lookup("task.get")
    assert spec is not None and spec.handler is not None
    async with runtime.db.read() as reader:
        call = Call(
            runtime=runtime, tool="task.get", args=GetArgs(task_id=created["id"]), caller=OPERATOR, reader=reader
        )
        assert (await spec.handler(call))["task"] == created


async def test_a_blocked_task_says_why(runtime: Runtime) -> None:
    created = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]
    async with runtime.db.write() as tx:
        await tx.update("tasks", {"id": created["id"]}, {"status": "blocked"})
        await tx.append_event("", "task.blocked", {"reason": "no harness"}, task_id=created["id"])
    got = (await runtime.call("task.get", {"task_id": created["id"]}))["task"]
    assert got["status"] == "blocked" and got["blocked_reason"] == "no harness"
