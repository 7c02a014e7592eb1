"""What an agent reads of a result leaves out what it said itself (`rendering.unechoed`) and
what says nothing (`rendering.unempty`: null, empty, the default), and only that; the views of
the tools whose results it reads most (`tools.views`) say each thing once; and it reads as
`yaml.dump` writes it (`rendering.readable`, without the dump)."""

from __future__ import annotations

import enum
import json
import random
import string
from typing import Any

import pytest
import yaml

from roundtable.runtime import IDENTITY_ARGS
from roundtable.server import rendering
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

# What `readable` must write: `yaml.dump` with its dumper, the text it wrote before it handed the
# emitter its own events (`rendering._events`).
def _dumped(value: object) -> str:
    return yaml.dump(value, Dumper=rendering._ReadableDumper, **rendering._SETTINGS)


class _State(enum.StrEnum):
    OPEN = "open"
    YES = "yes"


class _Level(enum.IntEnum):
    HIGH = 3


# Strings the resolver reads as something else, or the emitter must quote, fold or escape.
AWKWARD = [
    *("", "yes", "No", "null", "~", "true", "1", "0x1F", "0o17", "1e3", "1_000", ".inf", "-.5", "+1"),
    *("2026-12-03", "2026-12-03T12:43:33.105786221Z", "12:30", "=", "<<", "a: b", "- x", "#c", "x #c"),
    *(" lead", "trail ", "multi\nline", "multi\nline\n", "x\n\n", "\n", "\ttab", "'q'", '"d"', "@x", "%y"),
    *("!t", "&a", "*b", "? k", "|", ">", "-", "--- ", "...", "\r\n", "a\rb", "é€😀", "\u2028", "\x85", "\ufeff"),
    *("\x00\x07", "{a}", "[1]", "a, b", "`x`", "T-20261203T124333.099754806", "src/own_1.py"),
]


def _value(rng: random.Random, depth: int = 0) -> object:
    if depth > 3 or rng.random() < 0.5:
        text = rng.choice(AWKWARD) if rng.random() < 0.5 else "".join(rng.choices(string.printable, k=rng.randrange(8)))
        scalars = [text, rng.randrange(-(10**20), 10**20), rng.random() * 10 ** rng.randrange(-20, 20)]
        scalars += [True, False, None, float("nan"), float("inf"), -float("inf"), 1e17, -0.0]
        return rng.choice([*scalars, _State.OPEN, _State.YES, _Level.HIGH, ()])
    if rng.random() < 0.5:
        return {_value(rng, 9) if rng.random() < 0.1 else rng.choice(AWKWARD): _value(rng, depth + 1) for _ in range(4)}
    items = [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return items if rng.random() < 0.8 else tuple(items)


def test_the_rendering_is_yaml_dumps_text() -> None:
    rng = random.Random(40)
    values = [{"x": _value(rng)} for _ in range(3000)]
    values += [{"tasks": [{"id": f"T-{n}", "title": text, "priority": n} for n, text in enumerate(AWKWARD)]}]
    for value in values:
        assert readable(value) == _dumped(value)
    assert yaml.safe_load(readable(values[-1])) == values[-1]


def test_what_the_events_do_not_write_is_dumped() -> None:
    shared: list[str] = []
    # One object twice is an anchor and an alias, as the dump writes it; other types are the
    # dump's too (a set as a mapping of nulls, bytes as binary), and what it refuses, it refuses.
    for value in ({"a": shared, "b": {"c": shared}}, {"s": {"x"}}, {"b": b"\x00"}):
        assert readable(value) == _dumped(value)
    assert "&id001" in readable({"a": shared, "b": shared})
    with pytest.raises(yaml.YAMLError):
        readable({"x": object()})
