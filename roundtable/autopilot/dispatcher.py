"""The dispatcher: in auto mode the owner launches the agents the table's state calls for.

It runs beside the Chair in every owner that hosts the supervisor (`run`, `start`). Each pass
reads what is needed (`autopilot.work`) and, within the limits of the `autopilot` config section:

- a run with a goal and no tasks gets a planning task for the planner (`autopilot.planner_agent`,
  default the first enabled architect), and the planner is launched for it: its capability may
  create the run's tasks;
- a task assigned to an implementer gets that agent's adapter launched for it;
- a review requested gets the reviewers, security and tester the policy named launched for the
  proposal's current revision, and the configured tests run on that revision (in the sandbox);
- a blocking vote or review, a failed test, or the operator's line comments relaunch the author
  with the reason (and the comments on that revision) in its briefing.

Every launch is the operator's launch path — the `session.launch` operation, the supervisor, the
capability, the isolation, the audit — with `dispatcher` as the principal, and an
`autopilot.dispatched` event saying why. A session that exits non-zero or outlives its time is
retried after `retry_backoff_seconds`, doubled per attempt; past `max_attempts` the task is blocked
with the reason (`task.blocked`). A harness that is not installed blocks its task at once
(`codex not found on PATH`). After `max_consecutive_failures` failed sessions in a row the
dispatcher turns itself off (`autopilot.stopped`, `status().stopped_reason`). Nothing is launched
for work whose task, run or UTC day has reached its budget (`budgets:`): a task over its budget is
blocked with the reason (`budget: …`); work of a run or day over budget waits (`autopilot.skipped`
says so once). A session the gateway stopped for a budget (exit reason `budget: …`) is not a failed
session: the budget decides what happens next. A session that ended because the model API
refused the operator's credential (or there was none) is final: no retry can succeed, so the
dispatcher stops at once with that reason (`autopilot.stopped`), whatever `max_attempts` says.

The console toggles it with `set_enabled`, which records `autopilot.enabled` / `autopilot.disabled`
with the operator as principal; `status()` is what its header badge shows.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from roundtable import clock
from roundtable.autopilot.settings import Overrides, Settings, settings
from roundtable.autopilot.work import Job, PlanNeed, ReadyNeed, TestNeed, Work, find, ready_for_operator
from roundtable.clock import SYSTEM, Clock
from roundtable.domain import EventType, TaskStatus
from roundtable.errors import RoundtableError, ValidationError
from roundtable.services.args import as_one_line
from roundtable.services.sessions import budgets, preflight
from roundtable.services.sessions.budgets import Crossing
from roundtable.services.sessions.records import SessionExit
from roundtable.tools.context import DISPATCHER, OPERATOR, Caller

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.autopilot")

PASS_INTERVAL = 1.0
# Files a planning task may read: the repository's top level, without hidden entries.
_PLAN_SKIP = frozenset({"node_modules", "__pycache__"})


class SessionHost(Protocol):
    """What the dispatcher needs of the supervisor (the owner passes its own)."""

    def add_exit_listener(self, listener: Callable[[SessionExit], None]) -> None: ...

    def live_roles(self) -> dict[str, str]:
        """session id → capability role of every running session."""
        ...

    def running(self, agent_id: str, task_id: str, proposal_id: str = "") -> bool:
        """A session of this agent for this work is running (an operator's launch included)."""
        ...

    async def missing_harness(self, agent_id: str, adapter: str = "") -> str:
        """Why the agent's harness cannot start here (`codex not found on PATH`), or ''."""
        ...


@dataclass(frozen=True)
class DispatcherStatus:
    """What the console's badge and Agents pane show about the autopilot."""

    enabled: bool
    mode: str  # auto | manual
    active_sessions: int
    consecutive_failures: int
    stopped_reason: str


@dataclass
class _Attempts:
    count: int = 0
    retry_at: float = 0.0  # monotonic
    last_error: str = ""
    blocked: bool = False
    # Its task was blocked (`task.blocked` recorded). A blocked task is no job, so seeing the job
    # again means the task was reopened: its attempts start anew.
    task_blocked: bool = False


@dataclass
class _Dispatch:
    job: Job
    attempt: int
    started: float
    timed_out: bool = False


@dataclass
class PassReport:
    """What one pass did (tests, the headless loop)."""

    dispatched: list[Job] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)
    blocked: list[tuple[str, str]] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    waiting: int = 0  # work held back by backoff or limits
    awaiting: list[str] = field(default_factory=list)  # proposals put in the operator's inbox


class Dispatcher:
    """Launches agents for the work while enabled; see the module docstring."""

    def __init__(
        self,
        runtime: Runtime,
        host: SessionHost,
        *,
        enabled: bool = False,
        overrides: Overrides | None = None,
        session_timeout: float | None = None,
        interval: float = PASS_INTERVAL,
        clock: Clock = SYSTEM,
    ) -> None:
        self.runtime = runtime
        self.clock = clock  # backoffs, the launch rate, session timeouts and the pass period
        self.host = host
        self.overrides = overrides or Overrides()
        self.session_timeout = session_timeout
        self.interval = interval
        self._enabled = enabled
        self._stopped_reason = ""
        self._failures = 0
        self._attempts: dict[str, _Attempts] = {}
        self._sessions: dict[str, _Dispatch] = {}
        # Sessions that ended before their launch returned (a process that dies at once).
        self._early_exits: dict[str, SessionExit] = {}
        self._background: dict[str, asyncio.Task[None]] = {}
        self._planned: set[str] = set()
        self._ask_failed: set[tuple[str, str]] = set()
        self._ready_cache: tuple[int, list[ReadyNeed]] | None = (
            None  # (bus version, what was ready)  # (proposal, revision) whose approval request failed
        )
        self._run_counts: dict[str, int] = {}
        self._launch_times: collections.deque[float] = collections.deque()  # monotonic, the last minute's
        self._rate_noted = float("-inf")  # when the last `autopilot.rate_limited` was recorded (never yet)
        self._loaded_runs: set[str] = set()
        self._budget_noted: set[tuple[str, str]] = set()  # (scope, key) whose hold was recorded
        self._limit_noted: set[str] = set()  # runs whose max_iterations hold was recorded
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._closing = False
        self.last_pass = PassReport()
        # Times round the loop (a pass, or a look while off): what a caller waits on to know the
        # loop has seen the state as it is now.
        self.cycles = 0
        host.add_exit_listener(self._on_exit)

    # --- the console's interface ------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self._enabled

    def status(self) -> DispatcherStatus:
        return DispatcherStatus(
            enabled=self._enabled,
            mode="auto" if self._enabled else "manual",
            active_sessions=len(self._sessions),
            consecutive_failures=self._failures,
            stopped_reason=self._stopped_reason,
        )

    async def set_enabled(self, on: bool, caller: Caller = OPERATOR) -> None:
        """Turn the autopilot on or off, recording `autopilot.enabled` / `autopilot.disabled`
        with `caller` (the operator) as principal. Turning it on clears a self-stop."""
        await self.runtime.call("autopilot.set_enabled", {"enabled": on}, caller)
        self._enabled = on
        if on:
            self._stopped_reason = ""
            self._failures = 0
            self.wake()

    def settings(self) -> Settings:
        return settings(self.runtime.config, self.overrides, self.session_timeout)

    # --- the loop -----------------------------------------------------------------------------

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Pass after every committed change (debounced) and at least every `interval` seconds."""
        with self.runtime.bus.subscribe(maxsize=1024) as changes:
            while not self._closing:
                if self._enabled:
                    try:
                        await self.step()
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("autopilot pass failed")
                self.cycles += 1
                await self._wait(changes)

    async def _wait(self, changes: Any) -> None:
        waker = asyncio.ensure_future(self._wake.wait())
        getter = asyncio.ensure_future(changes.get())
        period = asyncio.ensure_future(self.clock.sleep(self.interval))
        try:
            await asyncio.wait({waker, getter, period}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waker, getter, period):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self._wake.clear()
        await asyncio.sleep(0.05)  # let a burst of commits settle into one pass
        changes.drain()

    @property
    def busy(self) -> bool:
        """A dispatched session or a test run is still going."""
        return bool(self._sessions or self._background)

    async def close(self) -> None:
        self._closing = True
        self.wake()
        for task in list(self._background.values()):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        self._background.clear()

    # --- one pass -----------------------------------------------------------------------------

    async def step(self) -> PassReport:
        """One pass: stop overdue sessions, then launch what the state calls for."""
        async with self._lock:
            report = PassReport()
            self.last_pass = report
            if not self._enabled or self._closing:
                return report
            s = self.settings()
            await self._stop_overdue(s)
            async with self.runtime.db.read() as r:
                work = await find(r, root=self.runtime.root, policy=self.runtime.policy)
            await self._load_counts(work)
            for need in work.plans:
                await self._plan(need, s, report)
            for job in work.jobs:
                if not self._enabled:
                    break
                await self._consider(job, s, report)
            for test in work.tests:
                self._start_tests(test, report)
            async with self.runtime.db.read() as r:
                ready = await self._ready(r, work)
            for waiting in ready:
                if (waiting.proposal_id, waiting.revision) not in self._ask_failed:
                    await self._ask_operator(waiting, report)
            return report

    async def _ready(self, r: Any, work: Work) -> list[ReadyNeed]:
        """`ready_for_operator`, evaluated again only after a commit: it runs every gate of each
        open proposal, and passes come every second while nothing changes."""
        version = self.runtime.bus.version
        if self._ready_cache is None or self._ready_cache[0] != version:
            found = await ready_for_operator(r, self.runtime.root, self.runtime.policy, clock.now(), work)
            self._ready_cache = (version, found)
        return self._ready_cache[1]

    async def _ask_operator(self, need: ReadyNeed, report: PassReport) -> None:
        """Put a revision that waits only for the operator in the approval inbox."""
        args = {
            "subject": f"Apply {need.proposal_id}: {need.title}"[:500],
            "reason_md": f"Revision {need.revision[:12]} passed every gate but yours — {need.summary}. "
            "Approve, then apply it (console: `a`, then `A` on the proposal).",
            "proposal_id": need.proposal_id,
        }
        try:
            await self.runtime.call("human.request_approval", args, DISPATCHER.with_run(need.run_id))
        except RoundtableError as exc:
            log.warning("autopilot could not ask for the approval of %s: %s", need.proposal_id, exc)
            self._ask_failed.add((need.proposal_id, need.revision))  # not again for this revision
            return
        report.awaiting.append(need.proposal_id)

    async def idle(self) -> bool:
        """Nothing running and nothing left to launch (backoff counts as something left)."""
        if self.busy:
            return False
        async with self.runtime.db.read() as r:
            work = await find(r, root=self.runtime.root, policy=self.runtime.policy)
            ready = await self._ready(r, work)
            if self._enabled and any((n.proposal_id, n.revision) not in self._ask_failed for n in ready):
                return False  # an approval request is still to be made
        if work.plans and any(n.run_id not in self._planned for n in work.plans):
            return False
        s = self.settings()
        for job in work.jobs:
            state = self._attempts.get(job.key)
            if state is not None and state.blocked and not state.task_blocked:
                continue
            if self.limit_reached(job.run_id, s):
                continue
            if await self._over_budget(job):
                continue
            return False
        return all(t.key in self._attempts for t in work.tests)

    async def _over_budget(self, job: Job) -> Crossing | None:
        """The first budget the job's task, run or today has reached, or None."""
        config = self.runtime.config.budgets
        if not (config.task.limited or config.run.limited or config.day.limited):
            return None
        async with self.runtime.db.read() as r:
            found = await budgets.reached(r, config, task_id=job.task_id, run_id=job.run_id, day=budgets.today())
        return found[0] if found else None

    def limit_reached(self, run_id: str, s: Settings | None = None) -> bool:
        """The run has had its `max_iterations` dispatches."""
        limit = (s or self.settings()).max_iterations
        return bool(limit) and self._run_counts.get(run_id, 0) >= limit

    async def _load_counts(self, work: Work) -> None:
        """Attempts already recorded for these runs (a restarted owner keeps counting)."""
        from roundtable.services.coordination.autopilot import dispatch_counts

        runs = {j.run_id for j in work.jobs} - self._loaded_runs
        for run_id in sorted(runs):
            async with self.runtime.db.read() as r:
                counts = await dispatch_counts(r, run_id)
            self._run_counts[run_id] = max(self._run_counts.get(run_id, 0), counts.run_total)
            for key, count in counts.by_key.items():
                state = self._attempts.setdefault(key, _Attempts())
                state.count = max(state.count, count)
            self._loaded_runs.add(run_id)

    # --- planning -----------------------------------------------------------------------------

    async def _plan(self, need: PlanNeed, s: Settings, report: PassReport) -> None:
        if need.run_id in self._planned:
            return
        planner = await self._planner(s)
        if not planner:
            self._planned.add(need.run_id)
            await self._record(
                need.run_id,
                EventType.AUTOPILOT_SKIPPED,
                {"reason": "no enabled planner agent (autopilot.planner_agent or an architect) for the goal"},
            )
            return
        body = (
            f"Goal of run {need.run_id}:\n\n{need.goal.strip()}\n\n"
            "Turn this goal into tasks with task_create (title, body_md, readable_paths: the files or "
            "directories each task needs), then mark this planning task completed with task_update_status."
        )
        await self.runtime.call(
            "task.create",
            {
                "title": as_one_line(f"Plan: {need.goal.strip().splitlines()[0][:200]}"),
                "body_md": body,
                "assigned_agent_id": planner,
                "readable_paths": await asyncio.to_thread(_top_level, self.runtime.root),
                "status": TaskStatus.IN_PROGRESS,
                "priority": 1,
            },
            DISPATCHER.with_run(need.run_id),
        )
        self._planned.add(need.run_id)
        report.planned.append(need.run_id)

    async def _planner(self, s: Settings) -> str:
        from roundtable.services.sessions import capabilities

        async with self.runtime.db.read() as r:
            rows = await r.fetchall("SELECT id FROM agents WHERE is_enabled = 1 ORDER BY created_at, id")
        enabled = [str(row[0]) for row in rows]
        if s.planner_agent:
            return s.planner_agent if s.planner_agent in enabled else ""
        planners = sorted((a for a in enabled if capabilities.role_for_agent(a) == "planner"), key=_natural)
        return planners[0] if planners else ""

    # --- sessions -----------------------------------------------------------------------------

    async def _consider(self, job: Job, s: Settings, report: PassReport) -> None:
        if any(d.job.key == job.key for d in self._sessions.values()):
            return
        if self.host.running(job.agent_id, job.task_id, job.proposal_id):
            return  # the operator launched it by hand: not twice
        state = self._attempts.setdefault(job.key, _Attempts())
        if state.task_blocked:  # reopened since it was blocked
            state = self._attempts[job.key] = _Attempts()
        if state.blocked:
            return
        if state.count >= s.max_attempts:
            why = state.last_error or "the work was not done"
            await self._block(job, f"{state.count} attempt(s) failed for {job.agent_id} ({job.reason}): {why}", report)
            return
        if state.retry_at > self.clock.monotonic():
            report.waiting += 1
            return
        missing = await self.host.missing_harness(job.agent_id)
        if missing:
            await self._block(job, missing, report)
            return
        roles = self.host.live_roles()
        if len(roles) >= s.max_sessions or sum(1 for r in roles.values() if r == job.role) >= s.max_sessions_per_role:
            report.waiting += 1
            return
        if self.limit_reached(job.run_id, s):
            report.waiting += 1
            if job.run_id not in self._limit_noted:
                self._limit_noted.add(job.run_id)
                reason = (
                    f"run {job.run_id} has had its {s.max_iterations} launches (autopilot.max_iterations); "
                    f"{job.agent_id} is not launched for {job.task_id}"
                )
                await self._record(job.run_id, EventType.AUTOPILOT_SKIPPED, {"reason": reason, "scope": "iterations"})
            return
        over = await self._over_budget(job)
        if over is not None:
            if over.scope == "task":
                await self._block(job, over.reason, report)
                return
            report.waiting += 1
            if (over.scope, over.key) not in self._budget_noted:
                self._budget_noted.add((over.scope, over.key))
                await self._record(
                    job.run_id, EventType.AUTOPILOT_SKIPPED, {"reason": over.reason, "scope": over.scope}
                )
            return
        if await self._rate_limited(job, s):
            report.waiting += 1
            return
        await self._launch(job, state, s, report)

    async def _rate_limited(self, job: Job, s: Settings) -> bool:
        """`launches_per_minute` launches were made in the last minute: hold this one back
        (recorded once a minute as `autopilot.rate_limited`)."""
        if not s.launches_per_minute:
            return False
        now = self.clock.monotonic()
        while self._launch_times and now - self._launch_times[0] >= 60.0:
            self._launch_times.popleft()
        if len(self._launch_times) < s.launches_per_minute:
            return False
        if now - self._rate_noted >= 60.0:
            self._rate_noted = now
            reason = (
                f"{len(self._launch_times)} launches in the last minute "
                f"(autopilot.launches_per_minute is {s.launches_per_minute})"
            )
            await self._record(job.run_id, EventType.AUTOPILOT_RATE_LIMITED, {"reason": reason, "key": job.key}, job)
        return True

    async def _launch(self, job: Job, state: _Attempts, s: Settings, report: PassReport) -> None:
        state.count += 1
        self._launch_times.append(self.clock.monotonic())
        self._run_counts[job.run_id] = self._run_counts.get(job.run_id, 0) + 1
        args: dict[str, Any] = {"agent_id": job.agent_id, "task_id": job.task_id, "run_id": job.run_id}
        if job.proposal_id:
            args["proposal_id"] = job.proposal_id
        briefing = _briefing(job, state)
        if briefing:
            args["briefing"] = briefing
        try:
            launched = await self.runtime.call("session.launch", args, DISPATCHER.with_run(job.run_id))
        except RoundtableError as exc:
            state.last_error = str(exc)
            state.retry_at = self.clock.monotonic() + s.backoff(state.count)
            await self._record(
                job.run_id, EventType.AUTOPILOT_DISPATCHED, _dispatched(job, state.count, "", str(exc)), job
            )
            if isinstance(exc, ValidationError):
                # Refused before anything started (the work changed under us): an attempt, but
                # not a failed session — it never counts towards stopping the autopilot.
                return
            await self._failed(job, "", -1, str(exc), state, s)
            return
        session_id = str(launched["session"]["id"])
        self._sessions[session_id] = _Dispatch(job, state.count, self.clock.monotonic())
        await self._record(
            job.run_id, EventType.AUTOPILOT_DISPATCHED, _dispatched(job, state.count, session_id, ""), job
        )
        report.dispatched.append(job)
        early = self._early_exits.pop(session_id, None)
        if early is not None:
            self._on_exit(early)

    def _on_exit(self, done: SessionExit) -> None:
        if self._closing:
            return
        # The session stays listed until `_after_exit` has counted it, under the pass lock: a pass
        # running now must not see its job free before its failure, backoff and stop are recorded.
        dispatch = self._sessions.get(done.session_id)
        if dispatch is None:
            if self._lock.locked():  # perhaps ours, its launch not returned yet: `_launch` picks it up
                self._early_exits[done.session_id] = done
                while len(self._early_exits) > 64:  # an operator's sessions are never claimed
                    self._early_exits.pop(next(iter(self._early_exits)))
            return
        if f"exit:{done.session_id}" in self._background:
            return  # already being counted
        task = asyncio.get_running_loop().create_task(self._after_exit(dispatch, done))
        self._background[f"exit:{done.session_id}"] = task  # kept until recorded (busy while it is)
        task.add_done_callback(lambda _t: self._background.pop(f"exit:{done.session_id}", None))

    async def _after_exit(self, dispatch: _Dispatch, done: SessionExit) -> None:
        async with self._lock:
            self._sessions.pop(done.session_id, None)
            s = self.settings()
            job = dispatch.job
            state = self._attempts.setdefault(job.key, _Attempts())
            state.retry_at = self.clock.monotonic() + s.backoff(dispatch.attempt)
            if done.reason.startswith(budgets.REASON_PREFIX):
                # Stopped by the gateway for a budget: not the agent's failure (the pass sees
                # the budget and blocks the task or waits).
                state.last_error = f"session {done.session_id} was stopped: {done.reason}"
                self.wake()
                return
            if done.reason.startswith((preflight.CREDENTIAL_REFUSED, preflight.NO_CREDENTIAL)):
                state.last_error = f"session {done.session_id} ended: {done.reason}"
                await self._stop_for(job, done.session_id, done.reason)
                return
            if dispatch.timed_out:
                why = f"session {done.session_id} ran longer than {s.session_timeout:g}s and was stopped"
            elif done.exit_code != 0:
                why = f"session {done.session_id} exited with code {done.exit_code} ({done.reason})"
            else:
                self._failures = 0
                state.last_error = f"session {done.session_id} ended without finishing the work"
                self.wake()
                return
            state.last_error = why
            await self._failed(job, done.session_id, done.exit_code, why, state, s)
        self.wake()

    async def _stop_for(self, job: Job, session_id: str, reason: str) -> None:
        """Stop the autopilot now: retrying cannot help (the model credential was refused)."""
        if not self._enabled:
            return
        self._enabled = False
        self._stopped_reason = reason
        await self._record(
            job.run_id,
            EventType.AUTOPILOT_STOPPED,
            {"reason": reason, "session_id": session_id, "consecutive_failures": self._failures},
        )
        log.warning("autopilot stopped: %s", reason)

    async def _failed(self, job: Job, session_id: str, code: int, why: str, state: _Attempts, s: Settings) -> None:
        self._failures += 1
        retry = s.backoff(state.count) if state.count < s.max_attempts else None
        await self._record(
            job.run_id,
            EventType.AUTOPILOT_SESSION_FAILED,
            {
                "key": job.key,
                "session_id": session_id,
                "agent_id": job.agent_id,
                "task_id": job.task_id,
                "proposal_id": job.proposal_id,
                "exit_code": code,
                "reason": why,
                "attempt": state.count,
                "max_attempts": s.max_attempts,
                "next_retry_seconds": retry,
            },
            job,
        )
        if self._failures >= s.max_consecutive_failures and self._enabled:
            self._enabled = False
            self._stopped_reason = f"{self._failures} consecutive failed sessions (last: {why})"
            await self._record(
                job.run_id,
                EventType.AUTOPILOT_STOPPED,
                {"reason": self._stopped_reason, "consecutive_failures": self._failures},
            )
            log.warning("autopilot stopped: %s", self._stopped_reason)

    async def _stop_overdue(self, s: Settings) -> None:
        now = self.clock.monotonic()
        for session_id, dispatch in list(self._sessions.items()):
            if dispatch.timed_out or now - dispatch.started < s.session_timeout:
                continue
            dispatch.timed_out = True
            with contextlib.suppress(RoundtableError):
                await self.runtime.call(
                    "session.revoke",
                    {"session_id": session_id, "reason": "autopilot: session timed out"},
                    DISPATCHER.with_run(dispatch.job.run_id),
                )

    async def _block(self, job: Job, reason: str, report: PassReport) -> None:
        state = self._attempts.setdefault(job.key, _Attempts())
        state.blocked = True
        try:
            await self.runtime.call(
                "autopilot.block_task",
                {"task_id": job.task_id, "reason": reason, "run_id": job.run_id},
                DISPATCHER.with_run(job.run_id),
            )
        except RoundtableError as exc:
            log.warning("autopilot could not block task %s: %s", job.task_id, exc)
            return
        state.task_blocked = True
        report.blocked.append((job.task_id, reason))

    # --- host tests ---------------------------------------------------------------------------

    def _start_tests(self, need: TestNeed, report: PassReport) -> None:
        if need.key in self._background or need.key in self._attempts:
            return
        self._attempts[need.key] = _Attempts(count=1)
        task = asyncio.get_running_loop().create_task(self._run_tests(need), name=f"autopilot-{need.key}")
        self._background[need.key] = task
        task.add_done_callback(lambda _t: self._background.pop(need.key, None))
        report.tests.append(need.proposal_id)

    async def _run_tests(self, need: TestNeed) -> None:
        """Run the proposal's allowed expected tests (else every configured command) on its
        revision, in the sandbox; never unsandboxed (that needs the operator's confirmation)."""
        caller = DISPATCHER.with_run(need.run_id)
        try:
            got = await self.runtime.call("proposal.get", {"proposal_id": need.proposal_id}, caller)
            suggested = await self.runtime.call("test.suggest", {"proposal_id": need.proposal_id}, caller)
            allowed = [str(c) for c in suggested.get("commands") or []]
            expected = [str(c) for c in (got.get("proposal") or {}).get("expected_tests") or []]
            commands = [c for c in expected if c in allowed] or allowed
            outcomes = []
            for command in commands:
                result = await self.runtime.call(
                    "test.run", {"command": command, "proposal_id": need.proposal_id}, caller
                )
                run = result.get("test_run") or {}
                outcomes.append({"command": command, "test_run_id": run.get("id"), "status": run.get("status")})
            payload: dict[str, Any] = {"proposal_id": need.proposal_id, "revision": need.revision, "runs": outcomes}
            if not commands:
                payload["note"] = "no configured test command for this proposal"
        except asyncio.CancelledError:
            raise
        except RoundtableError as exc:
            payload = {"proposal_id": need.proposal_id, "revision": need.revision, "runs": [], "error": str(exc)}
        await self._record(need.run_id, EventType.AUTOPILOT_TESTS_RUN, payload)
        self.wake()

    # --- records ------------------------------------------------------------------------------

    async def _record(self, run_id: str, type: str, payload: dict[str, Any], job: Job | None = None) -> None:
        args: dict[str, Any] = {"type": type, "payload": payload, "run_id": run_id}
        if job is not None:
            args["task_id"] = job.task_id
        try:
            await self.runtime.call("autopilot.record", args, DISPATCHER.with_run(run_id))
        except RoundtableError as exc:
            log.warning("autopilot could not record %s: %s", type, exc)


def _dispatched(job: Job, attempt: int, session_id: str, error: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "key": job.key,
        "agent_id": job.agent_id,
        "role": job.role,
        "task_id": job.task_id,
        "proposal_id": job.proposal_id,
        "reason": job.reason,
        "attempt": attempt,
        "session_id": session_id,
    }
    if error:
        out["error"] = error
    return out


def _briefing(job: Job, state: _Attempts) -> str:
    """The reason the agent is launched, for its briefing (and what went wrong before). What
    another agent or a test wrote is quoted as data, capped and labelled with its author."""
    from roundtable.services.sessions.briefing import quote

    lines = [f"Why you were launched: {job.reason.replace('_', ' ')}.", job.detail]
    if job.quote:
        lines.append(quote(job.quote_author, job.quote))
    if job.comments:
        lines.append("Comments on the revision (path:line — body (author)):")
        lines.append(job.comments)
    if state.count > 1 and state.last_error:
        lines.append(f"Attempt {state.count}; the previous one: {state.last_error}")
    return "\n".join(line for line in lines if line)


def _natural(agent_id: str) -> tuple[str, int]:
    head, _, tail = agent_id.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (agent_id, 0)


def _top_level(root: Any) -> list[str]:
    """The repository's visible top-level entries (what a planner may read)."""
    from roundtable.services.repository.pathguard import is_sensitive_path

    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [n for n in names if not n.startswith(".") and n not in _PLAN_SKIP and not is_sensitive_path(n)][:200]
