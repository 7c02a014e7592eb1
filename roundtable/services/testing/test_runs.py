"""Test runs and test evidence.

`run_test` picks the command (an allowed one; see `test_exec`), the sandbox (`roundtable.sandbox`:
refused for agents when none works here), commits a `running` row first (so the console shows
it) with the sandbox kind and the argv, then — with no database transaction open — builds a
scratch worktree of the current tree (`scratch`), applies the revision's patch there when the
run concerns a proposal, runs the command in the sandbox on that worktree, removes the worktree,
stores the capped and redacted output atomically at `.roundtable/testlogs/<test_run_id>.log`
(0600), and records the outcome (`passed`, `failed`, `timed_out` or `error`) with the exit code.
A run that concerns a proposal records the revision whose patch it applied; only a `passed` run
of the current revision is test evidence. If the call is cancelled (client gone, shutdown) the
process group is killed, the worktree removed, and the row ends as `error`, never `running`.

Where no sandbox works, the operator may still run a test unsandboxed (`unsandboxed=True`, which
the console asks for only after a confirmation saying the code is unreviewed); the row then
records sandbox `none`.

`submit_evidence` stores a tester session's own report as status `reported` with the outcome in
its own column: it is a claim by an agent, not host-verified, and never counts as a pass.

Events of a test run (`test.started`, `test.finished`, `test.evidence_reported`) go to the run of
its proposal, else of its task, unless the call names one (`services.run_scope`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import anyio
from annotated_types import MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.atomic import write_atomic
from roundtable.domain import NARROWED, EventType, TestOutcome, TestRunStatus
from roundtable.errors import PermissionDenied, ToolError
from roundtable.sandbox import runner as sandbox_runner
from roundtable.services.args import Args, Command, Flag, Id, NewId, Text, Texts
from roundtable.services.governance.evidence import Actor, ProposalRef, proposal_ref, read_revision_patch
from roundtable.services.policy.engine import TestsPolicy
from roundtable.services.redact import redact
from roundtable.services.repository import scratch
from roundtable.services.repository.patches import allowances, parse_patch, read_patch
from roundtable.services.run_scope import resolve, task_run
from roundtable.services.testing import test_exec, test_suggest
from roundtable.store.db import Reader, Tx
from roundtable.store.records import TestRun

if TYPE_CHECKING:
    from roundtable.services.project import Project

TESTLOGS_DIR = ".roundtable/testlogs"
SUMMARY_LINES = 6
NO_OUTPUT = "No test output captured."
OUTCOMES: tuple[str, ...] = tuple(TestOutcome)
MAX_EVIDENCE_COMMAND = 1_000
MAX_EVIDENCE_SUMMARY = 10_000


UNSANDBOXED = "none"


class RunArgs(Args):
    # `test.run` (`detail` shapes the tool's answer only).
    command: Command
    proposal_id: Id = Field(default="", description="Its current revision is tested.")
    task_id: Id = ""
    test_run_id: NewId = ""
    unsandboxed: Flag = Field(
        default=False,
        description="Operator only, after confirming: run without a sandbox when none works on this machine.",
    )
    paths: Texts = Field(default=[], description="Only these files or tests (path::test).")
    k: Text = Field(default="", description="Only tests matching this (pytest -k).")
    detail: Flag = Field(default=False, description="The whole log, not its tail.")


if TYPE_CHECKING:
    Outcome = str
else:
    Outcome = Literal[OUTCOMES]


class EvidenceArgs(Args):
    # `test.evidence.submit`: a tester session's own report.
    proposal_id: Id = Field(description="Your session's proposal.")
    command: Annotated[Command, MaxLen(MAX_EVIDENCE_COMMAND)] = Field(description="The command you ran.")
    outcome: Outcome = Field(description="What happened.")
    summary_md: Annotated[Text, MaxLen(MAX_EVIDENCE_SUMMARY)] = Field(description="What you saw.")


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


async def _finish(runtime: Project, test_run_id: str, values: dict[str, object], actor: Actor, run: str) -> TestRun:
    async with runtime.db.write(tool="test.run") as tx:
        await tx.update("test_runs", {"id": test_run_id}, {**values, "finished_at": clock.now()})
        record = await get_test_run(tx, test_run_id)
        await tx.append_event(
            run,
            EventType.TEST_FINISHED,
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


def tests_policy(runtime: Project) -> TestsPolicy:
    return runtime.policy.tests


async def allowed_commands(runtime: Project, proposal_id: str = "") -> list[test_exec.Command]:
    """The commands `test.run` accepts from agents (for a proposal: also those its touched
    files' markers imply, as `test.suggest` lists them)."""
    tests = tests_policy(runtime)
    touched: list[str] | None = None
    if proposal_id and not tests.commands:
        async with runtime.db.read() as r:
            proposal = await proposal_ref(r, proposal_id)
        if proposal.revision:

            def touched_files() -> list[str]:
                return list(
                    parse_patch(
                        read_revision_patch(runtime.root, proposal), runtime.root, allowances(runtime.policy)
                    ).touched
                )

            touched = await anyio.to_thread.run_sync(touched_files)
    return await anyio.to_thread.run_sync(test_exec.allowed_commands, runtime.root, tests, touched)


async def sandbox_for(runtime: Project) -> sandbox_runner.Sandbox:
    """The sandbox test runs use here (probed once per process)."""
    return await sandbox_runner.choose(tests_policy(runtime).sandbox)


def private_paths(runtime: Project) -> tuple[Path | None, list[str]]:
    """The legacy socket's directory, and the root-relative paths never snapshotted into a
    worktree besides `.roundtable/` (a database or socket configured elsewhere in the root)."""
    root = runtime.root.resolve()
    socket_dir: Path | None = None
    excluded: list[str] = []
    config = getattr(runtime, "config", None)
    if config is not None:
        socket_dir = config.socket_path(runtime.root).resolve().parent
        for path in (config.sqlite_path(runtime.root).resolve(), socket_dir):
            try:
                rel = path.relative_to(root).as_posix()
            except ValueError:
                continue
            if rel not in (".", "") and not rel.startswith(".roundtable"):
                excluded.append(rel)
    return socket_dir, excluded


def _program_missing(argv: list[str], workdir: Path) -> str:
    """Why the program cannot start ("" when it can), seen from the worktree (blocking)."""
    if os.sep in argv[0]:
        if os.access(workdir / argv[0], os.X_OK):
            return ""
        return f"could not start {argv[0]}: not found or not executable"
    found = shutil.which(argv[0], path=test_exec.child_environment().get("PATH", os.defpath))
    return "" if found else f"could not start {argv[0]}: not found on PATH"


async def run_test(
    runtime: Project, req: RunArgs, actor: Actor, *, timeout: float | None = None
) -> tuple[TestRun, str]:
    """Choose, record, build the worktree, execute in the sandbox, store the log, record the
    outcome; returns the run and its log."""
    if req.unsandboxed and not actor.operator:
        raise PermissionDenied("only the operator may run a test without a sandbox")
    allowed = await allowed_commands(runtime, req.proposal_id)
    narrowing = test_exec.check_narrowing(runtime.root, list(req.paths), req.k)
    label, argv = test_exec.choose_command(req.command, allowed, operator=actor.operator, narrowing=narrowing)
    tests = tests_policy(runtime)
    sandbox = await sandbox_for(runtime)
    if not sandbox.usable and not req.unsandboxed:
        who = "the operator may run it unsandboxed from the console" if actor.operator else "ask the operator"
        raise ToolError(f"test.run refused: no sandbox works on this machine ({sandbox.reason}); {who}")
    kind = sandbox.kind if sandbox.usable else UNSANDBOXED
    test_run_id = req.test_run_id or clock.new_id("TR")
    log_rel = log_path_for(test_run_id)
    async with runtime.db.write(tool="test.run") as tx:
        if req.test_run_id and await tx.scalar("SELECT 1 FROM test_runs WHERE id = ?", (test_run_id,)):
            raise ToolError(f"test run {test_run_id} already exists; choose another test_run_id")
        proposal: ProposalRef | None = await proposal_ref(tx, req.proposal_id) if req.proposal_id else None
        if proposal is not None and not proposal.revision:
            raise ToolError(f"proposal {proposal.id} has no patch revision to test")
        task_id = req.task_id or (proposal.task_id if proposal else "")
        owner = (proposal.run_id if proposal else "") or await task_run(tx, task_id)
        run = await resolve(tx, actor.runs, owner=owner)
        await tx.insert(
            "test_runs",
            {
                "id": test_run_id,
                "proposal_id": req.proposal_id or None,
                "task_id": task_id or None,
                "command": label,
                "status": TestRunStatus.RUNNING,
                "revision": (proposal.revision if proposal else "") or None,
                "agent_id": actor.agent_id or None,
                "session_id": actor.session_id or None,
                "sandbox": kind,
                "argv_json": json.dumps(argv),
                "outcome": NARROWED if narrowing else None,
                "created_at": clock.now(),
            },
        )
        await tx.append_event(
            run,
            EventType.TEST_STARTED,
            {
                "test_run_id": test_run_id,
                "proposal_id": req.proposal_id,
                "revision": proposal.revision if proposal else "",
                "command": label,
                "sandbox": kind,
            },
            actor_id=actor.name,
            task_id=task_id,
        )

    limit = tests.timeout_seconds if timeout is None else timeout
    try:
        execution = await _execute(runtime, proposal, argv, sandbox, tests, limit)
        raw = execution.output or (execution.note + "\n" if execution.note else "")
        # Redacting a large log takes a while: beside the event loop, with the write.
        log = await anyio.to_thread.run_sync(_redact_and_write, runtime.root / log_rel, raw)
    except OSError as exc:
        with anyio.CancelScope(shield=True):
            await _finish(
                runtime,
                test_run_id,
                {"status": TestRunStatus.ERROR, "summary_md": f"Could not write the test log: {exc.strerror}."},
                actor,
                run,
            )
        raise ToolError(f"write test log {log_rel}: {exc.strerror}") from None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _finish(
                runtime,
                test_run_id,
                {"status": TestRunStatus.ERROR, "summary_md": "Test run was cancelled before it finished."},
                actor,
                run,
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
        run,
    )
    return record, log


async def _execute(
    runtime: Project,
    proposal: ProposalRef | None,
    argv: list[str],
    sandbox: sandbox_runner.Sandbox,
    tests: TestsPolicy,
    timeout: float,
) -> test_exec.Execution:
    """Worktree, patch, command, cleanup. Setup failures (not a git repository, a patch that no
    longer applies, a program not found or not grantable) are an `error` outcome with the reason, not a raise."""
    patch = await anyio.to_thread.run_sync(read_patch, runtime.root, proposal.revision) if proposal else None
    socket_dir, excluded = private_paths(runtime)
    try:
        tree = await scratch.create(runtime.root, patch, excluded=excluded)
    except ToolError as exc:
        return test_exec.Execution(TestRunStatus.ERROR, None, "", str(exc))
    try:
        if missing := await anyio.to_thread.run_sync(_program_missing, argv, tree.path):
            return test_exec.Execution(TestRunStatus.ERROR, None, "", missing)
        spec = None
        if sandbox.usable:
            try:
                spec = sandbox_runner.build_spec(
                    sandbox.kind,
                    argv,
                    tree.path,
                    root=runtime.root,
                    socket_dir=socket_dir,
                    memory_bytes=tests.memory_mb * 1024 * 1024,
                    max_processes=tests.max_processes,
                    read_paths=(*tests.read_paths, *test_suggest.venv_of(runtime.root, argv)),
                    executable=sandbox.executable,
                    bwrap_size=sandbox.bwrap_size,
                )
            except sandbox_runner.ProgramRefused as exc:  # an install the sandbox cannot be given alone
                return test_exec.Execution(TestRunStatus.ERROR, None, "", str(exc))
        return await test_exec.execute(argv, tree.path, timeout=timeout, spec=spec)
    finally:
        with anyio.CancelScope(shield=True):
            await scratch.remove(tree)


def _redact_and_write(path: Path, text: str) -> str:
    """Store `text` redacted (0600) and return what was stored."""
    log = redact(text)
    write_atomic(path, log, mode=0o600)
    return log


async def get_result(r: Reader | Tx, root: Path, test_run_id: str) -> tuple[TestRun, str, str]:
    """The run, its log, and why the log could not be read (`""` when it could)."""
    record = await get_test_run(r, test_run_id)
    if not record.log_path:
        return record, "", ""
    path = root / record.log_path

    def read() -> str:
        return Path(path).read_text(encoding="utf-8", errors="replace")

    try:
        return record, await anyio.to_thread.run_sync(read), ""
    except OSError as exc:
        return record, "", f"read test log {record.log_path}: {exc.strerror}"


async def submit_evidence(tx: Tx, req: EvidenceArgs, actor: Actor) -> TestRun:
    """Store a tester session's own report (status `reported`); never a pass."""
    if not actor.on_session:
        raise PermissionDenied("test.evidence.submit is only available to tester capability sessions")
    if actor.role != "tester":
        raise PermissionDenied(f"operation test.evidence.submit is not permitted for role {actor.role}")
    if actor.bound_proposal_id and req.proposal_id != actor.bound_proposal_id:
        raise PermissionDenied("argument proposal_id does not match the session capability")
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
            "status": TestRunStatus.REPORTED,
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
        await resolve(tx, actor.runs, owner=proposal.run_id),
        EventType.TEST_EVIDENCE_REPORTED,
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
    """Host-verified passes of `revision`: what `tests_required` accepts (`reported` never, nor
    a run narrowed to some paths or tests)."""
    return [
        r
        for r in runs
        if r.proposal_id
        and revision
        and r.revision == revision
        and r.status == TestRunStatus.PASSED
        and r.outcome != NARROWED
    ]
