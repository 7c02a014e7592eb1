"""Test runs and test evidence (spec/tools.md §2.7, §3.10; DESIGN §4.20).

`run_test` commits a `running` row first (so the console shows it), runs the command with no
database transaction open, stores the capped and redacted output atomically at
`.roundtable/testlogs/<test_run_id>.log`, then records the outcome (`passed`, `failed`,
`timed_out` or `error`) with the exit code. A run that concerns a proposal records the
proposal's current revision; only a `passed` run of the current revision is test evidence.
If the call is cancelled (client gone, shutdown) the process group is killed and the row ends
as `error`, never left `running`.

`submit_evidence` stores a tester session's own report as status `reported` with the outcome in
its own column: it is a claim by an agent, not host-verified, and never counts as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from roundtable import clock
from roundtable.assets import write_atomic
from roundtable.errors import PermissionDenied, ToolError, ValidationError
from roundtable.services import test_exec
from roundtable.services.evidence import Actor, ProposalRef, event_run_id, proposal_ref
from roundtable.services.redact import redact
from roundtable.store.db import Reader, Tx
from roundtable.store.records import TestRun

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

TESTLOGS_DIR = ".roundtable/testlogs"
SUMMARY_LINES = 6
NO_OUTPUT = "No test output captured."
RUNNING = "running"
PASSED = "passed"
REPORTED = "reported"
OUTCOMES: tuple[str, ...] = ("passed", "failed", "inconclusive")
MAX_EVIDENCE_COMMAND = 1_000
MAX_EVIDENCE_SUMMARY = 10_000


@dataclass(frozen=True)
class RunInput:
    command: str
    proposal_id: str = ""
    task_id: str = ""
    test_run_id: str = ""


@dataclass(frozen=True)
class EvidenceInput:
    proposal_id: str
    command: str
    outcome: str
    summary_md: str


async def get_test_run(q: Reader | Tx, test_run_id: str) -> TestRun:
    row = await q.get(TestRun, test_run_id)
    return row


def summarize(output: str, note: str = "") -> str:
    """The last lines of the output (the reference's six), after the note when there is one."""
    lines = output.strip().splitlines()[-SUMMARY_LINES:]
    if not note:
        return "\n".join(lines) if lines else NO_OUTPUT
    return "\n".join([f"{note[:1].upper()}{note[1:]}.", *lines])


def log_path_for(test_run_id: str) -> str:
    return f"{TESTLOGS_DIR}/{test_run_id}.log"


async def _finish(runtime: Runtime, test_run_id: str, values: dict[str, object], actor: Actor) -> TestRun:
    async with runtime.db.write(tool="test.run") as tx:
        await tx.update("test_runs", {"id": test_run_id}, {**values, "finished_at": clock.now()})
        record = await get_test_run(tx, test_run_id)
        await tx.append_event(
            await event_run_id(tx),
            "test.finished",
            {
                "test_run_id": record.id,
                "proposal_id": record.proposal_id,
                "revision": record.revision,
                "status": record.status,
                "exit_code": values.get("exit_code"),
            },
            actor_id=actor.name,
            task_id=record.task_id,
        )
    return record


async def run_test(
    runtime: Runtime, req: RunInput, actor: Actor, *, timeout: float | None = None
) -> tuple[TestRun, str]:
    """Guard, record, execute, store the log, record the outcome; returns the run and its log."""
    argv = test_exec.parse_command(req.command)
    test_run_id = req.test_run_id or clock.new_id("TR")
    log_rel = log_path_for(test_run_id)
    async with runtime.db.write(tool="test.run") as tx:
        if req.test_run_id and await tx.scalar("SELECT 1 FROM test_runs WHERE id = ?", (test_run_id,)):
            raise ToolError(f"test run {test_run_id} already exists; choose another test_run_id")
        proposal: ProposalRef | None = await proposal_ref(tx, req.proposal_id) if req.proposal_id else None
        task_id = req.task_id or (proposal.task_id if proposal else "")
        await tx.insert(
            "test_runs",
            {
                "id": test_run_id,
                "proposal_id": req.proposal_id or None,
                "task_id": task_id or None,
                "command": req.command,
                "status": RUNNING,
                "revision": (proposal.revision if proposal else "") or None,
                "agent_id": actor.agent_id or None,
                "session_id": actor.session_id or None,
                "created_at": clock.now(),
            },
        )
        await tx.append_event(
            await event_run_id(tx),
            "test.started",
            {
                "test_run_id": test_run_id,
                "proposal_id": req.proposal_id,
                "revision": proposal.revision if proposal else "",
                "command": req.command,
            },
            actor_id=actor.name,
            task_id=task_id,
        )

    limit = test_exec.DEFAULT_TIMEOUT_S if timeout is None else timeout
    try:
        execution = await test_exec.execute(argv, runtime.root, timeout=limit)
        log = redact(execution.output or (execution.note + "\n" if execution.note else ""))
        await anyio.to_thread.run_sync(write_atomic, runtime.root / log_rel, log)
    except OSError as exc:
        with anyio.CancelScope(shield=True):
            await _finish(
                runtime,
                test_run_id,
                {"status": test_exec.ERROR, "summary_md": f"Could not write the test log: {exc.strerror}."},
                actor,
            )
        raise ToolError(f"write test log {log_rel}: {exc.strerror}") from None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _finish(
                runtime,
                test_run_id,
                {"status": test_exec.ERROR, "summary_md": "Test run was cancelled before it finished."},
                actor,
            )
        raise
    record = await _finish(
        runtime,
        test_run_id,
        {
            "status": execution.status,
            "exit_code": execution.exit_code,
            "summary_md": redact(summarize(execution.output, execution.note)),
            "log_path": log_rel,
        },
        actor,
    )
    return record, log


async def get_result(runtime: Runtime, test_run_id: str) -> tuple[TestRun, str, str]:
    """The run, its log, and why the log could not be read (`""` when it could)."""
    async with runtime.db.read() as r:
        record = await get_test_run(r, test_run_id)
    if not record.log_path:
        return record, "", ""
    path = runtime.root / record.log_path

    def read() -> str:
        return Path(path).read_text(encoding="utf-8", errors="replace")

    try:
        return record, await anyio.to_thread.run_sync(read), ""
    except OSError as exc:
        return record, "", f"read test log {record.log_path}: {exc.strerror}"


async def submit_evidence(tx: Tx, req: EvidenceInput, actor: Actor) -> TestRun:
    """Store a tester session's own report (status `reported`); never a pass."""
    if not actor.on_session:
        raise PermissionDenied("test.evidence.submit is only available to tester capability sessions")
    if actor.role != "tester":
        raise PermissionDenied(f"operation test.evidence.submit is not permitted for role {actor.role}")
    if actor.bound_proposal_id and req.proposal_id != actor.bound_proposal_id:
        raise PermissionDenied("argument proposal_id does not match the session capability")
    if req.outcome not in OUTCOMES:
        raise ValidationError("outcome must be passed, failed or inconclusive")
    if len(req.command) > MAX_EVIDENCE_COMMAND:
        raise ValidationError(f"command must be at most {MAX_EVIDENCE_COMMAND} characters")
    if len(req.summary_md) > MAX_EVIDENCE_SUMMARY:
        raise ValidationError(f"summary_md must be at most {MAX_EVIDENCE_SUMMARY} characters")
    proposal = await proposal_ref(tx, req.proposal_id)
    test_run_id = clock.new_id("TR")
    now = clock.now()
    await tx.insert(
        "test_runs",
        {
            "id": test_run_id,
            "proposal_id": proposal.id,
            "task_id": proposal.task_id or None,
            "command": req.command,
            "status": REPORTED,
            "summary_md": redact(req.summary_md),
            "revision": proposal.revision or None,
            "outcome": req.outcome,
            "agent_id": actor.agent_id or None,
            "session_id": actor.session_id or None,
            "created_at": now,
            "finished_at": now,
        },
    )
    record = await get_test_run(tx, test_run_id)
    await tx.append_event(
        await event_run_id(tx),
        "test.evidence_reported",
        {
            "test_run_id": record.id,
            "proposal_id": record.proposal_id,
            "revision": record.revision,
            "outcome": record.outcome,
            "session_id": record.session_id,
        },
        actor_id=actor.name,
        task_id=record.task_id,
    )
    return record


def passing_runs(runs: Sequence[TestRun], revision: str) -> list[TestRun]:
    """Host-verified passes of `revision`: what `tests_required` accepts (`reported` never)."""
    return [r for r in runs if r.proposal_id and revision and r.revision == revision and r.status == PASSED]
