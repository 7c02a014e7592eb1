"""The continuous Chair loop (`ChairLoop`): tick every active run every `chair.tick_interval`
seconds until cancelled, in the owner process.

It wakes at once when a turn is requested or completed in this process (the change bus) or when
`wake()` is called, and schedules a run's next turn on a fast path beside the full ticks. Writes
by other processes reach it at the next period. With `converge_run_id` (the interactive
`roundtable run`) it ends that run when it converges, as the finite loop does (`convergence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundtable import clock
from roundtable.chair.convergence import settle
from roundtable.chair.report import TickReport
from roundtable.chair.tick import tick, turns
from roundtable.clock import SYSTEM, Clock
from roundtable.domain import TurnEvent
from roundtable.services.coordination import runs as runs_service
from roundtable.services.coordination.chair_steps import error_text

if TYPE_CHECKING:
    from roundtable.bus import Subscription
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.chair")

# With nothing committed, the loop still runs a full cycle every SWEEP_TICKS periods (1-10 s):
# turn deadlines and claim TTLs change with time alone.
SWEEP_TICKS = 5
# Changes that make the Chair tick at once instead of at its next period.
WAKE_EVENTS = frozenset({TurnEvent.COMPLETED, TurnEvent.REQUESTED})
# Events that send the fast path (`ChairLoop._hand_over_turns`) to schedule a run's next turn
# (an expiry too: a session that exited hands its turn back with one).
TURN_EVENTS = WAKE_EVENTS | {TurnEvent.EXPIRED}
WAKE_TOOLS = frozenset({"task.create", "proposal.create", "proposal.attach_patch"})


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
    the change bus counts this process's commits and, through the store's `PRAGMA data_version`
    watch, other processes'; see `store/watch.py`) the cycle skips the ticks, except for a full
    sweep every `SWEEP_TICKS` periods (clamped to 1-10 s) that catches what only time changes —
    turn deadlines and claim TTLs.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        interval: float | None = None,
        converge_run_id: str = "",
        clock: Clock = SYSTEM,
    ) -> None:
        """`interval` overrides `chair.tick_interval`. With `converge_run_id` (the interactive
        `roundtable run`), convergence is checked for that run after each cycle: when it is
        `completed` or `blocked` the run is ended (with its `orchestrator.*` event) and `run()`
        returns; `converged` then holds (status, reason). `clock` is what its periods, sweeps
        and backoffs are measured and waited on (a test's `VirtualClock`)."""
        self.runtime = runtime
        self.clock = clock
        self.interval = interval
        self.converge_run_id = converge_run_id
        self.converged: tuple[str, str] | None = None
        self.state = ChairState()
        self.last_reports: dict[str, TickReport] = {}
        self._wake = asyncio.Event()
        self._backoff: dict[str, tuple[float, float]] = {}  # run_id -> (delay, retry_at monotonic)
        self._active_runs = 0
        self._cycle_failed = False
        self._seen_version = -1
        runtime.db.watch_commits()  # other processes' commits reach the bus too
        self._next_sweep = 0.0
        self.skipped_cycles = 0

    def health(self) -> str:
        """`degraded` (run discovery failed or a run is backing off), `healthy-idle` (no active
        runs) or `ready`."""
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
        one or a sweep is due, else nothing. "Committed" is the change bus's count, which the
        store's one commit watch (`Database.watch_commits`) also bumps for other processes'
        writes: an idle cycle reads nothing at all."""
        version = self.runtime.bus.version
        changed, self._seen_version = version != self._seen_version, version
        if not changed and self.clock.monotonic() < self._next_sweep:
            self.skipped_cycles += 1
            self.state.ticks += 1
            self.state.last_tick_at = clock.now()
            return []
        reports = await self.tick_all()
        self._next_sweep = self.clock.monotonic() + self._sweep_period()
        return reports

    async def close(self) -> None:
        """Nothing to release (the commit watch belongs to the store)."""

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
        for run_id in run_ids:
            delay_until = self._backoff.get(run_id)
            if delay_until and delay_until[1] > self.clock.monotonic():
                continue
            try:
                report = await tick(self.runtime, run_id)  # each run assigns and reviews its own work
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                delay = min(30.0, (delay_until[0] * 2) if delay_until else 1.0)
                self._backoff[run_id] = (delay, self.clock.monotonic() + delay)
                self.state.last_error = f"{run_id}: {error_text(exc)}"
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
                        self.state.last_error = error_text(exc)
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
                    await turns(self.runtime, run_id, clock.now(), TickReport(run_id=run_id, at=clock.now()))
        finally:
            sub.close()

    async def _converge(self) -> bool:
        status, reason, ended = await settle(self.runtime, self.converge_run_id, self.state.ticks)
        if ended:
            self.converged = (status, reason)
        return ended

    async def _wait(self, sub: Subscription, timeout: float) -> None:
        """Until `timeout` passes, `wake()` is called or a relevant change is published."""
        if self._wake.is_set():
            self._wake.clear()
            return
        wake_task = asyncio.ensure_future(self._wake.wait())
        period = asyncio.ensure_future(self.clock.sleep(timeout))
        try:
            while not period.done() and not self._wake.is_set():
                change_task = asyncio.ensure_future(sub.get())
                done, _ = await asyncio.wait({wake_task, change_task, period}, return_when=asyncio.FIRST_COMPLETED)
                if change_task not in done:
                    change_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await change_task
                    break
                change = change_task.result()
                if change is None or change.event_types & WAKE_EVENTS or change.tool in WAKE_TOOLS:
                    break
        finally:
            for task in (wake_task, period):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self._wake.clear()
