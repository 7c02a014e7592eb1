"""A run's end withdraws its open proposals and releases its tasks' claims, so the next run's
agents do not meet the claims of work nobody will finish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable import chair
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.tools.context import CHAIR, OPERATOR
from tests.helpers import agent, make_git_project

pytestmark = pytest.mark.anyio

PATCH = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


async def _proposal(rt: Runtime, run_id: str, who: str) -> tuple[str, str, str]:
    """A task of `run_id` for `who`, its write claim on a.py and a proposal: (task, claim, proposal)."""
    caller = agent(who).with_run(run_id)
    task = (await rt.call("task.create", {"title": "t", "body_md": "b", "assigned_agent_id": who}, caller))["task"]
    claim = await rt.call(
        "resource.claim",
        {"resource_type": "file", "path": "a.py", "claim_type": "write", "task_id": task["id"]},
        caller,
    )
    args = {
        "task_id": task["id"],
        "title": "p",
        "summary_md": "s",
        "patch": PATCH,
        "affected_resources": [],
        "risk": "normal",
    }
    made = await rt.call("proposal.create", args, caller)
    return str(task["id"]), str(claim["claim"]["id"]), str(made["proposal"]["id"])


async def _ended_payload(rt: Runtime, run_id: str) -> dict[str, object]:
    async with rt.db.read() as r:
        row = await r.fetchone(
            "SELECT payload_json FROM events WHERE run_id = ? AND type = 'run.ended' ORDER BY id DESC LIMIT 1",
            (run_id,),
        )
    assert row is not None
    return dict(json.loads(row[0]))


@pytest.mark.parametrize("how", ["operator", "chair"])
async def test_ending_a_run_withdraws_its_open_proposals_and_releases_their_claims(project: Path, how: str) -> None:
    make_git_project(project, {"a.py": "x = 1\n"})
    rt = await Runtime.open(project)
    try:
        await chair.sync_agents(rt)
        first = (await runs.create_run(rt, "first", run_id="RUN-a")).id
        _task, claim_id, proposal_id = await _proposal(rt, first, "implementer-1")
        if how == "operator":
            done = await rt.call("run.end", {"run_id": first, "status": "blocked"}, OPERATOR)
        else:
            done = await rt.call(
                "chair.end_run", {"run_id": first, "status": "blocked", "iterations": 3, "reason": "stuck"}, CHAIR
            )
        assert done["withdrawn_proposals"] == [proposal_id] and done["released_claims"] == [claim_id]
        payload = await _ended_payload(rt, first)
        assert payload["withdrawn_proposals"] == [proposal_id] and payload["released_claims"] == [claim_id]
        async with rt.db.read() as r:
            status = await r.scalar("SELECT status FROM proposals WHERE id = ?", (proposal_id,))
            claim_status = await r.scalar("SELECT status FROM claims WHERE id = ?", (claim_id,))
            reason = await r.scalar("SELECT rationale_md FROM decisions WHERE proposal_id = ?", (proposal_id,))
        assert (status, claim_status) == ("rejected", "released")
        assert reason == f"withdrawn: run {first} ended (blocked)"
        # The next run's implementer claims the same file at once.
        second = (await runs.create_run(rt, "second", run_id="RUN-b")).id
        _t, new_claim, _p = await _proposal(rt, second, "implementer-2")
        assert new_claim
        # Ending an ended run again finds nothing left open.
        again = await rt.call("run.end", {"run_id": first, "status": "completed"}, OPERATOR)
        assert again["withdrawn_proposals"] == [] and again["released_claims"] == []
    finally:
        await rt.close()


async def test_ending_an_archived_run_changes_nothing(project: Path) -> None:
    make_git_project(project, {"a.py": "x = 1\n"})
    rt = await Runtime.open(project)
    try:
        await chair.sync_agents(rt)
        run_id = (await runs.create_run(rt, "first", run_id="RUN-a")).id
        _task, claim_id, proposal_id = await _proposal(rt, run_id, "implementer-1")
        async with rt.db.write() as tx:  # archived with its proposal still open (an older version's end)
            await tx.update("runs", {"id": run_id}, {"status": "archived"})
        with pytest.raises(ToolError, match="is archived"):
            await rt.call("run.end", {"run_id": run_id, "status": "completed"}, OPERATOR)
        async with rt.db.read() as r:
            assert await r.scalar("SELECT status FROM proposals WHERE id = ?", (proposal_id,)) == "pending"
            assert await r.scalar("SELECT status FROM claims WHERE id = ?", (claim_id,)) == "active"
    finally:
        await rt.close()
