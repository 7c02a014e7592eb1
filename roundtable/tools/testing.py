"""Tests and evidence: `test.suggest`, `test.run`, `test.get_result`, `test.evidence.submit`.
`test.run`'s and `test.evidence.submit`'s arguments are declared in `services.testing.test_runs`,
which receives them whole with the caller; which commands may run and where (the revision's
worktree, the sandbox) is decided in the services."""

from __future__ import annotations

from typing import Any

import anyio

from roundtable.services.args import Args, Id
from roundtable.services.governance.evidence import proposal_ref, read_revision_patch
from roundtable.services.repository.patches import allowances, parse_patch
from roundtable.services.testing import test_exec, test_suggest
from roundtable.services.testing import test_runs as testing_service
from roundtable.services.testing.test_runs import EvidenceArgs, RunArgs
from roundtable.tools import views
from roundtable.tools.approvals import actor_of
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, integer, result, string


class GetResultArgs(Args):
    test_run_id: Id


async def get_result(call: Call[GetResultArgs]) -> dict[str, Any]:
    run, log, log_error = await testing_service.get_result(call.r, call.runtime.root, call.args.test_run_id)
    out: dict[str, Any] = {"test_run": run.to_dict(), "log": log}
    if log_error:
        out["log_error"] = log_error
    return out


async def run(call: Call[RunArgs]) -> dict[str, Any]:
    a = call.args
    record, log = await testing_service.run_test(call.runtime, a, actor_of(call.caller))
    if a.detail:
        return {"test_run": record.to_dict(), "log": log}
    tail, cut = views.log_tail(log)
    out: dict[str, Any] = {"test_run": record.to_dict(), "log": tail}
    if cut:
        out["log_truncated"] = True
        out["log_bytes"] = len(log.encode("utf-8"))
        out["log_note"] = f"the last lines of the log; test_get_result {record.id} gives all of it"
    return out


class SuggestArgs(Args):
    proposal_id: Id = ""
    task_id: Id = ""


async def suggest(call: Call[SuggestArgs]) -> dict[str, Any]:
    runtime = call.runtime
    proposal_id = call.args.proposal_id
    task_id = call.args.task_id
    configured = testing_service.tests_policy(runtime).commands
    if configured:
        # The operator configured the commands: those are the only ones test.run accepts.
        if proposal_id:
            async with runtime.db.read() as r:
                task_id = task_id or (await proposal_ref(r, proposal_id)).task_id
        allowed = await testing_service.allowed_commands(runtime)
        return {
            "task_id": task_id,
            "proposal_id": proposal_id,
            "commands": [c.name for c in allowed],
            "suggestions": [_configured(c) for c in allowed],
            **await _for_policy(call, {c.name for c in allowed}),
        }
    touched: list[str] | None = None
    if proposal_id:
        async with runtime.db.read() as r:
            proposal = await proposal_ref(r, proposal_id)
        task_id = task_id or proposal.task_id

        def touched_files() -> list[str]:
            return list(
                parse_patch(
                    read_revision_patch(runtime.root, proposal), runtime.root, allowances(runtime.policy)
                ).touched
            )

        touched = await anyio.to_thread.run_sync(touched_files)
    found = await anyio.to_thread.run_sync(test_suggest.suggest, runtime.root, touched)
    return {
        "task_id": task_id,
        "proposal_id": proposal_id,
        "commands": [s.command for s in found],
        "suggestions": [s.to_dict() for s in found],
        **await _for_policy(call, set()),
    }


def _configured(command: test_exec.Command) -> dict[str, Any]:
    out: dict[str, Any] = {
        "command": command.name,
        "marker": command.source,
        "language": "",
        "argv": list(command.argv),
    }
    if command.takes:
        out["takes"] = command.takes
    return out


async def _for_policy(call: Call, configured: set[str]) -> dict[str, Any]:
    """For the operator: commands they could add under tests.commands (those not configured yet).
    Agents, who cannot enable them, are not sent them."""
    if not call.caller.is_operator:
        return {}
    root = call.runtime.root
    found = [c for c in await anyio.to_thread.run_sync(test_suggest.for_policy, root) if c.name not in configured]
    if not found:
        return {}
    return {
        "for_operator": [c.to_dict() for c in found],
        "for_operator_note": "not runnable until the operator adds them under tests.commands in POLICIES.ROUNDTABLE.md",
    }


async def evidence_submit(call: Call[EvidenceArgs]) -> dict[str, Any]:
    record = await testing_service.submit_evidence(call.w, call.args, actor_of(call.caller))
    return {"test_run": record.to_dict()}


TOOLS = [
    ToolSpec(
        name="test.get_result",
        description=("One test run: status, exit code and the whole log."),
        args=GetResultArgs,
        output_schema=result(
            {"test_run": RECORD, "log": string(), "log_error": string("Why the log could not be read.")},
            required=["test_run", "log"],
        ),
        handler=get_result,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="test.run",
        description="Test a proposal's current revision; with a policy command, by name, sandboxed: its evidence.",
        args=RunArgs,
        agent_view=views.test_run_for_agent,
        output_schema=result(
            {
                "test_run": RECORD,
                "log": string(),
                "log_truncated": boolean(),
                "log_bytes": integer(),
                "log_note": string(),
            },
            required=["test_run", "log"],
        ),
        handler=run,
        rare_args=frozenset({"test_run_id", "task_id", "detail"}),
        operator_args=frozenset({"unsandboxed"}),
        mode="none",
    ),
    ToolSpec(
        name="test.suggest",
        description=(
            "The test commands test_run accepts: those the operator configured, else those the repository's markers imply (narrowed to a proposal's files), and lint or type checks the operator could enable."
        ),
        args=SuggestArgs,
        output_schema=result(
            {
                "task_id": string(),
                "proposal_id": string(),
                "commands": {"type": "array"},
                "suggestions": RECORDS,
                "for_operator": RECORDS,
                "for_operator_note": string(),
            },
            required=["task_id", "proposal_id", "commands", "suggestions"],
        ),
        handler=suggest,
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="test.evidence.submit",
        description=(
            "Tester sessions: report a test you ran yourself. Stored with status reported and your "
            "outcome; it is not host-verified and never counts as a pass."
        ),
        args=EvidenceArgs,
        output_schema=result({"test_run": RECORD}, required=["test_run"]),
        handler=evidence_submit,
        audience="session",
    ),
]
