"""Apply refuses when any gate fails — one test per gate — and leaves files and database as
they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable import clock
from roundtable.errors import ToolError
from tests.governance.conftest import AUTHOR, Flow, agent, make_patch

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")


def new_file_patch(path: str, line: str = "x = 1") -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{line}\n"


async def refused(flow: Flow, pid: str, match: str, repo: Path) -> None:
    before = (repo / "src" / "app.py").read_text()
    async with flow.rt.db.read() as r:
        count = await r.scalar("SELECT count(*) FROM transactions")
    with pytest.raises(ToolError, match=match):
        await flow.call("patch.apply", {"proposal_id": pid})
    assert (repo / "src" / "app.py").read_text() == before
    async with flow.rt.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM transactions") == count
        assert await r.scalar("SELECT status FROM proposals WHERE id = ?", (pid,)) in (
            "pending",
            "in_review",
            "rejected",
        )


async def test_all_gates_met_applies(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"


async def test_status_gate_rejected(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    out = await flow.call("patch.reject", {"proposal_id": proposal["id"], "reason_md": "no"})
    assert out["proposal"]["status"] == "rejected" and out["decision"]["decision"] == "rejected"
    await refused(flow, proposal["id"], "rejected", repo)
    with pytest.raises(ToolError, match="only pending or in_review"):
        await flow.call("patch.reject", {"proposal_id": proposal["id"], "reason_md": "again"})


async def test_claims_gate_released(flow: Flow, repo: Path) -> None:
    await flow.task()
    claim = await flow.claim("src/app.py")
    proposal = await flow.propose(PATCH)
    await flow.approve_votes(proposal["id"])
    await flow.test_run(proposal["id"])
    await flow.call("resource.release", {"claim_id": claim["claim"]["id"]}, agent(AUTHOR))
    await refused(flow, proposal["id"], "claims: unclaimed affected resource: file:src/app.py", repo)


async def test_claims_gate_fence_changed(flow: Flow, repo: Path) -> None:
    await flow.task()
    claim = await flow.claim("src/app.py")
    proposal = await flow.propose(PATCH)
    await flow.approve_votes(proposal["id"])
    await flow.test_run(proposal["id"])
    await flow.call("resource.release", {"claim_id": claim["claim"]["id"]}, agent(AUTHOR))
    await flow.claim("src/app.py")  # a new grant, a new fence
    await refused(flow, proposal["id"], "claims changed since revision 1", repo)


async def test_dry_run_gate(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    (repo / "src" / "app.py").write_text("print('edited elsewhere')\n")
    with pytest.raises(ToolError, match="dry_run"):
        await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    assert (repo / "src" / "app.py").read_text() == "print('edited elsewhere')\n"


async def test_policy_gate_insufficient_votes(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    proposal = await flow.propose(PATCH)
    await flow.call(
        "vote.cast",
        {"proposal_id": proposal["id"], "agent_id": "reviewer-1", "vote": "approve", "reason_md": "ok"},
        agent("reviewer-1"),
    )
    await flow.test_run(proposal["id"])
    await refused(flow, proposal["id"], "insufficient approvals: need 2", repo)


async def test_policy_gate_blocking_vote(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    await flow.call(
        "vote.cast",
        {"proposal_id": proposal["id"], "agent_id": "reviewer-3", "vote": "reject", "reason_md": "no"},
        agent("reviewer-3"),
    )
    await refused(flow, proposal["id"], "blocking votes present", repo)


async def test_human_approval_gate_high_risk(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH, risk="high")
    await flow.security(proposal["id"])
    await refused(flow, proposal["id"], "human approval required for high-risk proposal", repo)
    await flow.approve_human(proposal["id"])
    await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"


async def test_approval_for_old_revision_does_not_count(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH, risk="high")
    await flow.approve_human(proposal["id"])
    patch2 = make_patch("src/app.py", "print('v1')", "print('v3')")
    await flow.call("proposal.attach_patch", {"proposal_id": proposal["id"], "patch": patch2}, agent(AUTHOR))
    await flow.approve_votes(proposal["id"])
    await flow.test_run(proposal["id"])
    await flow.security(proposal["id"])
    await refused(flow, proposal["id"], "human approval required", repo)


async def test_security_gate_high_risk_path(flow: Flow, repo: Path) -> None:
    await flow.task()
    proposal = await flow.ready(new_file_patch("auth/login.py"), path="auth/login.py")
    await flow.approve_human(proposal["id"])
    await refused(flow, proposal["id"], "security review required", repo)
    await flow.call("security.review", {"proposal_id": proposal["id"], "status": "needs_changes", "summary_md": "fix"})
    await refused(flow, proposal["id"], "security review required", repo)
    await flow.security(proposal["id"])  # the automatic scan: clean
    await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    assert (repo / "auth" / "login.py").read_text() == "x = 1\n"


async def test_tests_gate_failed_run(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    proposal = await flow.propose(PATCH)
    await flow.approve_votes(proposal["id"])
    await refused(flow, proposal["id"], "no test run of the current revision", repo)
    await flow.test_run(proposal["id"], "git definitely-not-a-subcommand")
    await refused(flow, proposal["id"], "tests required: latest test run", repo)


async def test_tests_gate_ignores_reported_evidence(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    proposal = await flow.propose(PATCH)
    await flow.approve_votes(proposal["id"])
    async with flow.rt.db.write() as tx:
        await tx.insert(
            "test_runs",
            {
                "id": "TR-reported",
                "proposal_id": proposal["id"],
                "command": "pytest",
                "status": "reported",
                "outcome": "passed",
                "revision": proposal["current_revision"],
                "created_at": clock.now(),
            },
        )
    await refused(flow, proposal["id"], "tests required", repo)


async def test_tests_gate_expected_commands(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH, expected_tests=["printf ok", "printf  'two'"])
    await refused(flow, proposal["id"], "expected test not run on the current revision: printf two", repo)
    await flow.test_run(proposal["id"], "printf two")
    await flow.call("patch.apply", {"proposal_id": proposal["id"]})


async def test_rollback_plan_gate_migration(flow: Flow, repo: Path) -> None:
    await flow.task()
    proposal = await flow.ready(new_file_patch("migrations/001.sql", "select 1;"), path="migrations/001.sql")
    await flow.security(proposal["id"])
    await flow.approve_human(proposal["id"])
    await refused(flow, proposal["id"], "rollback notes required", repo)


async def test_stale_revision_argument(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    with pytest.raises(ToolError, match="stale revision"):
        await flow.call("patch.apply", {"proposal_id": proposal["id"], "revision": "0" * 64})
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"


async def test_agents_cannot_apply_reject_or_rollback(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    for tool, args in (
        ("patch.apply", {"proposal_id": proposal["id"]}),
        ("patch.reject", {"proposal_id": proposal["id"], "reason_md": "x"}),
        ("patch.rollback", {"transaction_id": "TX-1"}),
    ):
        with pytest.raises(ToolError, match="reserved for the operator"):
            await flow.call(tool, args, agent("reviewer-1"))
