"""Quotas on what agents create: a task or proposal flood by one agent is cut off at its quota
(`limits.tasks_per_agent`, `proposals_per_agent`, and the run's totals); the refused call changes
nothing and one `limits.quota_reached` event says who, what and which limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from roundtable import chair
from roundtable.errors import LimitReached
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.tools.context import OPERATOR
from tests.helpers import agent, make_git_project

pytestmark = pytest.mark.anyio


def _limits(project: Path, **values: int) -> None:
    path = project / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.setdefault("limits", {}).update(values)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


async def _count(rt: Runtime, sql: str) -> int:
    async with rt.db.read() as r:
        return int(await r.scalar(sql) or 0)


async def test_a_task_flood_by_one_agent_is_cut_off_by_its_quota(project: Path) -> None:
    _limits(project, tasks_per_agent=3, tasks_per_run=5)
    rt = await Runtime.open(project)
    try:
        await chair.sync_agents(rt)
        run = (await runs.create_run(rt, "flood", run_id="RUN-q")).id
        flooder, other = agent("implementer-1").with_run(run), agent("implementer-2").with_run(run)
        refused = 0
        for i in range(40):
            try:
                await rt.call("task.create", {"title": f"junk {i}", "body_md": "x"}, flooder)
            except LimitReached as exc:
                refused += 1
                assert "task quota reached: implementer-1 has created 3 tasks in run RUN-q" in str(exc)
                assert "limits.tasks_per_agent" in str(exc)
        assert refused == 37
        assert await _count(rt, "SELECT count(*) FROM tasks") == 3  # refused calls changed nothing
        # Another agent still may, up to the run's total; the operator is never refused.
        await rt.call("task.create", {"title": "mine", "body_md": "x"}, other)
        await rt.call("task.create", {"title": "mine too", "body_md": "x"}, other)
        with pytest.raises(LimitReached, match="the run has 5 tasks in run RUN-q"):
            await rt.call("task.create", {"title": "one more", "body_md": "x"}, other)
        await rt.call("task.create", {"title": "operator's", "body_md": "x"}, OPERATOR.with_run(run))
        async with rt.db.read() as r:
            rows = await r.fetchall(
                "SELECT run_id, actor_id, principal, payload_json FROM events WHERE type = 'limits.quota_reached'"
            )
        assert len(rows) == 38
        first = json.loads(rows[0]["payload_json"])
        assert (rows[0]["run_id"], rows[0]["actor_id"], rows[0]["principal"]) == (
            run,
            "implementer-1",
            "agent:implementer-1",
        )
        assert first["kind"] == "task" and first["scope"] == "agent" and first["limit"] == 3
        assert json.loads(rows[-1]["payload_json"])["scope"] == "run"
    finally:
        await rt.close()


async def test_proposals_per_agent(project: Path) -> None:
    make_git_project(project, {"a.py": "x = 1\n"})
    _limits(project, proposals_per_agent=2)
    rt = await Runtime.open(project)
    try:
        await chair.sync_agents(rt)
        run = (await runs.create_run(rt, "p", run_id="RUN-p")).id
        caller = agent("implementer-1").with_run(run)
        task = (
            await rt.call("task.create", {"title": "t", "body_md": "b", "assigned_agent_id": "implementer-1"}, caller)
        )["task"]
        claim = {"resource_type": "file", "path": "a.py", "claim_type": "write", "task_id": task["id"]}
        await rt.call("resource.claim", claim, caller)
        patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
        args = {
            "task_id": task["id"],
            "title": "p",
            "summary_md": "s",
            "patch": patch,
            "affected_resources": [],
            "risk": "normal",
        }
        for _ in range(2):
            await rt.call("proposal.create", args, caller)
        with pytest.raises(LimitReached, match="proposal quota reached: implementer-1 has created 2 proposals"):
            await rt.call("proposal.create", args, caller)
        assert await _count(rt, "SELECT count(*) FROM proposals") == 2
    finally:
        await rt.close()
