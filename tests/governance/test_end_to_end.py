"""End to end on a real git repository: claim → propose → votes → security → tests →
approval → validate → apply → rollback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from tests.governance.conftest import AUTHOR, Flow, agent, make_patch

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")


async def test_full_flow_apply_and_rollback(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    proposal = await flow.propose(PATCH, expected_tests=["printf ok"], rollback_notes="revert it")
    pid = proposal["id"]
    assert proposal["revision_number"] == 1
    assert len(proposal["current_revision"]) == 64
    assert proposal["expected_tests"] == ["printf ok"]
    assert proposal["rollback_notes"] == "revert it"
    stored = repo / ".roundtable" / "patches" / f"{proposal['current_revision']}.diff"
    assert stored.read_text() == PATCH

    got = await flow.call("proposal.get", {"proposal_id": pid})
    assert got["patch"] == PATCH and "gates" not in got  # a reviewer's view
    full = await flow.call("proposal.get", {"proposal_id": pid, "detail": True})
    assert full["patch"] == PATCH and full["gates"]["ok"] is False  # no votes yet

    review = await flow.call("proposal.request_review", {"proposal_id": pid})
    assert review["proposal"]["status"] == "in_review"
    assert "Reviewer" in review["review_roles"]

    await flow.approve_votes(pid)
    scan = await flow.security(pid)
    assert scan["review"]["revision"] == proposal["current_revision"]
    run = await flow.test_run(pid)
    assert run["status"] == "passed"
    approval = await flow.approve_human(pid)
    assert approval["status"] == "approved"

    report = await flow.call("patch.validate", {"proposal_id": pid})
    assert report["valid"] is True, report
    assert report["applicable"] is True, report["gates"]
    assert report["patch_files"] == ["src/app.py"]

    out = await flow.call("patch.apply", {"proposal_id": pid})
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    tx = out["transaction"]
    assert tx["status"] == "applied"
    assert out["policy"]["approvals"] == 2
    assert out["security_review"]["id"] == scan["review"]["id"]
    assert out["human_approval"]["id"] == approval["id"]  # the operator's approval of this revision
    assert out["proposal"]["status"] == "accepted"
    assert tx["revision"] == proposal["current_revision"]
    assert tx["before_git_hash"].startswith("git:") and tx["after_git_hash"] != tx["before_git_hash"]
    artefact = repo / tx["rollback_patch_path"]
    assert (artefact / "preimage" / "src" / "app.py").read_text() == "print('v1')\n"
    assert (artefact / "patch.diff").read_text() == PATCH
    manifest = json.loads((artefact / "manifest.json").read_text())
    assert manifest["files"]["src/app.py"]["existed"] is True

    # Applied proposals are not applied again.
    with pytest.raises(ToolError, match="accepted"):
        await flow.call("patch.apply", {"proposal_id": pid})

    rolled = await flow.call("patch.rollback", {"transaction_id": tx["id"], "reason_md": "oops"})
    assert rolled["transaction"]["status"] == "rolled_back"
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"

    async with flow.rt.db.read() as r:
        types = [row[0] for row in await r.fetchall("SELECT type FROM events ORDER BY id")]
    for expected in (
        "proposal.created",
        "proposal.review_requested",
        "vote.cast",
        "patch.validated",
        "patch.applied",
        "patch.rolled_back",
    ):
        assert expected in types


async def test_new_revision_makes_votes_stale(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    before = await flow.call("patch.validate", {"proposal_id": pid})
    assert before["policy"]["approvals"] == 2
    patch2 = make_patch("src/app.py", "print('v1')", "print('v3')")
    revised = await flow.call("proposal.attach_patch", {"proposal_id": pid, "patch": patch2}, agent(AUTHOR))
    assert revised["proposal"]["revision_number"] == 2
    assert revised["proposal"]["current_revision"] != proposal["current_revision"]
    after = await flow.call("patch.validate", {"proposal_id": pid})
    assert after["policy"]["approvals"] == 0
    assert after["tests_satisfied"] is False
    votes = await flow.call("vote.list", {"proposal_id": pid})
    assert votes["votes"] and not any(v["current"] for v in votes["votes"])
    with pytest.raises(ToolError, match="not approvable"):
        await flow.call("patch.apply", {"proposal_id": pid})


async def test_revote_replaces_earlier_vote(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    await flow.call(
        "vote.cast",
        {"proposal_id": pid, "agent_id": "reviewer-1", "vote": "approve", "reason_md": "again"},
        agent("reviewer-1"),
    )
    votes = (await flow.call("vote.list", {"proposal_id": pid}))["votes"]
    assert [v["agent_id"] for v in votes].count("reviewer-1") == 1
    await flow.call(
        "vote.cast",
        {"proposal_id": pid, "agent_id": "reviewer-1", "vote": "REVISE", "reason_md": "no"},
        agent("reviewer-1"),
    )
    report = await flow.call("patch.validate", {"proposal_id": pid})
    assert report["policy"]["approvals"] == 1 and report["policy"]["blockers"] == 1
