"""The registry: the seed's tool list, schemas, hints, and both name spellings."""

from __future__ import annotations

import re
from pathlib import Path

from roundtable.tools.registry import REFERENCE_ORDER, get_registry

SEED = Path(__file__).resolve().parents[3] / "shared" / "seed" / "000_08ef96d855ff20fa.txt"


def test_registry_has_43_mcp_entries_and_42_exposed() -> None:
    registry = get_registry()
    names = [s.name for s in registry if s.audience in ("mcp", "mcp-operator")]
    assert names == list(REFERENCE_ORDER)
    assert len(names) == 43  # the reference's 42 and workspace.create (a connected agent's workspace)
    exposed = [s.name for s in registry.exposed()]
    assert len(exposed) == 42
    assert "repo.dependency_context" not in exposed
    assert "test.evidence.submit" not in exposed


def test_each_operation_has_one_audience_that_decides_who_may_call_it() -> None:
    by_name = {s.name: s for s in get_registry()}
    assert by_name["test.evidence.submit"].audience == "session"
    assert by_name["patch.rollback"].audience == "operator"
    assert {by_name["patch.apply"].audience, by_name["patch.reject"].audience} == {"mcp-operator"}
    assert by_name["patch.apply"].advertised and not by_name["patch.rollback"].advertised
    assert by_name["patch.apply"].operator_only and not by_name["task.create"].operator_only
    assert {"claim.revoke", "token.create", "adapters.record"} <= {
        s.name for s in get_registry().for_audience("operator")
    }
    # Nothing but the MCP tools is advertised, and no advertised name is an operator one.
    assert all(s.audience in ("mcp", "mcp-operator") for s in get_registry().exposed())


def test_registry_names_equal_the_seed_table() -> None:
    if not SEED.exists():  # shared/ sits beside the repository in CI and sessions
        return
    text = SEED.read_text(encoding="utf-8")
    seed_names = set(re.findall(r"^([a-z]+\.[a-z_]+(?:\.[a-z_]+)?) \|$", text, re.M))
    # Tools roundtable added beyond the reference's table: the agents' workspaces, line comments.
    added = {"workspace.create", "workspace.propose", "workspace.sync", "proposal.comment"}
    assert set(REFERENCE_ORDER) - added <= seed_names | {"repo.dependency_context"}


def test_every_schema_is_closed_and_hinted() -> None:
    for spec in get_registry():
        schema = spec.input_schema
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema.get("required", [])) <= set(schema["properties"])
        assert spec.output_schema["type"] == "object"
        assert set(spec.annotations) == {"readOnlyHint", "destructiveHint", "idempotentHint"}
        assert spec.description


def test_both_spellings_resolve() -> None:
    registry = get_registry()
    assert registry.lookup("task.create") is registry.lookup("task_create")
    assert registry.lookup("test_evidence_submit") is registry.lookup("test.evidence.submit")
    assert registry.lookup("Task.Create") is None


def test_the_session_role_matrix_names_only_operations_a_session_may_reach() -> None:
    """The audience says who may call an operation at all; a capability session's role then
    narrows the `mcp`/`session` operations (services.sessions.capabilities.ALLOWED). The two
    must agree: a role never lists an operator or internal operation, and every session
    operation is granted to some role."""
    from roundtable.services.sessions.capabilities import ALLOWED
    from roundtable.tools.registry import SESSION_AUDIENCES

    by_name = {s.name: s for s in get_registry()}
    granted = set().union(*ALLOWED.values())
    assert all(by_name[name].audience in SESSION_AUDIENCES for name in granted)
    assert {s.name for s in get_registry() if s.audience == "session"} <= granted
