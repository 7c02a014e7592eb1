"""The operator's approval is a gate: a denial of the current revision blocks `patch.apply` from
every transport until a later approval; with no decision and a policy that asks for none, an
apply records the operator's implicit approval; an apply, a rejection or a new revision closes
the requests it makes moot."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from roundtable.errors import ToolError
from roundtable.owner import Owner
from roundtable.tools.context import OPERATOR
from tests.governance.conftest import AUTHOR, Flow, agent, make_patch
from tests.helpers import auth_headers, sdk_http

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")
PATCH_2 = make_patch("src/app.py", "print('v1')", "print('v3')")
ROUNDTABLE = [sys.executable, "-m", "roundtable"]


async def request(flow: Flow, proposal_id: str) -> str:
    out = await flow.call(
        "human.request_approval", {"subject": "apply", "reason_md": "please", "proposal_id": proposal_id}, agent(AUTHOR)
    )
    return str(out["approval"]["id"])


async def decide(flow: Flow, approval_id: str, proposal_id: str, status: str, note: str = "") -> dict[str, Any]:
    args = {
        "approval_id": approval_id,
        "subject": "apply",
        "reason_md": "please",
        "proposal_id": proposal_id,
        "status": status,
    }
    if note:
        args["decision_md"] = note
    return (await flow.call("human.request_approval", args))["approval"]  # type: ignore[no-any-return]


async def approval_rows(flow: Flow, proposal_id: str) -> list[dict[str, Any]]:
    async with flow.rt.db.read() as r:
        rows = await r.fetchall(
            "SELECT * FROM human_approvals WHERE proposal_id = ? ORDER BY created_at, id", (proposal_id,)
        )
    return [dict(row) for row in rows]


async def states(flow: Flow, proposal_id: str) -> tuple[str, str, str]:
    """The proposal's recorded vote, policy and approval states (the Inspector shows them)."""
    async with flow.rt.db.read() as r:
        row = await r.fetchone(
            "SELECT vote_state, policy_state, approval_state FROM proposals WHERE id = ?", (proposal_id,)
        )
    assert row is not None
    return (str(row[0]), str(row[1]), str(row[2]))


def gate(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in report["gates"] if g["name"] == name)


async def test_a_denial_blocks_the_apply_until_a_later_approval(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    approval_id = await request(flow, pid)
    await decide(flow, approval_id, pid, "denied", "not like this")

    report = await flow.call("patch.validate", {"proposal_id": pid})
    assert report["applicable"] is False
    assert gate(report, "approval")["passed"] is False
    assert "you denied revision 1" in gate(report, "approval")["reason"]
    assert "not like this" in gate(report, "approval")["reason"]
    with pytest.raises(ToolError, match="proposal not approvable: you denied revision 1"):
        await flow.call("patch.apply", {"proposal_id": pid})
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"

    await decide(flow, approval_id, pid, "approved")
    out = await flow.call("patch.apply", {"proposal_id": pid})
    assert out["transaction"]["status"] == "applied"
    assert out["human_approval"]["id"] == approval_id
    assert await states(flow, pid) == ("approved", "passed", "approved")  # the final states, not "pending"


async def test_no_approval_required_is_said_and_the_apply_records_it(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    report = await flow.call("patch.validate", {"proposal_id": pid})
    reason = gate(report, "approval")["reason"]
    assert gate(report, "approval")["passed"] is True
    assert "no approval required by the policy; applying records your approval of revision 1" == reason

    out = await flow.call("patch.apply", {"proposal_id": pid})
    implicit = out["human_approval"]
    assert implicit["status"] == "approved"
    assert implicit["decided_by"] == "operator"
    assert implicit["revision"] == proposal["current_revision"]
    assert implicit["decision_md"].startswith("approved by applying revision 1 (TX-")
    assert await states(flow, pid) == ("approved", "passed", "implicit")


async def test_an_apply_decides_the_open_request_and_closes_the_rest(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    first = await request(flow, pid)
    second = await flow.call(
        "human.request_approval",
        {"subject": "again", "reason_md": "please", "proposal_id": pid},
        agent("reviewer-1"),
    )
    out = await flow.call("patch.apply", {"proposal_id": pid})
    rows = {r["id"]: r for r in await approval_rows(flow, pid)}
    assert len(rows) == 2  # the latest open request was decided, not a new record made
    decided = rows[second["approval"]["id"]]
    assert decided["status"] == "approved" and out["human_approval"]["id"] == decided["id"]
    assert rows[first]["status"] == "closed"
    assert rows[first]["decision_md"] == f"proposal applied in {out['transaction']['id']}"
    state = await flow.call("table.get_state", {})
    assert all(a["status"] != "requested" for a in state.get("human_approvals", [])), state.get("human_approvals")


async def test_a_rejection_and_a_new_revision_close_the_requests_they_make_moot(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    old = await request(flow, pid)
    await flow.call("proposal.attach_patch", {"proposal_id": pid, "patch": PATCH_2}, agent(AUTHOR))
    rows = {r["id"]: r for r in await approval_rows(flow, pid)}
    assert rows[old]["status"] == "closed" and rows[old]["decision_md"] == "superseded by revision 2"
    new = await request(flow, pid)
    await flow.call("patch.reject", {"proposal_id": pid, "reason_md": "no"})
    rows = {r["id"]: r for r in await approval_rows(flow, pid)}
    assert rows[new]["status"] == "closed" and rows[new]["decision_md"].startswith("proposal rejected (D-")
    # A closed request is no decision: it cannot be refreshed by its agent, and an apply of the
    # next revision is not blocked by it.
    with pytest.raises(ToolError, match="already decided"):
        await flow.call(
            "human.request_approval",
            {"approval_id": new, "subject": "s", "reason_md": "r", "proposal_id": pid},
            agent(AUTHOR),
        )


async def test_a_denial_of_an_older_revision_does_not_block_the_new_one(flow: Flow) -> None:
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    await decide(flow, await request(flow, pid), pid, "denied")
    await flow.call("proposal.attach_patch", {"proposal_id": pid, "patch": PATCH_2}, agent(AUTHOR))
    await flow.approve_votes(pid)
    await flow.test_run(pid)
    report = await flow.call("patch.validate", {"proposal_id": pid})
    assert gate(report, "approval")["passed"] is True, report["gates"]


# --- every transport refuses the apply of a denied revision ------------------------------------


@pytest.fixture
async def owner(repo: Path) -> AsyncIterator[Owner]:
    sockdir = Path(tempfile.mkdtemp(prefix="rta", dir="/tmp"))
    try:
        async with Owner(repo, http_address="127.0.0.1:0", socket_path=sockdir / "rt.sock", chair=False) as o:
            yield o
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


async def test_a_denied_revision_is_refused_over_mcp_and_the_cli(owner: Owner, repo: Path) -> None:
    from roundtable.services.coordination.agents import sync_agents

    await sync_agents(owner.runtime)
    flow = Flow(owner.runtime)
    proposal = await flow.ready(PATCH)
    pid = proposal["id"]
    approval_id = await request(flow, pid)
    await decide(flow, approval_id, pid, "denied", "wrong approach")

    headers = await auth_headers(owner.runtime, operator=True)
    async with Client(sdk_http(owner.http_url, headers), mode="legacy") as c:
        out = await c.session.call_tool("patch_apply", {"proposal_id": pid})
        assert out.is_error
        assert "you denied revision 1" in out.content[0].text

    proc = await asyncio.create_subprocess_exec(
        *ROUNDTABLE,
        "mcp",
        "call",
        "--root",
        str(repo),
        "--tool",
        "patch.apply",
        "--args",
        json.dumps({"proposal_id": pid}),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await proc.communicate()
    assert proc.returncode == 1, (stdout, stderr)
    assert b"you denied revision 1" in stderr, stderr
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"

    await decide(flow, approval_id, pid, "approved")
    out2 = await owner.runtime.call("patch.apply", {"proposal_id": pid}, OPERATOR)
    assert out2["transaction"]["status"] == "applied"
