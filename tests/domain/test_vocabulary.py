"""One vocabulary: the predicates in `roundtable.domain`, and the layers that must agree with
them (the policy engine's vote lists, the console's vote counts and turn events)."""

from __future__ import annotations

import pytest

from roundtable import domain
from roundtable.domain import TURN_DONE_EVENTS as TURN_DONE_TYPES
from roundtable.runtime import Runtime
from roundtable.services.policy import engine as policy
from roundtable.services.views.overview import load_proposals
from tests.tui.seed import REVISION, seed

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("vote", "approving", "blocking"),
    [
        ("approve", True, False),
        ("approve_with_notes", True, False),
        ("APPROVE_WITH_NOTES ", True, False),
        ("revise", False, True),
        ("reject", False, True),
        ("veto", False, True),
        ("abstain", False, False),
        ("lgtm", False, False),  # not in the vocabulary: counts for nothing
    ],
)
def test_vote_predicates(vote: str, approving: bool, blocking: bool) -> None:
    assert domain.approving(vote) is approving
    assert domain.blocking(vote) is blocking


def test_the_policy_engine_counts_votes_with_the_same_vocabulary() -> None:
    assert set(policy.APPROVING_VOTES) == domain.APPROVING_VOTES
    assert set(policy.VOTE_VOCABULARY) == {v.value for v in domain.Vote}


def test_turn_done_events_are_event_types_not_tool_names() -> None:
    assert set(TURN_DONE_TYPES) == {"agent.turn_completed", "agent.turn_expired"}
    assert all(t in domain.TURN_EVENTS for t in TURN_DONE_TYPES)


async def test_proposals_pane_counts_notes_and_revise(runtime: Runtime) -> None:
    await seed(runtime)
    async with runtime.db.write(tool="test.votes") as tx:
        await tx.execute("DELETE FROM votes WHERE proposal_id = 'P-1'")
        for i, vote in enumerate(("approve_with_notes", "revise", "approve", "abstain")):
            await tx.insert(
                "votes",
                {
                    "id": f"V-x{i}",
                    "proposal_id": "P-1",
                    "agent_id": f"reviewer-{i + 1}",
                    "vote": vote,
                    "revision": REVISION,
                },
            )
    async with runtime.db.read() as reader:
        rows = {row.proposal.id: row for row in await load_proposals(reader)}
    assert (rows["P-1"].votes_for, rows["P-1"].votes_against) == (2, 1)
