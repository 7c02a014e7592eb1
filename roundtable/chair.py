"""The Chair: one tick for one run as a function of the stored state, and the loop around it.

A tick (spec/tools.md §3.14.2 with DESIGN §4.6, §4.9, §4.22), in order:

1. expire overdue turns (`agent.turn_expired`): scheduled but not started within
   `chair.turn_start_timeout`, started but not completed within `chair.turn_timeout`, or
   requested by an agent that is no longer enabled; then schedule the oldest unfinished turn
   request if no turn is in flight;
2. assign open, unassigned tasks to the enabled implementers, least loaded first
   (round-robin when loads are equal), each with a `task.assigned` event;
3. request reviews for pending proposals: once per proposal revision, through the
   `proposal.request_review` tool, then a `proposal.review_requested` event;
4. sweep claims past `expires_at` to `expired` (one `claim.expired` event each).

The spec schedules turns last; we do it first because every item is its own write transaction
and, with many agents writing, each waits its turn for the writer: scheduling last made the
hand-over after `agent.turn_complete` wait behind every assignment and review request (28 s
under the soak's load instead of milliseconds). Turn scheduling depends on none of the others.

Every item runs in its own write transaction. An item that fails is recorded as a `chair.error`
event (once per item and message, so a broken proposal does not flood the log) and the tick goes
on: one bad proposal or run never stalls the others.

`ChairLoop` ticks every active run every `chair.tick_interval` seconds and wakes at once when a
turn is requested or completed in this process (the change bus) or when `wake()` is called.
Writes by other processes reach it at the next period.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.domain import CHAIR_ID, OPEN_PROPOSAL_STATUSES
from roundtable.errors import RoundtableError
from roundtable.services import claims as claims_service
from roundtable.services import runs as runs_service
from roundtable.services import turns as turns_service
from roundtable.services.agents import enabled_with_role
from roundtable.services.agents import sync_agents as _sync_agents
from roundtable.services.tasks import BLOCKED_STATUSES, TERMINAL_STATUSES, assign_task
from roundtable.store.records import Proposal, Task
from roundtable.store.watch import CommitWatch
from roundtable.tools.context import CHAIR

if TYPE_CHECKING:
    from roundtable.bus import Subscription
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.chair")

SYSTEM_ACTOR = "system"
REVIEW_EVENT = "proposal.review_requested"
ERROR_EVENT = "chair.error"
ASSIGN_BATCH = 200
# With nothing committed, the loop still runs a full cycle every SWEEP_TICKS periods (1-10 s):
# turn deadlines and claim TTLs change with time alone.
SWEEP_TICKS = 5
# Changes that make the Chair tick at once instead of at its next period.
WAKE_EVENTS = frozenset({"agent.turn_completed", "agent.turn_requested"})
# Events that send the fast path (`ChairLoop._hand_over_turns`) to schedule a run's next turn.
TURN_EVENTS = WAKE_EVENTS
WAKE_TOOLS = frozenset({"task.create", "proposal.create", "proposal.attach_patch"})


@dataclass
class TickReport:
    """What one tick did for one run."""

    run_id: str
    at: str = ""
    assigned: list[dict[str, str]] = field(default_factory=list)
    reviews_requested: list[dict[str, Any]] = field(default_factory=list)
    claims_expired: list[str] = field(default_factory=list)
    turns_expired: list[dict[str, Any]] = field(default_factory=list)
    scheduled: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def did_anything(self) -> bool:
        return bool(
            self.assigned
            or self.reviews_requested
            or self.claims_expired
            or self.turns_expired
            or self.scheduled
            or self.errors
        )

    def lines(self) -> list[str]:
        """One human-readable line per action (for `run --headless` and logs)."""
        out = [f"assigned {a['task_id']} to {a['agent_id']}" for a in self.assigned]
        out += [
            f"review requested for {r['proposal_id']} (roles: {', '.join(r['roles']) or 'none'})"
            for r in self.reviews_requested
        ]
        out += [f"claim expired {c}" for c in self.claims_expired]
        out += [f"turn {t['request_event_id']} of {t['agent_id']} expired ({t['timeout']})" for t in self.turns_expired]
        if self.scheduled:
            out.append(f"scheduled turn {self.scheduled['request_event_id']} for {self.scheduled['agent_id']}")
        out += [f"error: {e}" for e in self.errors]
        return out or ["nothing to do"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "at": self.at,
            "assigned": self.assigned,
            "reviews_requested": self.reviews_requested,
            "claims_expired": self.claims_expired,
            "turns_expired": self.turns_expired,
            "scheduled": self.scheduled,
            "errors": self.errors,
        }


async def sync_agents(runtime: Runtime) -> None:
    """Synchronise adapter capabilities and agent rows from the configuration (system.md §7.1)."""
    await _sync_agents(runtime)


# --- one tick -----------------------------------------------------------------------------------


async def _record_error(runtime: Runtime, run_id: str, step: str, item: str, error: str, report: TickReport) -> None:
    """Append `chair.error` unless the latest error for this item already says the same."""
    report.errors.append(f"{step} {item}: {error}".strip())
    log.warning("chair tick %s: %s %s failed: %s", run_id, step, item, error)
    try:
        async with runtime.db.write(tool="chair.error") as tx:
            last = await tx.scalar(
                "SELECT payload_json FROM events WHERE run_id = ? AND type = ? AND"
                " json_extract(payload_json, '$.step') = ? AND json_extract(payload_json, '$.item') = ?"
                " ORDER BY id DESC LIMIT 1",
                (run_id, ERROR_EVENT, step, item),
            )
            if last is not None and json.loads(last).get("error") == error:
                return
            await tx.append_event(run_id, ERROR_EVENT, {"step": step, "item": item, "error": error}, actor_id=CHAIR_ID)
    except Exception:  # the error event itself is best effort; the tick goes on
        log.exception("could not record chair.error for run %s", run_id)


def _message(exc: BaseException) -> str:
    if isinstance(exc, RoundtableError):
        return str(exc)
    return f"internal error ({type(exc).__name__})"


async def _assign_tasks(runtime: Runtime, run_id: str, report: TickReport) -> None:
    async with runtime.db.read() as r:
        implementers = await enabled_with_role(r, "Implementer")
        tasks = await r.all(
            Task,
            "SELECT * FROM tasks WHERE status = 'open' AND coalesce(assigned_agent_id, '') = ''"
            " ORDER BY priority, created_at, id",
        )
        if not implementers or not tasks:
            return
        rows = await r.fetchall(
            "SELECT assigned_agent_id, status FROM tasks WHERE coalesce(assigned_agent_id, '') != ''"
        )
    load = {a.id: 0 for a in implementers}
    for row in rows:
        agent_id, status = str(row[0]), str(row[1])
        if agent_id in load and status not in TERMINAL_STATUSES:
            load[agent_id] += 1
    order = [a.id for a in implementers]
    failures: list[tuple[str, str]] = []
    # Many assignments share one transaction (a commit each would make a backlog of a thousand
    # tasks take seconds); each runs under its own savepoint, so a failing one is undone alone.
    for start in range(0, len(tasks), ASSIGN_BATCH):
        async with runtime.db.write(tool="chair.assign") as tx:
            for task in tasks[start : start + ASSIGN_BATCH]:
                # Least loaded first; ties go to the earliest in pool order, which is round-robin.
                agent_id = min(order, key=lambda a: (load[a], order.index(a)))
                await tx.execute("SAVEPOINT chair_assign")
                try:
                    done = await assign_task(tx, run_id, task.id, agent_id, CHAIR_ID)
                except Exception as exc:
                    await tx.execute("ROLLBACK TO chair_assign")
                    await tx.execute("RELEASE chair_assign")
                    failures.append((task.id, _message(exc)))
                    continue
                await tx.execute("RELEASE chair_assign")
                if done:
                    load[agent_id] += 1
                    report.assigned.append({"task_id": task.id, "agent_id": agent_id})
    for task_id, error in failures:
        await _record_error(runtime, run_id, "assign_task", task_id, error, report)


def _revision_key(proposal: Proposal) -> str:
    return proposal.current_revision or f"r{proposal.revision_number}"


async def _request_reviews(runtime: Runtime, run_id: str, report: TickReport) -> None:
    async with runtime.db.read() as r:
        proposals = await r.all(
            Proposal, "SELECT * FROM proposals WHERE status IN ('pending', 'in_review') ORDER BY created_at, id"
        )
        if not proposals:
            return
        done_rows = await r.fetchall(
            "SELECT json_extract(payload_json, '$.proposal_id'), json_extract(payload_json, '$.revision')"
            " FROM events WHERE type = ?",
            (REVIEW_EVENT,),
        )
    done = {(str(a), str(b)) for a, b in done_rows}
    for proposal in proposals:
        revision = _revision_key(proposal)
        if (proposal.id, revision) in done:
            continue
        try:
            roles, reviewers = await _review_via_tool(runtime, proposal)
            payload = {"proposal_id": proposal.id, "reviewers": reviewers, "roles": roles, "revision": revision}
            async with runtime.db.write(tool="chair.review") as tx:
                # The proposal tool may already have announced this revision itself.
                announced = await tx.scalar(
                    "SELECT 1 FROM events WHERE type = ? AND json_extract(payload_json, '$.proposal_id') = ?"
                    " AND json_extract(payload_json, '$.revision') = ? LIMIT 1",
                    (REVIEW_EVENT, proposal.id, revision),
                )
                await tx.execute(
                    "UPDATE proposals SET status = 'in_review', updated_at = ? WHERE id = ? AND status = 'pending'",
                    (clock.now(), proposal.id),
                )
                tx.tables.add("proposals")
                if not announced:
                    await tx.append_event(run_id, REVIEW_EVENT, payload, actor_id=CHAIR_ID, task_id=proposal.task_id)
        except Exception as exc:
            await _record_error(runtime, run_id, "request_review", proposal.id, _message(exc), report)
            continue
        report.reviews_requested.append(payload)


async def _review_via_tool(runtime: Runtime, proposal: Proposal) -> tuple[list[str], list[dict[str, Any]]]:
    """Run `proposal.request_review` as the Chair: the roles and reviewers the policy requires."""
    result = await runtime.call("proposal.request_review", {"proposal_id": proposal.id}, CHAIR)
    roles = [str(x) for x in result.get("review_roles") or []]
    reviewers = [dict(x) for x in result.get("reviewers") or [] if isinstance(x, dict)]
    return roles, reviewers


async def _sweep_claims(runtime: Runtime, run_id: str, now: str, report: TickReport) -> None:
    try:
        async with runtime.db.write(tool="chair.sweep_claims") as tx:
            swept = await claims_service.expire_due(tx, now, run_id=run_id, actor_id=SYSTEM_ACTOR)
    except Exception as exc:
        await _record_error(runtime, run_id, "sweep_claims", "", _message(exc), report)
        return
    report.claims_expired += [c.id for c in swept]


async def _turns(runtime: Runtime, run_id: str, now: str, report: TickReport) -> None:
    chair = runtime.config.chair
    try:
        async with runtime.db.write(tool="chair.expire_turns", urgent=True) as tx:
            rows = await tx.fetchall("SELECT id FROM agents WHERE is_enabled = 1")
            expired = await turns_service.expire_overdue(
                tx,
                run_id,
                now,
                start_timeout=chair.turn_start_timeout,
                turn_timeout=chair.turn_timeout,
                enabled={str(row[0]) for row in rows},
            )
        report.turns_expired += expired
    except Exception as exc:
        await _record_error(runtime, run_id, "expire_turns", "", _message(exc), report)
    try:
        async with runtime.db.write(tool="chair.schedule", urgent=True) as tx:
            report.scheduled = await turns_service.schedule_next(tx, run_id)
    except Exception as exc:
        await _record_error(runtime, run_id, "schedule_turn", "", _message(exc), report)


async def tick(runtime: Runtime, run_id: str, *, now: str | None = None, shared_steps: bool = True) -> TickReport:
    """One Chair tick for `run_id` (see the module docstring). `now` overrides the clock used
    for claim and turn expiry. Never raises for a failing item; see `TickReport.errors`.

    Task assignment and review requests look at every open task and proposal, not at one run's:
    a cycle over many runs does them once (`shared_steps=False` for the other runs)."""
    at = now or clock.now()
    report = TickReport(run_id=run_id, at=at)
    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [("turns", lambda: _turns(runtime, run_id, at, report))]
    if shared_steps:
        steps += [
            ("assign_tasks", lambda: _assign_tasks(runtime, run_id, report)),
            ("request_reviews", lambda: _request_reviews(runtime, run_id, report)),
        ]
    steps.append(("sweep_claims", lambda: _sweep_claims(runtime, run_id, at, report)))
    for name, step in steps:
        try:
            await step()
        except Exception as exc:  # a step's own read failed; record it and go on
            await _record_error(runtime, run_id, name, "", _message(exc), report)
    return report


# --- convergence and the finite run loop -------------------------------------------------------


async def converge(runtime: Runtime, run_id: str) -> tuple[str, str]:
    """The run status convergence asks for, and why (spec/tools.md §3.14.3)."""
    async with runtime.db.read() as r:
        if await turns_service.has_outstanding(r, run_id):
            return "active", "pending_agent_turn"
        task_statuses = [str(row[0]) for row in await r.fetchall("SELECT status FROM tasks")]
        proposal_statuses = [str(row[0]) for row in await r.fetchall("SELECT status FROM proposals")]
    if not task_statuses and not proposal_statuses:
        return "active", "awaiting_initial_work"
    active = any(s not in BLOCKED_STATUSES and s not in TERMINAL_STATUSES for s in task_statuses) or any(
        s in OPEN_PROPOSAL_STATUSES for s in proposal_statuses
    )
    blocked = any(s in BLOCKED_STATUSES for s in task_statuses)
    if not active and not blocked:
        return "completed", "all_tasks_and_proposals_terminal"
    if not active:
        return "blocked", "all_remaining_tasks_blocked"
    return "active", "work_remains"


async def end_converged(runtime: Runtime, run_id: str, status: str, reason: str, iterations: int) -> None:
    """End a run whose work converged (`completed` or `blocked`) with its `orchestrator.<status>`
    event — the one ending both loops share."""
    await runs_service.end_run(runtime, run_id, status)
    async with runtime.db.write(tool="chair.loop") as tx:
        await tx.append_event(
            run_id, f"orchestrator.{status}", {"iterations": iterations, "reason": reason}, actor_id=CHAIR_ID
        )


@dataclass
class LoopResult:
    """How a finite run loop ended."""

    iterations: int
    status: str  # the run's status afterwards
    reason: str  # iteration_limit, all_tasks_and_proposals_terminal, …, retry_limit_exhausted
    reports: list[TickReport] = field(default_factory=list)
    error: str = ""


async def run_loop(
    runtime: Runtime,
    run_id: str,
    *,
    max_iterations: int,
    interval: float,
    retry_backoff: float = 0.25,
    max_consecutive_errors: int = 5,
    on_tick: Callable[[int, TickReport, tuple[str, str]], None] | None = None,
) -> LoopResult:
    """The finite loop of `roundtable run` (system.md §7.4): tick + convergence, at most
    `max_iterations` times (≤ 0: until convergence), ending the run when it converges."""
    iterations = 0
    errors = 0
    reports: list[TickReport] = []
    while max_iterations <= 0 or iterations < max_iterations:
        iterations += 1
        try:
            report = await tick(runtime, run_id)
            status, reason = await converge(runtime, run_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            errors += 1
            text = _message(exc)
            if errors >= max_consecutive_errors:
                await runs_service.end_run(runtime, run_id, "failed")
                async with runtime.db.write(tool="chair.loop") as tx:
                    await tx.append_event(
                        run_id, "orchestrator.failed", {"iterations": iterations, "error": text}, actor_id=CHAIR_ID
                    )
                return LoopResult(iterations, "failed", "retry_limit_exhausted", reports, text)
            async with runtime.db.write(tool="chair.loop") as tx:
                await tx.append_event(
                    run_id,
                    "orchestrator.retry",
                    {
                        "iteration": iterations,
                        "attempt": errors,
                        "max_attempts": max_consecutive_errors,
                        "error": text,
                        "next_retry_delay": f"{round(retry_backoff * 1000)}ms",
                    },
                    actor_id=CHAIR_ID,
                )
            await asyncio.sleep(retry_backoff)
            continue
        errors = 0
        reports.append(report)
        if on_tick is not None:
            on_tick(iterations, report, (status, reason))
        if status in ("completed", "blocked"):
            await end_converged(runtime, run_id, status, reason, iterations)
            return LoopResult(iterations, status, reason, reports)
        if max_iterations <= 0 or iterations < max_iterations:
            await asyncio.sleep(interval)
    return LoopResult(iterations, "active", "iteration_limit", reports)


# --- the continuous loop -------------------------------------------------------------------------


@dataclass
class ChairState:
    """What the console shows about the Chair."""

    last_tick_at: str = ""
    next_tick_at: str = ""
    ticks: int = 0
    last_error: str = ""
    paused: bool = False


class ChairLoop:
    """Tick every active run every `chair.tick_interval` seconds until cancelled.

    Wakes at once on `agent.turn_requested` / `agent.turn_completed` committed in this process,
    on task or proposal creation, and on `wake()`. While paused it keeps waiting but does not
    tick. A run whose tick raises backs off (1 s doubling to 30 s) without delaying the others.

    A cycle costs what changed: when nothing was committed since the last full cycle (by anyone:
    `PRAGMA data_version`, see `store/watch.py`) the cycle skips the ticks, except for a full
    sweep every `SWEEP_TICKS` periods (clamped to 1-10 s) that catches what only time changes —
    turn deadlines and claim TTLs.
    """

    def __init__(self, runtime: Runtime, *, interval: float | None = None, converge_run_id: str = "") -> None:
        """`interval` overrides `chair.tick_interval`. With `converge_run_id` (the interactive
        `roundtable run`), convergence is checked for that run after each cycle: when it is
        `completed` or `blocked` the run is ended (with its `orchestrator.*` event) and `run()`
        returns; `converged` then holds (status, reason)."""
        self.runtime = runtime
        self.interval = interval
        self.converge_run_id = converge_run_id
        self.converged: tuple[str, str] | None = None
        self.state = ChairState()
        self.last_reports: dict[str, TickReport] = {}
        self._wake = asyncio.Event()
        self._backoff: dict[str, tuple[float, float]] = {}  # run_id -> (delay, retry_at monotonic)
        self._active_runs = 0
        self._cycle_failed = False
        self._commits = CommitWatch(runtime.db.path)
        self._next_sweep = 0.0
        self.skipped_cycles = 0

    def health(self) -> str:
        """`degraded` (run discovery failed or a run is backing off), `healthy-idle` (no active
        runs) or `ready` — system.md §7.6.3."""
        if self._cycle_failed or self._backoff:
            return "degraded"
        return "ready" if self._active_runs else "healthy-idle"

    @property
    def paused(self) -> bool:
        return self.state.paused

    def pause(self) -> None:
        self.state.paused = True

    def resume(self) -> None:
        self.state.paused = False
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    def _sweep_period(self) -> float:
        every = self.interval if self.interval is not None else self.runtime.config.chair.tick_interval
        return min(10.0, max(1.0, SWEEP_TICKS * every))

    async def cycle(self) -> list[TickReport]:
        """One period of the loop: a full `tick_all()` if anything was committed since the last
        one or a sweep is due, else nothing (an idle cycle reads one pragma)."""
        try:
            changed = await self._commits.changed()
        except Exception:
            changed = True  # cannot tell: do the work
        if not changed and time.monotonic() < self._next_sweep:
            self.skipped_cycles += 1
            self.state.ticks += 1
            self.state.last_tick_at = clock.now()
            return []
        reports = await self.tick_all()
        self._next_sweep = time.monotonic() + self._sweep_period()
        return reports

    async def close(self) -> None:
        await self._commits.close()

    async def tick_all(self) -> list[TickReport]:
        """One full cycle: tick every active run that is not backing off."""
        reports: list[TickReport] = []
        try:
            run_ids = await runs_service.active_run_ids(self.runtime)
        except Exception:
            self._cycle_failed = True
            raise
        self._cycle_failed = False
        self._active_runs = len(run_ids)
        shared_done = False
        for run_id in run_ids:
            delay_until = self._backoff.get(run_id)
            if delay_until and delay_until[1] > time.monotonic():
                continue
            try:
                report = await tick(self.runtime, run_id, shared_steps=not shared_done)
                shared_done = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = min(30.0, (delay_until[0] * 2) if delay_until else 1.0)
                self._backoff[run_id] = (delay, time.monotonic() + delay)
                self.state.last_error = f"{run_id}: {_message(exc)}"
                log.exception("chair tick failed for run %s", run_id)
                continue
            self._backoff.pop(run_id, None)
            self.last_reports[run_id] = report
            reports.append(report)
            if report.errors:
                self.state.last_error = f"{run_id}: {report.errors[-1]}"
        for run_id in list(self._backoff):
            if run_id not in run_ids:
                del self._backoff[run_id]
        self.state.ticks += 1
        self.state.last_tick_at = clock.now()
        return reports

    async def run(self) -> None:
        """Tick until cancelled."""
        sub = self.runtime.bus.subscribe()
        fast = asyncio.create_task(self._hand_over_turns(), name="chair-turns")
        try:
            while True:
                if not self.state.paused:
                    try:
                        await self.cycle()
                        if self.converge_run_id and await self._converge():
                            return
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # e.g. the run list could not be read
                        self.state.last_error = _message(exc)
                        log.exception("chair cycle failed")
                every = self.interval if self.interval is not None else self.runtime.config.chair.tick_interval
                interval = max(0.01, every)
                self.state.next_tick_at = clock.format_ns(clock.now_ns() + int(interval * 1e9))
                await self._wait(sub, interval)
        finally:
            fast.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await fast
            sub.close()
            with contextlib.suppress(Exception):
                await self.close()

    async def _hand_over_turns(self) -> None:
        """The fast path for turns: when a turn is requested or completed, schedule that run's
        next turn at once instead of waiting for the current full tick (which, under heavy
        write load, can take seconds of assignments and review requests). Scheduling checks
        that no turn is in flight inside its own transaction, so running beside a tick is safe."""
        sub = self.runtime.bus.subscribe()
        try:
            while True:
                change = await sub.get()
                if change is None:
                    continue
                runs = {str(e.get("run_id", "")) for e in change.events if e.get("type") in TURN_EVENTS}
                for extra in sub.drain():  # a burst of completions needs one pass per run
                    runs |= {str(e.get("run_id", "")) for e in extra.events if e.get("type") in TURN_EVENTS}
                runs.discard("")
                if self.state.paused:
                    continue
                for run_id in sorted(runs):
                    await _turns(self.runtime, run_id, clock.now(), TickReport(run_id=run_id, at=clock.now()))
        finally:
            sub.close()

    async def _converge(self) -> bool:
        run_id = self.converge_run_id
        status, reason = await converge(self.runtime, run_id)
        if status not in ("completed", "blocked"):
            return False
        await end_converged(self.runtime, run_id, status, reason, self.state.ticks)
        self.converged = (status, reason)
        return True

    async def _wait(self, sub: Subscription, timeout: float) -> None:
        """Until `timeout` passes, `wake()` is called or a relevant change is published."""
        if self._wake.is_set():
            self._wake.clear()
            return
        deadline = time.monotonic() + timeout
        wake_task = asyncio.ensure_future(self._wake.wait())
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._wake.is_set():
                    break
                change_task = asyncio.ensure_future(sub.get(remaining))
                done, _ = await asyncio.wait({wake_task, change_task}, return_when=asyncio.FIRST_COMPLETED)
                if change_task not in done:
                    change_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await change_task
                    break
                change = change_task.result()
                if change is None:
                    break
                if change.event_types & WAKE_EVENTS or change.tool in WAKE_TOOLS:
                    break
        finally:
            wake_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await wake_task
            self._wake.clear()
