"""An argument is written once: the handlers of these operation groups hand the validated model on
whole (`call.args`), never field by field, and their models are declared where the services can
take them.

The figures for the whole package (long signatures, keyword spreads) are `python -m bench
signatures`; this test holds the groups already converted to the rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.signatures import PACKAGE, Signature, signatures, spreads
from roundtable.tools.registry import get_registry

CONVERTED = (
    "approvals",
    "autopilot_ops",
    "chair_ops",
    "gateway_ops",
    "memory",
    "operator_ops",
    "patches",
    "proposals",
    "repo",
    "resources",
    "sessions_ops",
    "table",
    "tasks",
    "testing",
    "usage_ops",
    "workspaces",
)


@pytest.mark.parametrize("module", CONVERTED)
def test_handlers_pass_the_model_whole(module: str) -> None:
    path = PACKAGE / "tools" / f"{module}.py"
    found = [s for s in spreads(PACKAGE / "tools") if s.where.startswith(f"roundtable/tools/{module}.py:")]
    assert path.exists()
    assert found == [], f"keyword spreads of call.args in {module}: {found}"


def test_spreads_are_found_where_they_are(tmp_path: Path) -> None:
    """The counter sees a spread, so the test above could fail."""
    tools = tmp_path / "roundtable" / "tools"
    tools.mkdir(parents=True)
    (tools / "sample.py").write_text(
        "async def handler(call):\n"
        "    a = call.args\n"
        "    return await service(call.w, title=a.title, body=call.args.body, other=1)\n"
    )
    (found,) = spreads(tools)
    assert found.keywords == 2


def test_long_signatures_are_counted(tmp_path: Path) -> None:
    package = tmp_path / "roundtable"
    package.mkdir()
    (package / "m.py").write_text("def f(a, b, *, c, d=1, **e):\n    pass\n\ndef g(a):\n    pass\n")
    assert [s.params for s in signatures(package)] == [5, 1]
    assert isinstance(signatures(package)[0], Signature)


# Operations whose service receives the validated model itself.
SERVICE_MODELS = (
    "autopilot.block_task",
    "autopilot.record",
    "autopilot.set_enabled",
    "agent.turn_complete",
    "agent.turn_request",
    "agent.turn_start",
    "chair.assign_tasks",
    "chair.end_run",
    "chair.expire_turns",
    "chair.mark_in_review",
    "chair.note_retry",
    "chair.record_error",
    "chair.schedule_turn",
    "chair.sweep_claims",
    "claim.reconcile",
    "claim.revoke",
    "decision.record",
    "gateway.record_budget_refused",
    "gateway.record_connection_refused",
    "gateway.record_credential_refused",
    "gateway.record_usage",
    "human.request_approval",
    "memory.mark_stale",
    "memory.query",
    "memory.record",
    "memory.summarize",
    "patch.apply",
    "patch.reject",
    "proposal.attach_patch",
    "proposal.comment",
    "proposal.create",
    "repo.read_file",
    "repo.search",
    "resource.claim",
    "security.review",
    "session.heartbeat",
    "session.launch",
    "session.open",
    "session.record_exit",
    "session.record_message",
    "session.record_refusal",
    "session.record_stream",
    "session.record_usage",
    "session.register",
    "table.get_state",
    "table.watch",
    "task.create",
    "task.update_status",
    "test.evidence.submit",
    "token.create",
    "token.ensure",
    "test.run",
    "vote.cast",
    "workspace.create",
    "workspace.list",
    "workspace.propose",
    "workspace.record_unproposed",
    "workspace.remove",
    "workspace.sync",
)


@pytest.mark.parametrize("name", SERVICE_MODELS)
def test_the_model_is_declared_where_the_service_takes_it(name: str) -> None:
    spec = get_registry().lookup(name)
    assert spec is not None
    assert spec.args.__module__.startswith("roundtable.services."), (name, spec.args.__module__)
