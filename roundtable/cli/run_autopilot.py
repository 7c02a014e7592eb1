"""`roundtable run --headless --autopilot`: the Chair and the dispatcher drive one run until
the table waits for the operator, the run converges, or the autopilot stops itself.

The owner hosts the supervisor and the dispatcher (no listeners); the Chair loop ticks the run
(turns, assignments, review requests) and ends it when it converges; the dispatcher launches the
agents the state calls for. The loop ends when nothing runs and nothing is left to launch for a
few consecutive checks (`awaiting_operator` when a proposal is open, else `idle`), when the run
converges (`completed` / `blocked`), when the dispatcher stops itself (`autopilot_stopped`), or
after `--ticks` Chair cycles when given. Each dispatch, new task, proposal, vote and test result
is echoed as it is committed; failures and blocks are the owner log's warnings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roundtable.domain import EventType

if TYPE_CHECKING:
    from roundtable.owner import Owner
    from roundtable.runtime import Runtime

# The table is quiet when the dispatcher is idle at QUIET_CHECKS checks in a row, QUIET_PERIOD
# seconds apart: the dispatcher and the Chair act on every commit within a fraction of that, so a
# quiet table is seen 0.6 s after its last change, whatever the Chair's interval.
QUIET_CHECKS = 3
QUIET_PERIOD = 0.2


@dataclass(frozen=True)
class AutopilotResult:
    status: str  # the run's status afterwards
    reason: str  # awaiting_operator | idle | completed/blocked reason | autopilot_stopped | iteration_limit
    seconds: float
    error: str = ""


def describe(event: dict[str, Any]) -> str | None:
    """One line for an event worth showing during a headless autopilot run. Failures, blocks and
    the autopilot's stop are warnings the owner's event log already prints (`roundtable.logs`)."""
    kind = str(event.get("type", ""))
    p = event.get("payload")
    if not isinstance(p, dict):
        try:
            p = json.loads(event.get("payload_json") or "{}")
        except ValueError:
            p = {}
    if kind == EventType.AUTOPILOT_DISPATCHED:
        target = p.get("proposal_id") or p.get("task_id")
        failed = f" — launch failed: {p['error']}" if p.get("error") else ""
        return f"dispatched {p.get('agent_id')} for {target} ({p.get('reason')}, attempt {p.get('attempt')}){failed}"
    if kind == EventType.AUTOPILOT_TESTS_RUN:
        runs = ", ".join(f"{r.get('command')}: {r.get('status')}" for r in p.get("runs") or []) or "none"
        return f"tests on {p.get('proposal_id')}: {runs}"
    if kind == EventType.TASK_CREATED:
        return f"task {p.get('task_id')} created: {p.get('title')}"
    if kind == EventType.PROPOSAL_CREATED:
        return f"proposal {p.get('proposal_id')} created"
    if kind == EventType.VOTE_CAST:
        return f"{event.get('actor_id')} voted {p.get('vote')} on {p.get('proposal_id')}"
    if kind == EventType.APPROVAL_REQUESTED and p.get("requested_by") == "dispatcher":
        return f"approval {p.get('approval_id')} requested from the operator for {p.get('proposal_id')}"
    return None


async def drive(
    owner: Owner, run_id: str, *, interval: float, ticks: int, echo: Callable[[str], None]
) -> AutopilotResult:
    """Run the Chair loop and wait for the dispatcher to go quiet (see the module docstring)."""
    from roundtable.chair import ChairLoop
    from roundtable.chair.convergence import settle

    runtime = owner.runtime
    dispatcher = owner.dispatcher
    assert dispatcher is not None, "the owner hosts no dispatcher"
    started = time.monotonic()
    chair = ChairLoop(runtime, interval=interval, converge_run_id=run_id)
    chair_task = asyncio.create_task(chair.run(), name="headless-chair")
    printer = asyncio.create_task(_echo_events(runtime, echo), name="headless-events")
    quiet = 0
    try:
        while True:
            await asyncio.sleep(QUIET_PERIOD)
            if chair_task.done():
                status, reason = chair.converged or ("active", "chair_stopped")
                return AutopilotResult(status, reason, time.monotonic() - started)
            state = dispatcher.status()
            if not state.enabled and state.stopped_reason:
                return AutopilotResult("active", "autopilot_stopped", time.monotonic() - started, state.stopped_reason)
            if ticks > 0 and chair.state.ticks >= ticks:
                return AutopilotResult("active", "iteration_limit", time.monotonic() - started)
            quiet = quiet + 1 if await dispatcher.idle() else 0
            if quiet >= QUIET_CHECKS:
                # The table went quiet: whether the run converged must not depend on whether the
                # Chair's loop had settled it yet (a run whose only task the autopilot had just
                # blocked ended `idle`, exit 0, or `blocked`, exit 3, by timing). The loop is
                # stopped, then the run is settled once here.
                chair_task.cancel()
                with contextlib.suppress(BaseException):
                    await chair_task
                if chair.converged:
                    return AutopilotResult(*chair.converged, time.monotonic() - started)
                status, why, ended = await settle(runtime, run_id, chair.state.ticks)
                if ended:
                    return AutopilotResult(status, why, time.monotonic() - started)
                if await _open_proposals(runtime, run_id):
                    reason = "awaiting_operator"
                elif dispatcher.limit_reached(run_id):
                    reason = "iteration_limit"
                else:
                    reason = "idle"
                return AutopilotResult("active", reason, time.monotonic() - started)
    finally:
        for task in (chair_task, printer):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def _open_proposals(runtime: Runtime, run_id: str) -> int:
    async with runtime.db.read() as r:
        count = await r.scalar(
            "SELECT count(*) FROM proposals WHERE run_id = ? AND status IN ('pending', 'in_review')", (run_id,)
        )
    return int(count or 0)


async def _echo_events(runtime: Runtime, echo: Callable[[str], None]) -> None:
    with runtime.bus.subscribe(maxsize=4096) as changes:
        async for change in changes:
            for event in change.events:
                line = describe(event)
                if line:
                    echo(line)
