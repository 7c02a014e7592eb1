"""What an agent reads of a result leaves out what it said itself (`rendering.unechoed`), and
only that."""

from __future__ import annotations

import yaml

from roundtable.runtime import IDENTITY_ARGS
from roundtable.server.rendering import readable, unechoed


def test_an_agent_is_not_told_back_what_it_said() -> None:
    result = {
        "proposal": {"id": "P-1", "status": "in_review", "agent_id": "reviewer-1", "task_id": "T-1"},
        "since_revision": 1,
        "vote": {"id": "V-1", "agent_id": "reviewer-1", "vote": "approve"},
    }
    args = {"proposal_id": "P-1", "since_revision": 1, "vote": "approve"}
    seen = unechoed(result, args, "reviewer-1", IDENTITY_ARGS)
    # The record it named loses its id, the arguments it sent and its own identity; what it did
    # not say (a new vote's id, the task, where it stands) stays.
    assert seen == {"proposal": {"status": "in_review", "task_id": "T-1"}, "vote": {"id": "V-1"}}
    assert yaml.safe_load(readable(seen)) == seen


def test_rows_lose_only_what_the_caller_filtered_by() -> None:
    claims = [
        {"id": "C-1", "resource_id": "file:a", "claim_type": "review", "agent_id": "reviewer-1"},
        {"id": "C-2", "resource_id": "file:b", "claim_type": "write", "agent_id": "implementer-1"},
    ]
    seen = unechoed({"claims": claims}, {"claim_type": "review"}, "reviewer-1", IDENTITY_ARGS)
    # In a list the caller's own id tells its rows from others': it stays.
    assert seen["claims"] == [
        {"id": "C-1", "resource_id": "file:a", "agent_id": "reviewer-1"},
        {"id": "C-2", "resource_id": "file:b", "claim_type": "write", "agent_id": "implementer-1"},
    ]


def test_what_the_server_changed_is_said_back() -> None:
    # A normalised value, a flag against a number and an empty argument are not echoes.
    result = {"vote": {"vote": "approve", "current": True}, "revision": 1, "path": "a.txt"}
    args = {"vote": "APPROVE", "current": 1, "revision": True, "path": ""}
    assert unechoed(result, args, "", IDENTITY_ARGS) == result
