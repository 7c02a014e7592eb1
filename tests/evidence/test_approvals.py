"""human.request_approval / human.approval_status: agents request, only the operator decides,
every approval binds to the proposal revision it concerns."""

from __future__ import annotations

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.governance.approvals import select_approval
from roundtable.store.records import HumanApproval
from roundtable.tools.context import CHAIR, DISPATCHER, OPERATOR, SUPERVISOR, Caller

from .conftest import AGENT, ANONYMOUS_AGENT, AUTHOR, add_lines_patch, count, events, make_proposal

pytestmark = pytest.mark.anyio

REQUEST = {"subject": "Apply P", "reason_md": "touches auth"}


async def _proposal(rt: Runtime) -> str:
    return await make_proposal(rt, add_lines_patch("app.py", ["# one"]))


async def _revision(rt: Runtime, proposal_id: str) -> str:
    async with rt.db.read() as r:
        return str(await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (proposal_id,)))


async def test_agent_request_is_bound_to_revision_and_caller(rt: Runtime) -> None:
    pid = await _proposal(rt)
    out = await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid}, AGENT)
    approval = out["approval"]
    assert approval["id"].startswith("H-")
    assert approval["status"] == "requested"
    assert approval["requested_by"] == "reviewer-1"
    assert approval["task_id"] == "T-1"
    assert approval["revision"] == await _revision(rt, pid)
    assert approval["decided_by"] == "" and approval["override_policy"] is False
    [event] = await events(rt, "approval.requested")
    assert event["payload"]["approval_id"] == approval["id"]
    assert event["actor_id"] == "reviewer-1"


@pytest.mark.parametrize(
    "extra",
    [
        {"status": "approved"},
        {"status": "denied"},
        {"decided_by": "operator"},
        {"decision_md": "ok by me"},
        {"override_policy": True},
    ],
)
async def test_agent_cannot_decide(rt: Runtime, extra: dict[str, object]) -> None:
    pid = await _proposal(rt)
    # `decided_by: operator` from an agent is refused as an identity mismatch before anything else.
    with pytest.raises(ToolError, match=r"only the operator can decide a human approval|acts as reviewer-1"):
        await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid, **extra}, AGENT)
    assert await count(rt, "human_approvals") == 0
    assert await events(rt, "approval.decided") == []


async def test_agent_cannot_decide_an_existing_request(rt: Runtime) -> None:
    pid = await _proposal(rt)
    approval = (await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid}, AGENT))["approval"]
    with pytest.raises(ToolError, match="only the operator"):
        await rt.call("human.request_approval", {**REQUEST, "approval_id": approval["id"], "status": "approved"}, AGENT)
    status = await rt.call("human.approval_status", {"approval_id": approval["id"]}, AGENT)
    assert status["approval"]["status"] == "requested"


async def test_agent_cannot_assert_another_requester(rt: Runtime) -> None:
    with pytest.raises(ToolError, match="argument requested_by names 'operator', but this connection acts as"):
        await rt.call("human.request_approval", {**REQUEST, "requested_by": "operator"}, AGENT)
    # A caller without an identity (an unbound credential) may not request anything at all.
    with pytest.raises(ToolError, match="this connection is anonymous"):
        await rt.call("human.request_approval", {**REQUEST, "requested_by": "reviewer-1"}, ANONYMOUS_AGENT)
    assert await count(rt, "human_approvals") == 0


async def test_operator_decides_and_decider_is_the_operator(rt: Runtime) -> None:
    pid = await _proposal(rt)
    requested = (await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid}, AGENT))["approval"]
    out = await rt.call(
        "human.request_approval",
        {**REQUEST, "approval_id": requested["id"], "status": "approved", "decision_md": "fine"},
        OPERATOR,
    )
    approval = out["approval"]
    assert approval["status"] == "approved"
    assert approval["decided_by"] == "operator"
    assert approval["decision_md"] == "fine"
    assert approval["requested_by"] == "reviewer-1"  # kept from the request
    assert approval["proposal_id"] == pid  # kept: the update did not repeat it
    assert approval["created_at"] == requested["created_at"]
    assert approval["revision"] == await _revision(rt, pid)
    [event] = await events(rt, "approval.decided")
    assert event["payload"]["status"] == "approved" and event["payload"]["decided_by"] == "operator"

    # Now decided: the agent can no longer refresh (and so reset) it.
    with pytest.raises(ToolError, match="already decided"):
        await rt.call("human.request_approval", {**REQUEST, "approval_id": requested["id"]}, AGENT)
    # An operator edit without a status keeps the decision.
    edited = await rt.call(
        "human.request_approval", {**REQUEST, "approval_id": requested["id"], "decision_md": "still fine"}, OPERATOR
    )
    assert edited["approval"]["status"] == "approved"
    assert edited["approval"]["decision_md"] == "still fine"


async def test_agent_refreshes_only_its_own_pending_request(rt: Runtime) -> None:
    mine = (await rt.call("human.request_approval", REQUEST, AGENT))["approval"]
    refreshed = await rt.call(
        "human.request_approval", {"subject": "Apply P (v2)", "reason_md": "again", "approval_id": mine["id"]}, AGENT
    )
    assert refreshed["approval"]["subject"] == "Apply P (v2)"
    other = Caller("agent", "http", agent_id="reviewer-2")
    with pytest.raises(ToolError, match="agents may only refresh their own requests"):
        await rt.call("human.request_approval", {**REQUEST, "approval_id": mine["id"]}, other)


async def test_nobody_records_a_decision_in_the_authors_name(rt: Runtime) -> None:
    pid = await _proposal(rt)
    with pytest.raises(ToolError, match="an agent cannot approve its own work"):
        await rt.call(
            "human.request_approval",
            {**REQUEST, "proposal_id": pid, "status": "approved", "decided_by": AUTHOR},
            OPERATOR,
        )
    assert await count(rt, "human_approvals") == 0


async def test_chair_cannot_decide(rt: Runtime) -> None:
    with pytest.raises(ToolError, match="not the Chair"):
        await rt.call("human.request_approval", {**REQUEST, "status": "approved"}, CHAIR)


@pytest.mark.parametrize("component", [SUPERVISOR, DISPATCHER])
async def test_no_owner_component_can_decide(rt: Runtime, component: Caller) -> None:
    """The autopilot may ask for the operator's approval, never give it."""
    with pytest.raises(ToolError, match=f"not the {component.transport}"):
        await rt.call("human.request_approval", {**REQUEST, "status": "approved"}, component)
    assert await count(rt, "human_approvals") == 0
    asked = await rt.call("human.request_approval", REQUEST, DISPATCHER)
    assert asked["approval"]["status"] == "requested" and asked["approval"]["requested_by"] == "dispatcher"


async def test_bad_input_is_refused(rt: Runtime) -> None:
    with pytest.raises(ToolError, match="get proposal P-nope: not found"):
        await rt.call("human.request_approval", {**REQUEST, "proposal_id": "P-nope"}, AGENT)
    with pytest.raises(ToolError, match="override_policy can only be set together with status approved"):
        await rt.call("human.request_approval", {**REQUEST, "status": "denied", "override_policy": True}, OPERATOR)
    with pytest.raises(ToolError, match="argument status must be one of"):
        await rt.call("human.request_approval", {**REQUEST, "status": "APPROVED"}, OPERATOR)
    with pytest.raises(ToolError, match="approval_id must be"):
        await rt.call("human.request_approval", {**REQUEST, "approval_id": "../x"}, OPERATOR)
    with pytest.raises(ToolError, match="argument subject must not be empty"):
        await rt.call("human.request_approval", {"subject": " ", "reason_md": "x"}, OPERATOR)
    assert await count(rt, "human_approvals") == 0
    with pytest.raises(ToolError, match="get human approval H-nope: not found"):
        await rt.call("human.approval_status", {"approval_id": "H-nope"}, AGENT)


async def test_new_revision_leaves_the_old_approval_behind(rt: Runtime) -> None:
    pid = await _proposal(rt)
    first_rev = await _revision(rt, pid)
    approved = (
        await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid, "status": "approved"}, OPERATOR)
    )["approval"]
    assert approved["revision"] == first_rev
    await make_proposal(rt, add_lines_patch("app.py", ["# two"]), proposal_id=pid)
    second_rev = await _revision(rt, pid)
    assert second_rev != first_rev
    record = HumanApproval.from_row(approved)
    assert select_approval([record], revision=first_rev, needs_human=True, blockers=0, vetoes=0) == record
    assert select_approval([record], revision=second_rev, needs_human=True, blockers=0, vetoes=0) is None
    # Vetoes need an override; revise/reject votes cannot be overridden.
    assert select_approval([record], revision=first_rev, needs_human=True, blockers=1, vetoes=1) is None
    assert select_approval([record], revision=first_rev, needs_human=True, blockers=2, vetoes=1) is None


async def test_later_denial_withdraws_an_approval(rt: Runtime) -> None:
    pid = await _proposal(rt)
    rev = await _revision(rt, pid)
    await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid, "status": "approved"}, OPERATOR)
    await rt.call("human.request_approval", {**REQUEST, "proposal_id": pid, "status": "denied"}, OPERATOR)
    async with rt.db.read() as r:
        rows = await r.all(HumanApproval, "SELECT * FROM human_approvals ORDER BY created_at, id")
    assert [a.status for a in rows] == ["approved", "denied"]
    assert select_approval(rows, revision=rev, needs_human=True, blockers=0, vetoes=0) is None
