"""The principal decides identity, never the arguments.

An agent token is used the way a hostile agent would use it: voting as another agent or as a
nonexistent one, deciding as the operator, releasing another agent's claim, changing another
agent's task, retargeting another agent's approval, overwriting another agent's memory. Every
attempt goes over real HTTP through the official SDK client and must be refused with the state
(every table, events included) unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from roundtable.owner import Owner
from roundtable.services.governance.gates import current_votes
from roundtable.store.records import Proposal
from roundtable.tools.context import OPERATOR, Caller
from tests.auth.conftest import OTHER_PATCH, PATCH, client, events, snapshot
from tests.support.results import value_of

pytestmark = pytest.mark.anyio


async def setup_world(owner: Owner) -> dict[str, Any]:
    """Tasks, claims, two proposals, an approval and a memory entry, made by their rightful owners."""
    rt = owner.runtime
    impl1 = Caller("agent", "socket", agent_id="implementer-1")
    impl2 = Caller("agent", "socket", agent_id="implementer-2")
    t1 = (await rt.call("task.create", {"title": "one", "body_md": "b", "assigned_agent_id": "implementer-2"}))["task"]
    t2 = (await rt.call("task.create", {"title": "two", "body_md": "b"}))["task"]
    c1 = await rt.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": t1["id"], "path": "src/app.py"},
        impl1,
    )
    c2 = await rt.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": t1["id"], "path": "src/other.py"},
        impl2,
    )
    base = {"summary_md": "s", "affected_resources": [], "risk": "normal"}
    p1 = await rt.call("proposal.create", {**base, "task_id": t1["id"], "title": "p1", "patch": PATCH}, impl1)
    p2 = await rt.call("proposal.create", {**base, "task_id": t1["id"], "title": "p2", "patch": OTHER_PATCH}, impl2)
    approval = await rt.call(
        "human.request_approval",
        {"subject": "apply p2", "reason_md": "please", "proposal_id": p2["proposal"]["id"]},
        impl2,
    )
    memory = await rt.call(
        "memory.record", {"scope": "project", "kind": "finding", "title": "mine", "body_md": "by impl-2"}, impl2
    )
    return {
        "t1": t1["id"],
        "t2": t2["id"],
        "c1": c1["claim"]["id"],
        "c2": c2["claim"]["id"],
        "p1": p1["proposal"]["id"],
        "p2": p2["proposal"]["id"],
        "approval": approval["approval"]["id"],
        "memory": memory["entry"]["id"],
    }


async def test_forged_identities_are_refused_and_change_nothing(owner: Owner) -> None:
    w = await setup_world(owner)
    before = await snapshot(owner.runtime)
    attacks: list[tuple[str, dict[str, Any], str]] = [
        (
            "vote_cast",
            {"proposal_id": w["p1"], "agent_id": "architect-1", "vote": "approve", "reason_md": "x"},
            "argument agent_id names 'architect-1', but this connection acts as reviewer-1",
        ),
        (
            "vote_cast",
            {"proposal_id": w["p1"], "agent_id": "ghost-9", "vote": "approve", "reason_md": "x"},
            "acts as reviewer-1",
        ),
        (
            "decision_record",
            {"decision": "ship it", "rationale_md": "x", "decided_by": "operator"},
            "argument decided_by names 'operator'",
        ),
        (
            "human_request_approval",
            {"subject": "s", "reason_md": "r", "proposal_id": w["p1"], "status": "approved", "decided_by": "operator"},
            "argument decided_by names 'operator'",
        ),
        ("resource_release", {"claim_id": w["c2"]}, "belongs to implementer-2; reviewer-1 may not release it"),
        ("resource_release", {"claim_id": w["c2"], "actor_id": "implementer-2"}, "acts as reviewer-1"),
        (
            "task_update_status",
            {"task_id": w["t1"], "status": "done"},
            "assigned to implementer-2; only implementer-2 or the operator may change it",
        ),
        ("task_update_status", {"task_id": w["t1"], "assigned_agent_id": "reviewer-1"}, "assigned to implementer-2"),
        (
            "task_update_status",
            {"task_id": w["t2"], "assigned_agent_id": "implementer-2"},
            "may assign a task only to itself",
        ),
        ("task_update_status", {"task_id": w["t2"], "status": "done"}, "take it first"),
        ("task_create", {"task_id": w["t1"], "title": "mine now", "body_md": "x"}, "never replace one"),
        ("task_create", {"title": "for you", "body_md": "x", "assigned_agent_id": "implementer-2"}, "only to itself"),
        (
            "human_request_approval",
            {"subject": "s", "reason_md": "r", "approval_id": w["approval"], "proposal_id": w["p1"]},
            "requested by implementer-2; agents may only refresh their own requests",
        ),
        (
            "memory_record",
            {"memory_id": w["memory"], "scope": "project", "kind": "finding", "title": "overwritten", "body_md": "x"},
            "written by implementer-2; agents edit only their own entries",
        ),
        ("memory_mark_stale", {"memory_id": w["memory"], "reason_md": "mine now"}, "written by implementer-2"),
        ("proposal_attach_patch", {"proposal_id": w["p2"], "patch": OTHER_PATCH}, "you are reviewer-1"),
        ("patch_apply", {"proposal_id": w["p1"]}, "reserved for the operator"),
        ("proposal_request_review", {"proposal_id": w["p2"]}, "you are reviewer-1, not implementer-2"),
    ]
    async with client(owner, "reviewer-1") as c:
        for tool, args, message in attacks:
            out = await c.session.call_tool(tool, args)
            assert out.is_error, (tool, args, value_of(out))
            assert message in out.content[0].text, (tool, out.content[0].text)
    # The author may not vote on its own proposal, nor retarget its own request to another one.
    async with client(owner, "implementer-1") as c:
        own = await c.session.call_tool("vote_cast", {"proposal_id": w["p1"], "vote": "approve", "reason_md": "me"})
        assert own.is_error and "author" in own.content[0].text
        implementer = await c.session.call_tool(
            "vote_cast", {"proposal_id": w["p2"], "vote": "approve", "reason_md": "me"}
        )
        assert implementer.is_error and "whose votes the policy does not count" in implementer.content[0].text
    async with client(owner, "implementer-2") as c:
        moved = await c.session.call_tool(
            "human_request_approval",
            {"subject": "s", "reason_md": "r", "approval_id": w["approval"], "proposal_id": w["p1"]},
        )
        assert moved.is_error and "instead of retargeting" in moved.content[0].text
    assert await snapshot(owner.runtime) == before


async def test_the_principal_fills_identity_and_events_record_it(owner: Owner) -> None:
    w = await setup_world(owner)
    async with client(owner, "reviewer-1") as c:
        vote = await c.session.call_tool("vote_cast", {"proposal_id": w["p1"], "vote": "approve", "reason_md": "ok"})
        # What the agent said and who it is are not repeated to it: the vote's id is what it learns.
        assert vote.is_error is False and set(value_of(vote)["vote"]) == {"id"}
        decision = await c.session.call_tool("decision_record", {"decision": "d", "rationale_md": "r"})
        assert decision.is_error is False and "decided_by" not in value_of(decision)["decision"]
    async with client(owner, "implementer-2") as c:
        done = await c.session.call_tool("task_update_status", {"task_id": w["t1"], "status": "done"})
        assert done.is_error is False
        taken = await c.session.call_tool(
            "task_update_status", {"task_id": w["t2"], "status": "in_progress", "assigned_agent_id": "implementer-2"}
        )
        assert taken.is_error is False
        released = await c.session.call_tool("resource_release", {"claim_id": w["c2"]})
        assert value_of(released)["claim"]["status"] == "released"
    async with owner.runtime.db.read() as r:
        assert await r.scalar("SELECT agent_id FROM votes WHERE proposal_id = ?", (w["p1"],)) == "reviewer-1"
        assert await r.scalar("SELECT decided_by FROM decisions") == "reviewer-1"
        assert await r.scalar("SELECT assigned_agent_id FROM tasks WHERE id = ?", (w["t2"],)) == "implementer-2"
    [cast] = await events(owner.runtime, "vote.cast")
    assert (cast["actor_id"], cast["principal"], cast["transport"]) == ("reviewer-1", "agent:reviewer-1", "http")
    updates = await events(owner.runtime, "task.updated")
    assert [(e["actor_id"], e["principal"]) for e in updates] == [("implementer-2", "agent:implementer-2")] * 2
    [release] = await events(owner.runtime, "claim.released")
    assert (release["actor_id"], release["principal"]) == ("implementer-2", "agent:implementer-2")
    # The operator may act on behalf of a named agent; the event still says who really acted.
    await owner.runtime.call(
        "vote.cast",
        {"proposal_id": w["p2"], "agent_id": "architect-1", "vote": "approve", "reason_md": "for architect"},
        OPERATOR,
    )
    on_behalf = (await events(owner.runtime, "vote.cast"))[-1]
    assert (on_behalf["actor_id"], on_behalf["principal"], on_behalf["transport"]) == ("architect-1", "operator", "cli")


async def test_operator_cannot_count_a_vote_from_nobody(owner: Owner) -> None:
    w = await setup_world(owner)
    for who, message in (("ghost-9", "not a registered agent"), ("implementer-2", "does not count")):
        before = await snapshot(owner.runtime)
        with pytest.raises(Exception, match=message):
            await owner.runtime.call(
                "vote.cast", {"proposal_id": w["p1"], "agent_id": who, "vote": "approve", "reason_md": "x"}, OPERATOR
            )
        assert await snapshot(owner.runtime) == before


async def test_policy_counts_only_registered_reviewing_agents(owner: Owner) -> None:
    """Votes that reached the table anyway (an older version, a direct write) are not counted."""
    w = await setup_world(owner)
    rt = owner.runtime
    async with rt.db.write() as tx:
        proposal = await tx.get(Proposal, w["p1"])
        await tx.insert(
            "agents", {"id": "reviewer-9", "role": "Reviewer", "name": "r9", "adapter": "gemini", "is_enabled": 0}
        )
        for n, who in enumerate(
            ("ghost-9", "implementer-1", "implementer-2", "reviewer-9", "reviewer-1", "architect-1")
        ):
            await tx.insert(
                "votes",
                {
                    "id": f"V-forged-{n}",
                    "proposal_id": proposal.id,
                    "agent_id": who,
                    "vote": "approve",
                    "confidence": 1.0,
                    "reason_md": "x",
                    "revision": proposal.current_revision,
                    "created_at": f"2026-01-01T00:00:0{n}Z",
                },
            )
    async with rt.db.read() as r:
        counted = await current_votes(r, await r.get(Proposal, w["p1"]))
    assert sorted(v.agent_id for v in counted) == ["architect-1", "reviewer-1"]
    report = await rt.call("patch.validate", {"proposal_id": w["p1"]})
    assert report["policy"]["approvals"] == 2
    assert sorted(report["policy"]["approval_votes"]) == ["architect-1:approve", "reviewer-1:approve"]
