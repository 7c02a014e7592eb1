"""Votes.

A vote is cast on the proposal's current revision and records it. The vocabulary is fixed
(`approve`, `approve_with_notes`, `revise`, `reject`, `veto`, `abstain`; case-insensitive on
input, stored lower-case). One current vote per agent per revision: a new vote replaces the
agent's earlier vote on that revision (the replaced vote survives only in the event log). The
author of a proposal cannot vote on it, and votes are accepted only while it is open.

Only agents the policy counts may vote: a registered, enabled agent whose role is
a reviewing role (`VOTING_ROLES`: Reviewer, Architect, Tester, Security — the roles consensus
profiles name). A vote naming an unknown agent (`ghost-9`), a disabled one, or an implementer is
refused whoever sends it, and the gates count only such agents' votes (`gates.current_votes`).
Which agent votes is the caller's principal: `Runtime.call` binds `agent_id` to it. A vote's
event goes to the proposal's run (`services.run_scope`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import Field

from roundtable import clock
from roundtable.domain import EventType
from roundtable.errors import PermissionDenied, ToolError
from roundtable.services.args import Args, Detail, Fraction, Id, NewId, Text, VoteWord, identity
from roundtable.services.governance.gates import OPEN_STATUSES, VOTING_ROLES
from roundtable.services.governance.proposals import load
from roundtable.services.run_scope import NO_HINT, RunHint, resolve
from roundtable.store import rows
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Vote


async def check_voter(q: Reader | Tx, agent_id: str) -> None:
    """Refuse a voter that is not a registered, enabled agent with a voting role."""
    row = await q.fetchone("SELECT role, is_enabled FROM agents WHERE id = ?", (agent_id,))
    if row is None:
        raise PermissionDenied(f"{agent_id} is not a registered agent; only registered reviewers may vote")
    if not row["is_enabled"]:
        raise PermissionDenied(f"agent {agent_id} is disabled and cannot vote")
    if str(row["role"]).lower() not in VOTING_ROLES:
        raise PermissionDenied(
            f"agent {agent_id} has role {row['role']}, whose votes the policy does not count "
            f"(voting roles: {', '.join(r.title() for r in VOTING_ROLES)})"
        )


class VoteArgs(Args):
    # `vote.cast`: the vote (a word of the vocabulary, read case-insensitively) and its reason.
    proposal_id: Id
    agent_id: Id = Field(
        "", description="The voter (default: the agent your credential names; agents may not name another)."
    )
    vote: VoteWord
    reason_md: Text
    confidence: Fraction = Field(0.0, description="0 to 1.")
    vote_id: NewId = ""


class VoteListArgs(Args):
    # `vote.list`.
    proposal_id: Id
    detail: Detail = False


async def cast(
    tx: Tx, args: VoteArgs, *, session_id: str = "", policy_version: str = "", runs: RunHint = NO_HINT
) -> Vote:
    """`vote.cast` on the proposal's current revision, replacing the voter's earlier vote on it.
    `policy_version`: the policy the voter was shown."""
    proposal_id, value, confidence = args.proposal_id, args.vote.value, args.confidence
    agent_id = identity(args.agent_id, "agent_id", "vote.cast")
    vote_id = args.vote_id or clock.new_id("V")
    p = await load(tx, proposal_id)
    if p.status not in OPEN_STATUSES:
        raise ToolError(f"proposal {proposal_id} is {p.status}; votes are accepted only while pending or in_review")
    if not p.current_revision:
        raise ToolError(f"proposal {proposal_id} has no patch revision to vote on")
    if agent_id == p.agent_id:
        raise ToolError(f"{agent_id} is the author of proposal {proposal_id} and cannot vote on it")
    await check_voter(tx, agent_id)
    replaced = [
        str(row[0])
        for row in await tx.fetchall(
            "SELECT id FROM votes WHERE proposal_id = ? AND agent_id = ? AND revision = ?",
            (proposal_id, agent_id, p.current_revision),
        )
    ]
    if replaced:
        await tx.execute(
            "DELETE FROM votes WHERE proposal_id = ? AND agent_id = ? AND revision = ?",
            (proposal_id, agent_id, p.current_revision),
        )
    if await tx.scalar("SELECT 1 FROM votes WHERE id = ?", (vote_id,)):
        raise ToolError(f"vote {vote_id} already exists")
    now = clock.now()
    await tx.insert(
        "votes",
        {
            "id": vote_id,
            "proposal_id": proposal_id,
            "agent_id": agent_id,
            "vote": value,
            "confidence": confidence,
            "reason_md": args.reason_md,
            "revision": p.current_revision,
            "session_id": session_id or None,
            "policy_version": policy_version or None,
            "created_at": now,
        },
    )
    await tx.append_event(
        await resolve(tx, runs, owner=p.run_id),
        EventType.VOTE_CAST,
        {
            "proposal_id": proposal_id,
            "vote_id": vote_id,
            "vote": value,
            "revision": p.current_revision,
            "revision_number": p.revision_number,
            "replaced": replaced,
        },
        actor_id=agent_id,
        task_id=p.task_id,
    )
    row = await tx.one(Vote, "SELECT * FROM votes WHERE id = ?", (vote_id,))
    assert row is not None
    return row


async def listing(q: Reader | Tx, proposal_id: str) -> list[dict[str, Any]]:
    """All votes on a proposal, oldest first; `current` says whether a vote counts (it was cast
    on the current revision)."""
    return await q.run(listing_on, proposal_id)


def listing_on(conn: sqlite3.Connection, proposal_id: str) -> list[dict[str, Any]]:
    """`listing` on the connection's own thread."""
    current = rows.scalar(conn, "SELECT current_revision FROM proposals WHERE id = ?", (proposal_id,))
    votes = rows.records(
        conn, Vote, "SELECT * FROM votes WHERE proposal_id = ? ORDER BY created_at, id", (proposal_id,)
    )
    return [{**v.to_dict(), "current": bool(current) and v.revision == current} for v in votes]
