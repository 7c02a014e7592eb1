"""The finite Chair loop of `roundtable run --headless`: tick and converge, at
most `max_iterations` times, ending the run when it converges; consecutive failures are retried
after a back-off (`orchestrator.retry`) until the limit fails the run (`orchestrator.failed`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roundtable.chair.convergence import settle
from roundtable.chair.report import TickReport
from roundtable.chair.tick import chair_call, tick
from roundtable.clock import SYSTEM, Clock
from roundtable.domain import RunStatus
from roundtable.services.coordination.chair_steps import error_text

if TYPE_CHECKING:
    from roundtable.runtime import Runtime


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
    clock: Clock = SYSTEM,
) -> LoopResult:
    """Tick + convergence, at most `max_iterations` times (≤ 0: until convergence), ending the
    run when it converges. `on_tick` sees each iteration's report and convergence; `clock` is
    what the interval and the back-off are waited on."""
    iterations = 0
    errors = 0
    reports: list[TickReport] = []
    while max_iterations <= 0 or iterations < max_iterations:
        iterations += 1
        try:
            report = await tick(runtime, run_id)
            status, reason, ended = await settle(runtime, run_id, iterations)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            errors += 1
            text = error_text(exc)
            if errors >= max_consecutive_errors:
                await chair_call(
                    runtime,
                    "chair.end_run",
                    {"run_id": run_id, "status": RunStatus.FAILED, "iterations": iterations, "error": text},
                )
                return LoopResult(iterations, RunStatus.FAILED, "retry_limit_exhausted", reports, text)
            await chair_call(
                runtime,
                "chair.note_retry",
                {
                    "run_id": run_id,
                    "iteration": iterations,
                    "attempt": errors,
                    "max_attempts": max_consecutive_errors,
                    "error": text,
                    "next_retry_delay": f"{round(retry_backoff * 1000)}ms",
                },
            )
            await clock.sleep(retry_backoff)
            continue
        errors = 0
        reports.append(report)
        if on_tick is not None:
            on_tick(iterations, report, (status, reason))
        if ended:
            return LoopResult(iterations, status, reason, reports)
        if max_iterations <= 0 or iterations < max_iterations:
            await clock.sleep(interval)
    return LoopResult(iterations, "active", "iteration_limit", reports)
