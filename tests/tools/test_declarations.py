"""One declaration per operation: the advertised schemas generated from the `Args` models stay
compatible with the hand-written ones they replaced, every argument is bounded, and the model
refuses bad arguments with one clear sentence before anything changes.

`fixtures/hand_written_schemas.json` is the registry's input schemas as they were written by
hand (frozen before the models replaced them); it is not regenerated. An operation added since
has no entry there: its model is its only description.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import IDENTITY_ARGS, Runtime
from roundtable.services.args import Args
from roundtable.tools.registry import get_registry

FROZEN: dict[str, Any] = json.loads((Path(__file__).parent / "fixtures" / "hand_written_schemas.json").read_text())
SPECS = {spec.name: spec for spec in get_registry()}

# Arguments whose advertised schema changed on purpose: {(tool, argument): keys replaced (None:
# removed)}. Everything else is the hand-written schema, key for key, description included.
CHANGED: dict[tuple[str, str], dict[str, Any]] = {
    # a word the handler checked is an enum now (the enum says what the description listed)
    ("repo.symbols", "language"): {
        "enum": ["python", "go", "typescript", "javascript"],
        "maxLength": None,
        "description": None,
    },
    # a running cost is never negative (the handler refused it; now the bound says so)
    ("session.record_usage", "cost_usd"): {"minimum": 0},
    # the load per agent gets SQLite's bound like every other integer
    ("chair.assign_tasks", "load"): {"additionalProperties": {"maximum": 2**63 - 1, "minimum": 0, "type": "integer"}},
    # the service's own limit on expected test commands is the argument's bound now (it checked it after validation)
    ("proposal.create", "expected_tests"): {"maxItems": 50},
    ("task.create", "body_md"): {"maxLength": 200_000},
    ("task.create", "readable_paths"): {"maxItems": 200},
    ("memory.record", "body_md"): {"maxLength": 100_000},
    ("memory.mark_stale", "reason_md"): {"maxLength": 4000},
    # the description's "at most 1000" is the bound (more was cut to 1000 silently; now refused)
    ("memory.query", "limit"): {"maximum": 1000},
    # the descriptions' "at most 1000/10000 characters" are the bounds
    ("test.evidence.submit", "command"): {"maxLength": 1000},
    ("test.evidence.submit", "summary_md"): {"maxLength": 10_000},
    # the handler's own 4000-character limit on a claim's rationale and a release's reason is the bound
    ("resource.claim", "rationale"): {"maxLength": 4000},
    ("resource.release", "reason"): {"maxLength": 4000},
    # the description's "at most 200" is the bound (more was cut to 200 silently; now refused)
    ("table.watch", "limit"): {"maximum": 200},
    # paging's "at most 1000 rows" is the bound of every page's limit (more was cut silently)
    **{
        (tool, "limit"): {"maximum": 1000}
        for tool in ("proposal.list", "resource.claim_status", "resource.search", "task.list")
    },
}
# Required arguments made optional on purpose since the freeze, with the default the model gives.
MADE_OPTIONAL: dict[str, set[str]] = {
    "proposal.create": {"affected_resources", "risk"},  # the patch names its files; risk defaults to normal
}
# Descriptions are written for the model that reads them and were shortened since the freeze:
# they may differ; every other key is compared.
DESCRIBED = "description"
# Optional arguments added since the freeze: {tool: arguments} (never required).
ADDED: dict[str, set[str]] = {
    "patch.apply": {"mode"},  # the landing mode for this apply (default: the config's)
    "patch.rollback": {"reset"},  # a committed landing: move the branch back instead of reverting
    "table.watch": {"everything"},
    "workspace.propose": {"test", "test_paths"},  # the evidence on the new revision, in the same call
    "resource.claim": {"paths"},  # several files in one call (a review's, a change's)  # an agent's default is what concerns it; this shows the whole log
}


def _changed(name: str, arg: str, before: dict[str, Any]) -> dict[str, Any]:
    out = dict(before)
    for key, value in CHANGED.get((name, arg), {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_every_operation_is_declared_with_a_model() -> None:
    assert all(issubclass(spec.args, Args) and spec.args is not Args for spec in SPECS.values())


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_generated_schema_is_compatible_with_the_hand_written_one(name: str) -> None:
    assert name in SPECS, f"{name} disappeared"
    old, spec = FROZEN[name], SPECS[name]
    new = spec.input_schema
    assert new["type"] == "object" and new["additionalProperties"] is False
    added = ADDED.get(name, set())
    assert not added & set(new.get("required", ()))
    assert sorted(set(new.get("properties", {})) - added) == sorted(old["input_schema"].get("properties", {}))
    old_required = set(old["input_schema"].get("required", ())) - MADE_OPTIONAL.get(name, set())
    # A required argument may become optional only where the credential fills it.
    assert set(new.get("required", ())) == old_required or (
        set(new.get("required", ())) < old_required and old_required - set(new["required"]) <= set(IDENTITY_ARGS)
    )
    assert sorted(spec.operator_args) == old["operator_args"]
    assert sorted(spec.args.allow_blank & old_required) == sorted(set(old["allow_blank"]) & old_required)
    for arg, before in old["input_schema"].get("properties", {}).items():
        expected = {k: v for k, v in _changed(name, arg, before).items() if k != DESCRIBED}
        got = {k: v for k, v in new["properties"][arg].items() if k != DESCRIBED}
        if arg in MADE_OPTIONAL.get(name, set()):
            got.pop("default", None)
        assert got == expected, f"{name}.{arg}"


def _unbounded(schema: dict[str, Any], where: str) -> list[str]:
    kind = schema.get("type")
    out: list[str] = []
    if kind == "string" and "enum" not in schema and "maxLength" not in schema:
        out.append(where)
    if kind in ("integer", "number") and not ("minimum" in schema and "maximum" in schema):
        out.append(where)
    if kind == "array":
        if "maxItems" not in schema:
            out.append(where)
        out += _unbounded(schema.get("items", {}), f"{where}[]")
    for key, sub in schema.get("properties", {}).items():
        out += _unbounded(sub, f"{where}.{key}")
    if isinstance(schema.get("additionalProperties"), dict):
        out += _unbounded(schema["additionalProperties"], f"{where}.*")
    return out


def test_every_argument_is_bounded() -> None:
    """Every string has a maxLength (or an enum), every number both bounds, every array a
    maxItems — what the models enforce is what the schemas show."""
    assert [w for spec in SPECS.values() for w in _unbounded(spec.input_schema, spec.name)] == []


def _keywords(schema: dict[str, Any]) -> set[str]:
    """Every keyword used in `schema` (property names are not keywords)."""
    out = set(schema)
    for key, sub in schema.items():
        if key == "properties":
            for prop in sub.values():
                out |= _keywords(prop)
        elif isinstance(sub, dict):
            out |= _keywords(sub)
    return out


def test_schemas_are_compact() -> None:
    """No titles, defaults or `$defs`/`$ref`/`anyOf` in what clients are given."""
    used = set().union(*(_keywords(spec.input_schema) for spec in SPECS.values()))
    assert used.isdisjoint({"title", "default", "$defs", "$ref", "anyOf", "const"}), used


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("task.create", {"title": "t", "body_md": "b", "risk": "extreme"}, "argument risk must be one of low, normal"),
        ("task.create", {"title": "t", "body_md": "b", "priority": "5"}, "argument priority must be an integer"),
        ("task.create", {"title": "t", "body_md": "b", "priority": 2**70}, "argument priority must be at most"),
        (
            "task.create",
            {"title": "t", "body_md": "b", "readable_paths": ["a", 3]},
            "readable_paths[1] must be a string",
        ),
        ("task.create", {"title": "t" * 501, "body_md": "b"}, "title is too long: 501 characters, at most 500"),
        ("task.create", {"title": "t", "body_md": "b", "task_id": ".hidden"}, "argument task_id must be 1-128"),
        ("task.create", {"title": "t", "body_md": "b", "zz": 1, "aa": 2}, "unknown argument aa, zz (allowed: "),
        ("table.get_state", {"lists": ["tasks", "tasks"]}, "argument lists must not name a list twice"),
        ("table.get_state", {"lists": ["nope"]}, "argument lists[0] must be one of runs, agents"),
        ("table.get_state", {"summary": 1}, "argument summary must be a boolean"),
        ("table.watch", {"wait_ms": 30001}, "argument wait_ms must be at most 30000"),
        ("vote.cast", {"proposal_id": "P", "vote": "maybe", "reason_md": "r"}, "argument vote must be one of approve,"),
        (
            "vote.cast",
            {"proposal_id": "P", "vote": "approve", "reason_md": "r", "confidence": 1.5},
            "argument confidence must be at most 1",
        ),
        (
            "vote.cast",
            {"proposal_id": "P", "vote": "approve", "reason_md": "r", "confidence": float("inf")},
            "argument confidence must be a finite number",
        ),
        ("table.watch", {"after_event_id": None}, "argument after_event_id must be an integer"),
        (
            "task.create",
            {"title": "t", "body_md": "b", "assigned_agent_id": None},
            "assigned_agent_id must be a string",
        ),
        (
            "human.request_approval",
            {"subject": "s", "reason_md": "r", "status": None},
            "argument status must be a string",
        ),
        (
            "human.request_approval",
            {"subject": "s", "reason_md": "r", "status": "maybe"},
            "status must be one of requested,",
        ),
        ("proposal.list", {"status": "merged"}, "argument status must be one of pending, in_review, accepted"),
        (
            "proposal.create",
            {
                "task_id": "T",
                "title": "t",
                "summary_md": "s",
                "affected_resources": [],
                "risk": "low",
                "status": "accepted",
            },
            "argument status must be one of pending, in_review",
        ),
        (
            "proposal.create",
            {
                "task_id": "T",
                "title": "t",
                "summary_md": "s",
                "affected_resources": [],
                "risk": "low",
                "edits": [{"path": "a", "old_string": "x"}],
            },
            "missing",
        ),
    ],
)
async def test_bad_arguments_are_one_sentence_and_change_nothing(
    runtime: Runtime, tool: str, args: dict[str, Any], message: str
) -> None:
    async with runtime.db.read() as r:
        before = await r.scalar("SELECT count(*) FROM events")
    with pytest.raises(ToolError) as info:
        await runtime.call(tool, args)
    text = str(info.value)
    assert message in text and text.startswith(f"{tool}: ") and "\n" not in text
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM events") == before


@pytest.mark.anyio
async def test_words_are_case_free_and_blank_optional_arguments_are_absent(runtime: Runtime) -> None:
    task = (await runtime.call("task.create", {"title": "t", "body_md": "b", "risk": " HIGH ", "status": ""}))["task"]
    assert task["risk"] == "high" and task["status"] == "open"
    task = (await runtime.call("task.create", {"title": "t", "body_md": "b", "priority": 7.0}))["task"]
    assert task["priority"] == 7


@pytest.mark.anyio
async def test_handlers_receive_the_typed_model(runtime: Runtime) -> None:
    spec = runtime.registry.lookup("vote.cast")
    assert spec is not None and spec.args is not None
    checked = runtime.validate(spec, {"proposal_id": "P-1", "vote": "Approve", "reason_md": "ok", "confidence": 1})
    assert isinstance(checked, spec.args)
    assert checked.vote == "approve" and checked.confidence == 1.0 and checked.vote_id == ""
