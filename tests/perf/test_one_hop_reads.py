"""The point reads `Runtime.call` runs in one hop (`ONE_HOP_READS`) are real read-mode tools, and
they answer through it exactly as before: the record, or the refusal for a missing one."""

from __future__ import annotations

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import ONE_HOP_READS, Runtime
from roundtable.tools.registry import get_registry

pytestmark = pytest.mark.anyio


def test_one_hop_reads_name_read_mode_tools() -> None:
    modes = {spec.name: spec.mode for spec in get_registry()}
    assert ONE_HOP_READS and all(modes.get(name) == "read" for name in ONE_HOP_READS)


async def test_task_get_through_the_one_hop_path(runtime: Runtime) -> None:
    assert "task.get" in ONE_HOP_READS
    created = (await runtime.call("task.create", {"title": "t", "body_md": "b", "readable_paths": ["src"]}))["task"]
    got = (await runtime.call("task.get", {"task_id": created["id"]}))["task"]
    assert got == created and got["readable_paths"] == ["src"]
    with pytest.raises(ToolError, match="T-missing"):
        await runtime.call("task.get", {"task_id": "T-missing"})
    # The snapshot of every pooled reader was closed in the hop that ran the call.
    assert not any(conn._conn.in_transaction for conn in runtime.db._all_readers)
