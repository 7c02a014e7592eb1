"""What an agent reads of a result leaves out what it said itself (`rendering.unechoed`) and
what says nothing (`rendering.unempty`: null, empty, the default), and only that; the views of
the tools whose results it reads most (`tools.views`) say each thing once."""

from __future__ import annotations

import json
from typing import Any

import yaml

from roundtable.runtime import IDENTITY_ARGS
from roundtable.server.mcp_adapter import tool_result
from roundtable.server.rendering import readable, unechoed, unempty
from roundtable.tools.registry import ToolSpec, get_registry


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


# --- what says nothing: null, empty, the default ---------------------------------------------------


def _spec(name: str) -> ToolSpec:
    spec = get_registry().lookup(name)
    assert spec is not None
    return spec


def agent_text(tool: str, result: dict[str, Any], args: dict[str, Any], agent_id: str = "reviewer-1") -> str:
    """The text an agent's model reads of `result` (the one block before any text field)."""
    out = tool_result(_spec(tool), result, structured=False, args=args, agent_id=agent_id)
    assert out.structured_content is None
    text = out.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


def test_nothing_is_said_by_null_empty_or_default_fields_at_any_depth() -> None:
    result = {
        "task": {"id": "T-1", "title": "t", "priority": 100, "risk": "normal", "assigned_agent_id": None},
        "votes": [{"agent_id": "a", "vote": "approve", "current": True, "notes": ""}],
        "claimed": [],
        "meta": {},
    }
    seen = unempty(result)
    assert seen == {"task": {"id": "T-1", "title": "t"}, "votes": [{"agent_id": "a", "vote": "approve"}]}
    # What differs from the default is said; a flag is no number.
    odd = {"task": {"priority": 5, "risk": "high"}, "votes": [{"current": False}], "n": {"priority": True}}
    assert unempty(odd) == odd
    # An answer that is all empty is the answer ("no votes"), and stays.
    assert unempty({"votes": []}) == {"votes": []}
    assert yaml.safe_load(readable(seen)) == seen


def test_an_operator_still_gets_the_whole_result() -> None:
    result = {"votes": [{"agent_id": "a", "vote": "approve", "current": True, "reason_md": ""}], "x": []}
    out = tool_result(_spec("vote.list"), result, structured=True, args={"proposal_id": "P-1"})
    assert out.structured_content == result
    assert json.loads(out.content[0].text) == result  # type: ignore[union-attr]


CLAIMS = [
    {"id": f"C-{n}", "resource_id": f"file:{p}", "claim_type": "review", "task_id": "T-1", "expires_at": "2026-12-03Z"}
    for n, p in enumerate(["a.py", "b.py"], 1)
]


def test_claims_of_the_paths_sent_are_their_ids_and_one_expiry() -> None:
    args = {"resource_type": "file", "claim_type": "review", "task_id": "T-1", "paths": ["a.py", "b.py"]}
    text = agent_text("resource.claim", {"claims": CLAIMS}, args)
    assert text == "claims:\n- C-1\n- C-2\nexpires_at: 2026-12-03Z\n"
    # Paths in another order than the claims, or expiries that differ: each claim says its own.
    other = agent_text("resource.claim", {"claims": CLAIMS}, {**args, "paths": ["b.py", "a.py"]})
    assert yaml.safe_load(other)["claims"] == [
        {"id": "C-1", "resource_id": "file:a.py"},
        {"id": "C-2", "resource_id": "file:b.py"},
    ]
    apart = [CLAIMS[0], {**CLAIMS[1], "expires_at": "2026-12-04Z"}]
    assert [
        c["expires_at"] for c in yaml.safe_load(agent_text("resource.claim", {"claims": apart}, args))["claims"]
    ] == [
        "2026-12-03Z",
        "2026-12-04Z",
    ]


def test_a_test_run_says_what_the_caller_did_not() -> None:
    run = {"id": "TR-1", "command": "unit tests/t.py", "status": "passed", "exit_code": 0, "outcome": "narrowed"}
    result = {"test_run": {**run, "agent_id": "implementer-1", "revision": "ab" * 32}, "log": "Ran 3 tests\n\nOK\n"}
    args = {"command": "unit", "paths": ["tests/t.py"], "proposal_id": "P-1"}
    text = agent_text("test.run", result, args, "implementer-1")
    assert text == "test_run:\n  id: TR-1\n  status: passed\n  outcome: narrowed\nlog: |\n  Ran 3 tests\n\n  OK\n"
    # A failure says its exit code; a command other than the one asked for is said.
    failed = {"test_run": {**run, "status": "failed", "exit_code": 2, "command": "unit -k fast"}, "log": "x\n"}
    seen = yaml.safe_load(agent_text("test.run", failed, args, "implementer-1"))["test_run"]
    assert (seen["exit_code"], seen["command"]) == (2, "unit -k fast")


def test_a_workspace_proposal_reads_without_the_claims_it_took() -> None:
    result = {
        "proposal": {"id": "P-1", "status": "in_review", "revision_number": 2},
        "files": ["a.py +1 -0"],
        "claimed": ["C-1"],
        "reviewers": ["reviewer-1"],
    }
    text = agent_text("workspace.propose", result, {"task_id": "T-1"}, "implementer-1")
    assert text == (
        "proposal:\n  id: P-1\n  status: in_review\n  revision_number: 2\nfiles:\n- a.py +1 -0\nreviewers:\n- reviewer-1\n"
    )


def test_a_proposal_made_lists_only_the_resources_its_diff_does_not_show() -> None:
    patch = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    result = {
        "proposal": {"id": "P-1", "status": "pending", "revision_number": 1, "risk": "normal", "title": "t"},
        "proposal_resources": [{"proposal_id": "P-1", "resource_id": r} for r in ("file:a.py", "service:db")],
        "patch": patch,
    }
    out = tool_result(_spec("proposal.create"), result, structured=False, args={"title": "t"}, agent_id="i-1")
    texts = [block.text for block in out.content]  # type: ignore[union-attr]
    assert texts == [
        "proposal:\n  id: P-1\n  status: pending\n  revision_number: 1\nproposal_resources:\n- service:db\n",
        patch,
    ]
