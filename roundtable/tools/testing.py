"""Tests and evidence: `test.suggest`, `test.run`, `test.get_result`, `test.evidence.submit`.
Handlers bind arguments and the caller to `services.testing` / `services.test_suggest`; which
commands may run and where (the revision's worktree, the sandbox) is decided in the services."""

from __future__ import annotations

from typing import Any

import anyio

from roundtable.services import test_suggest
from roundtable.services import testing as testing_service
from roundtable.services.evidence import proposal_ref, read_revision_patch
from roundtable.services.patches import allowances, parse_patch
from roundtable.tools.approvals import actor_of
from roundtable.tools.args import opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, obj, result, string


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
    )
    record, log = await testing_service.run_test(call.runtime, req, actor_of(call.caller))
    return {"test_run": record.to_dict(), "log": log}


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
            "suggestions": [
                {"command": c.name, "marker": c.source, "language": "", "argv": list(c.argv)} for c in allowed
            ],
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
        description="Fetch one test run with its status, exit code and stored log.",
        input_schema=obj({"test_run_id": string("Test run id, e.g. TR-...")}, ["test_run_id"]),
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
            "Run one of the test commands the operator configured (tests.commands in "
            "POLICIES.ROUNDTABLE.md; by default those test.suggest lists from the repository's "
            "markers): give its name or its exact argument string; anything else is refused with "
            "the allowed list. The command runs on a scratch worktree of the current tree with the "
            "proposal's current revision applied, in a sandbox (no network, only the worktree "
            "writable, home and .roundtable absent, memory limit). Timeout 600 s by default, "
            "output capped at 1 MiB. A failing test is a result (status failed), not an error. With "
            "proposal_id the run is evidence for the proposal's current revision."
        ),
        input_schema=obj(
            {
                "command": string("A configured test command, by name or exact text, e.g. make test."),
                "proposal_id": string("Proposal the run is evidence for (its patch is applied)."),
                "task_id": string("Task concerned (default: the proposal's)."),
                "test_run_id": string("Explicit id (default: generated); must be new."),
                "unsandboxed": boolean(
                    "Operator only, after confirming: run without a sandbox when none works on this machine."
                ),
            },
            ["command"],
        ),
        output_schema=result({"test_run": RECORD, "log": string()}),
        handler=run,
        mode="none",
    ),
    ToolSpec(
        name="test.suggest",
        description=(
            "List the test commands test.run accepts: those the operator configured (tests.commands "
            "in POLICIES.ROUNDTABLE.md), else the ones the repository's own markers imply "
            "(pyproject.toml/pytest.ini/setup.cfg, package.json scripts.test, go.mod, Cargo.toml, a "
            "Makefile test target), narrowed to the languages of a proposal's touched files when "
            "proposal_id is given."
        ),
        input_schema=obj(
            {"proposal_id": string("Proposal to suggest tests for."), "task_id": string("Task concerned.")}
        ),
        output_schema=result(
            {"task_id": string(), "proposal_id": string(), "commands": {"type": "array"}, "suggestions": RECORDS}
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
