"""Two active runs do not hold each other open: the Chair assigns a run's own tasks (and those of
no run) and converges a run on its own work — tasks and proposals carry their run (run_scope)."""

from __future__ import annotations

import pytest

from roundtable import chair
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.tools.context import OPERATOR

pytestmark = pytest.mark.anyio


async def test_each_run_converges_and_assigns_on_its_own_work(runtime: Runtime) -> None:
    await chair.sync_agents(runtime)
    a = (await runs.create_run(runtime, "a", run_id="RUN-A")).id
    b = (await runs.create_run(runtime, "b", run_id="RUN-B")).id
    done = {"title": "done", "body_md": "x", "task_id": "T-A", "status": "completed"}
    await runtime.call("task.create", done, OPERATOR.with_run(a))
    await runtime.call("task.create", {"title": "todo", "body_md": "x", "task_id": "T-B"}, OPERATOR.with_run(b))
    async with runtime.db.read() as r:
        assert dict(await r.fetchall("SELECT id, run_id FROM tasks")) == {"T-A": a, "T-B": b}

    assert await chair.converge(runtime, a) == ("completed", "all_tasks_and_proposals_terminal")
    assert await chair.converge(runtime, b) == ("active", "work_remains")

    report = await chair.tick(runtime, a)
    assert report.assigned == []  # run B's task is run B's to assign
    report = await chair.tick(runtime, b)
    assert [x["task_id"] for x in report.assigned] == ["T-B"]
