"""Done when: `roundtable run --headless --autopilot --goal …` on the demo project, with
scripted agents, reaches a proposal with the required votes, a passing security review and test
evidence, awaiting the operator, with no operator launch; the events show each dispatch with its
reason. A real CLI process: owner, supervisor, scripted agent processes, SQLite."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.governance import gates
from roundtable.store.records import Proposal
from tests.autopilot.helpers import demo_project, events

pytestmark = pytest.mark.anyio


async def test_goal_to_a_proposal_awaiting_the_operator(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "demo")
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "run",
        "--root",
        str(root),
        "--headless",
        "--autopilot",
        "--goal",
        "Improve the calculator",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out, _ = await asyncio.wait_for(process.communicate(), 240)
    stdout = out.decode()
    wall = time.monotonic() - started
    assert process.returncode == 0, stdout
    assert "(awaiting_operator)" in stdout, stdout
    print(f"goal -> proposal awaiting the operator: {wall:.1f}s wall")

    rt = await Runtime.open(root)
    try:
        dispatched = await events(rt, "autopilot.dispatched")
        reasons = {(e["payload"]["agent_id"], e["payload"]["reason"]) for e in dispatched}
        assert {
            ("architect-1", "plan_goal"),
            ("implementer-1", "task_assigned"),
            ("reviewer-1", "review_requested"),
            ("security-1", "review_requested"),
            ("tester-1", "review_requested"),
        } <= reasons, reasons
        assert all(e["principal"] == "dispatcher" and e["payload"]["session_id"] for e in dispatched)
        launched = await events(rt, "session.launched")
        assert launched and len(launched) == len(dispatched)
        # No operator launch: the supervisor recorded every session, each asked for by the dispatcher.
        assert {e["principal"] for e in launched} == {"supervisor"}
        assert {e["payload"]["launched_by"] for e in launched} == {"dispatcher"}
        exited = await events(rt, "session.exited")
        assert len(exited) == len(launched) and all(e["payload"]["exit_code"] == 0 for e in exited)

        async with rt.db.read() as r:
            proposals = await r.all(Proposal, "SELECT * FROM proposals")
            assert len(proposals) == 1 and proposals[0].status == "in_review"
            proposal = proposals[0]
            # The implementer edited its workspace (a git worktree outside the demo) and proposed it.
            assert proposal.workspace_id and proposal.base_revision
            ws_path = await r.scalar("SELECT path FROM workspaces WHERE id = ?", (proposal.workspace_id,))
            assert not str(ws_path).startswith(str(root))
            report = await gates.evaluate(r, root, rt.policy, proposal, clock.now(), dry_run_error="")
            planned = await r.fetchall("SELECT title, status FROM tasks ORDER BY created_at")
        assert [tuple(row) for row in planned] == [
            ("Plan: Improve the calculator", "completed"),
            ("Add mul() to the calculator", "in_progress"),
        ]
        by_name = {g.name: g for g in report.gates}
        assert by_name["policy"].passed, by_name["policy"].reason  # the required votes
        assert {v.agent_id for v in report.votes} == {"reviewer-1", "security-1", "tester-1"}
        assert report.review is not None and report.review.status == "approved"  # the security review
        assert by_name["tests"].passed and any(t.status == "passed" for t in report.test_runs)  # host test evidence
        assert report.ok, report.error  # only the operator's approval and apply remain
        assert not await events(rt, "patch.applied")
        # It waits in the operator's approval inbox, asked for by the dispatcher, bound to the revision.
        async with rt.db.read() as r:
            asked = await r.fetchall("SELECT proposal_id, revision, status, requested_by FROM human_approvals")
        assert [tuple(row) for row in asked] == [(proposal.id, proposal.current_revision, "requested", "dispatcher")]
        (requested,) = await events(rt, "approval.requested")
        assert requested["principal"] == "dispatcher" and requested["run_id"] == proposal.run_id
    finally:
        await rt.close()
