"""Tests and evidence: `test.suggest`, `test.run`, `test.get_result`, `test.evidence.submit`.
Handlers bind arguments and the caller to `services.testing.test_runs` / `services.testing.test_suggest`; which
commands may run and where (the revision's worktree, the sandbox) is decided in the services."""

from __future__ import annotations

from typing import Any

import anyio

from roundtable.services.governance.evidence import proposal_ref, read_revision_patch
from roundtable.services.repository.patches import allowances, parse_patch
from roundtable.services.testing import test_exec, test_suggest
from roundtable.services.testing import test_runs as testing_service
from roundtable.tools import views
from roundtable.tools.approvals import actor_of
from roundtable.tools.args import opt_list, opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, integer, obj, result, string, strings
from roundtable.tools.views import wants_detail


async def get_result(call: Call) -> dict[str, Any]:
    run, log, log_error = await testing_service.get_result(call.runtime, call.args["test_run_id"])
    out: dict[str, Any] = {"test_run": run.to_dict(), "log": log}
    if log_error:
        out["log_error"] = log_error
    return out


async def run(call: Call) -> dict[str, Any]:
    args = call.args
    req = testing_service.RunInput(
        command=args["command"],
        proposal_id=opt_str(args, "proposal_id"),
        task_id=opt_str(args, "task_id"),
        test_run_id=record_id(args, "test_run_id"),
        unsandboxed=bool(args.get("unsandboxed", False)),
        paths=tuple(opt_list(args, "paths")),
        k=opt_str(args, "k"),
    )
    record, log = await testing_service.run_test(call.runtime, req, actor_of(call.caller))
    if wants_detail(args):
        return {"test_run": record.to_dict(), "log": log}
    tail, cut = views.log_tail(log)
    out: dict[str, Any] = {"test_run": record.to_dict(), "log": tail}
    if cut:
        out["log_truncated"] = True
        out["log_bytes"] = len(log.encode("utf-8"))
        out["log_note"] = f"the last lines of the log; test_get_result {record.id} gives all of it"
    return out


async def suggest(call: Call) -> dict[str, Any]:
    runtime = call.runtime
    proposal_id = opt_str(call.args, "proposal_id")
    task_id = opt_str(call.args, "task_id")
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


async def evidence_submit(call: Call) -> dict[str, Any]:
    args = call.args
    req = testing_service.EvidenceInput(
        proposal_id=args["proposal_id"],
        command=args["command"],
        outcome=args["outcome"],
        summary_md=args["summary_md"],
    )
    record = await testing_service.submit_evidence(call.w, req, actor_of(call.caller))
    return {"test_run": record.to_dict()}


TOOLS = [
    ToolSpec(
        name="test.get_result",
        description=("One test run: status, exit code and the whole log."),
        input_schema=obj({"test_run_id": string()}, ["test_run_id"]),
        output_schema=result(
            {"test_run": RECORD, "log": string(), "log_error": string("Why the log could not be read.")},
            required=["test_run", "log"],
        ),
        handler=get_result,
        mode="none",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="test.run",
        description=(
            "Run one of the test commands test_suggest lists (by name or exact text) on the current tree with the proposal's revision applied, sandboxed. A failing test is status failed, not an error; with proposal_id the run is evidence for its current revision."
        ),
        input_schema=obj(
            {
                "command": string(),
                "proposal_id": string("Its current revision is applied; the run is its evidence."),
                "task_id": string(),
                "test_run_id": string(),
                "unsandboxed": boolean(
                    "Operator only, after confirming: run without a sandbox when none works on this machine."
                ),
                "paths": strings("Only these files or tests (path or path::test), if the command takes paths."),
                "k": string("Only tests matching this expression (pytest -k), if the command takes k."),
                "detail": boolean("The whole log, not its tail."),
            },
            ["command"],
        ),
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
        operator_args=frozenset({"unsandboxed"}),
        mode="none",
    ),
    ToolSpec(
        name="test.suggest",
        description=(
            "The test commands test_run accepts: those the operator configured, else those the repository's markers imply (narrowed to a proposal's files), and lint or type checks the operator could enable."
        ),
        input_schema=obj({"proposal_id": string(), "task_id": string()}),
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
        input_schema=obj(
            {
                "proposal_id": string("Your session's proposal."),
                "command": string("The command you ran (at most 1000 characters)."),
                "outcome": string("What happened.", enum=list(testing_service.OUTCOMES)),
                "summary_md": string("What you saw (at most 10000 characters)."),
            },
            ["proposal_id", "command", "outcome", "summary_md"],
        ),
        output_schema=result({"test_run": RECORD}, required=["test_run"]),
        handler=evidence_submit,
        audience="session",
    ),
]
