"""`roundtable run`: chair a run from the operator's console, or `--headless` for a bounded
number of Chair ticks with no listener and no console.

`--autopilot` turns the dispatcher on: the owner launches the agents the work calls
for; headless, the run is driven until it waits for the operator (`cli/run_autopilot.py`).
`--max-iterations`, `--retry-backoff` and `--max-consecutive-errors` override the config's
`autopilot` limits with it, and bound the finite Chair loop without it."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from roundtable.cli.common import handle_errors, root_option, run_async
from roundtable.config import format_duration, parse_duration
from roundtable.domain import RunStatus

if TYPE_CHECKING:
    from roundtable import chair as chair_types
    from roundtable.autopilot import Overrides


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


async def headless(
    root: Path,
    *,
    goal: str,
    run_id: str,
    resume: bool,
    ticks: int,
    interval: float | None,
    echo: Any = click.echo,
    retry_backoff: float | None = None,
    max_consecutive_errors: int | None = None,
    summary: dict[str, Any] | None = None,
) -> chair_types.LoopResult:
    """Take the owner lock (no listeners), select or create the run, tick, snapshot."""
    from roundtable import chair
    from roundtable.owner import Owner, select_run
    from roundtable.store.records import Run

    # No supervisor: a headless run without --autopilot launches nothing.
    async with Owner(root, http=False, socket=False, chair=False, supervisor=False, log=echo) as owner:
        runtime = owner.runtime  # the owner has synchronised the agents from the config
        run = Run.from_row(await select_run(runtime, goal=goal, resume=resume, run_id=run_id))
        if summary is not None:
            summary["run_id"] = run.id
        echo(
            (f"resumed run {run.id}" if resume else f"created run {run.id}")
            + (f" with goal: {goal}" if goal and not resume else "")
        )

        def on_tick(number: int, report: chair.TickReport, convergence: tuple[str, str]) -> None:
            for line in report.lines():
                echo(f"tick {number}: {line}")
            echo(f"tick {number}: run is {convergence[0]} ({convergence[1]})")

        every = interval if interval is not None else runtime.config.chair.tick_interval
        result = await chair.run_loop(
            runtime,
            run.id,
            max_iterations=max(1, ticks),
            interval=every,
            on_tick=on_tick,
            retry_backoff=retry_backoff if retry_backoff is not None and retry_backoff > 0 else 0.25,
            max_consecutive_errors=max_consecutive_errors
            if max_consecutive_errors and max_consecutive_errors > 0
            else 5,
        )
        snapshot = (await runtime.call("run.snapshot", {"run_id": run.id}))["snapshot_id"]
        echo(
            f"run {run.id} is {result.status} after {result.iterations} tick(s) ({result.reason}); snapshot {snapshot}"
        )
        if summary is not None:
            summary.update(run_id=run.id, snapshot=snapshot)
        return result


async def headless_autopilot(
    root: Path,
    *,
    goal: str,
    run_id: str,
    resume: bool,
    ticks: int,
    interval: float | None,
    overrides: Overrides,
    echo: Any = click.echo,
    dispatcher_options: dict[str, Any] | None = None,
    summary: dict[str, Any] | None = None,
) -> Any:
    """The owner with the supervisor and the dispatcher on (no listeners), the run selected or
    created, driven until it waits for the operator (`cli/run_autopilot.py`), then a snapshot."""
    from roundtable.cli.run_autopilot import drive
    from roundtable.owner import Owner, select_run
    from roundtable.store.records import Run

    async with Owner(
        root,
        http=False,
        socket=False,
        chair=False,
        supervisor=True,
        autopilot=True,
        autopilot_overrides=overrides,
        dispatcher_options=dispatcher_options,
        log=echo,
    ) as owner:
        runtime = owner.runtime
        for line in owner.preflight_lines:
            echo(line)
        run = Run.from_row(await select_run(runtime, goal=goal, resume=resume, run_id=run_id))
        if summary is not None:
            summary["run_id"] = run.id
        echo(
            (f"resumed run {run.id}" if resume else f"created run {run.id}")
            + (f" with goal: {goal}" if goal and not resume else "")
        )
        assert owner.dispatcher is not None  # the owner hosts the supervisor, so the dispatcher too
        owner.dispatcher.wake()
        every = interval if interval is not None else runtime.config.chair.tick_interval
        try:
            result = await drive(owner, run.id, interval=every, ticks=ticks, echo=echo)
        except asyncio.CancelledError:
            # Stopped by a signal: the owner's exit ends (and records) the sessions still running.
            if summary is not None and owner.supervisor is not None:
                summary["sessions_ended"] = len(owner.supervisor.live)
            raise
        snapshot = (await runtime.call("run.snapshot", {"run_id": run.id}))["snapshot_id"]
        echo(
            f"run {run.id} is {result.status} after {result.seconds:.1f}s on autopilot ({result.reason}"
            + (f": {result.error}" if result.error else "")
            + f"); snapshot {snapshot}"
        )
        if summary is not None:
            summary.update(run_id=run.id, snapshot=snapshot)
        return result


@click.command()
@root_option
@click.option("--goal", default="", help="Goal of a newly created run.")
@click.option("--run", "run_id", default="", help="Run id to create (or, with --resume, to resume).")
@click.option("--resume", is_flag=True, help="Resume the latest active run (or --run) instead of creating one.")
@click.option(
    "--read-only",
    is_flag=True,
    help="Console only: watch an existing run; no Chair, no listeners, nothing is written.",
)
@click.option("--headless", is_flag=True, help="No console, no listeners: run --ticks Chair ticks and exit.")
@click.option("--demo", is_flag=True, help="Console only: seed a demonstration run.")
@click.option(
    "--ticks",
    type=int,
    default=None,
    help="Headless: number of Chair ticks (default 1; with --autopilot: until the table waits for the operator).",
)
@click.option(
    "--interval",
    callback=_duration,
    default=None,
    help=f"Headless: wait between ticks (default chair.tick_interval, {format_duration(1.0)}).",
)
@click.option(
    "--autopilot",
    is_flag=True,
    help="Launch the agents the work calls for (the dispatcher on; default: the config's autopilot.mode).",
)
@click.option("--max-iterations", type=int, default=None, help="Autopilot: dispatches per run (0 = unlimited).")
@click.option(
    "--retry-backoff",
    callback=_duration,
    default=None,
    help="Autopilot: wait before retrying a failed session (doubled per attempt), e.g. 5s.",
)
@click.option(
    "--max-consecutive-errors", type=int, default=None, help="Autopilot: stop after this many failed sessions in a row."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Headless: print a JSON summary on stdout at the end (progress goes to stderr).",
)
@handle_errors
def run(
    root: Path,
    goal: str,
    run_id: str,
    resume: bool,
    read_only: bool,
    headless: bool,
    demo: bool,
    ticks: int | None,
    interval: float | None,
    autopilot: bool,
    max_iterations: int | None,
    retry_backoff: float | None,
    max_consecutive_errors: int | None,
    as_json: bool,
) -> None:
    """Chair a run: the operator's console with the Chair loop, or --headless ticks.

    Headless exit status: 0 when the run waits for the operator or is completed (or the ticks
    ran out with work left), 3 when it is blocked (or its autopilot reached a limit), 1 on an
    error (the loop failed, the autopilot stopped itself), 128+N when signal N (SIGINT, SIGTERM)
    stopped it: its sessions are ended and recorded first, and one line says so."""
    if run_id:
        from roundtable.clock import is_valid_id

        if not is_valid_id(run_id):
            raise click.BadParameter("must be 1-128 letters, digits, '.', '_' or '-'", param_hint="--run")
    if read_only and (headless or demo or goal or autopilot):
        flag = "--headless" if headless else "--demo" if demo else "--goal" if goal else "--autopilot"
        raise click.UsageError(
            f"--read-only opens an existing run and writes nothing; it cannot be combined with {flag}"
        )
    for name, value in (("--max-iterations", max_iterations), ("--max-consecutive-errors", max_consecutive_errors)):
        if value is not None and value < 0:
            raise click.BadParameter("must be 0 or more", param_hint=name)
    from roundtable.autopilot import Overrides

    overrides = Overrides(
        max_iterations=max_iterations,
        retry_backoff_seconds=retry_backoff,
        max_consecutive_failures=max_consecutive_errors or None,
    )
    if as_json and not headless:
        raise click.UsageError("--json needs --headless")
    if headless and autopilot:
        outcome = run_async(_autopilot_entry(root, goal, run_id, resume, ticks or 0, interval, overrides, as_json))
        _finish_headless(outcome, as_json)
    if headless:
        count = ticks if ticks is not None else (max_iterations or 1)
        outcome = run_async(
            _headless_entry(root, goal, run_id, resume, count, interval, retry_backoff, max_consecutive_errors, as_json)
        )
        _finish_headless(outcome, as_json)
    from roundtable.tui.launch import DemoStart, run_console  # Textual loads only for the console

    start_demo: DemoStart | None = None
    if demo:
        from roundtable.demo import team

        start_demo = team.start

    run_console(
        root=root,
        goal=goal,
        resume=resume,
        read_only=read_only,
        demo=start_demo,
        run_id=run_id,
        autopilot=True if autopilot else None,
        autopilot_overrides=overrides,
    )


T = TypeVar("T")

# `run --headless` exit statuses (docs/ci.md).
EXIT_OK = 0  # waiting for the operator, completed, or the ticks ran out with work left
EXIT_ERROR = 1  # the loop failed or the autopilot stopped itself
EXIT_BLOCKED = 3  # the run is blocked (or the autopilot reached a limit with work left)
# Stopped by SIGINT or SIGTERM (a CI timeout): 128 + the signal's number, as a shell reports it.
EXIT_SIGNALLED = 128
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def interruptible(work: Coroutine[Any, Any, T]) -> tuple[T | None, int]:
    """Run `work` until it returns — (its result, 0) — or SIGINT/SIGTERM arrives: then it is
    cancelled, so the owner it holds shuts down cleanly (its sessions stopped and their ends
    recorded), and (None, the signal's number) is returned. Without handlers the default action
    killed the process on the spot and left its sessions `active` for ever."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    caught: list[int] = []

    def stop(sig: int) -> None:
        if not caught:  # a second signal during the shutdown changes nothing
            caught.append(sig)
            task.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop, sig)
    try:
        return await task, 0
    except asyncio.CancelledError:
        if not caught:
            raise
        return None, caught[0]
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


def _interrupted(summary: dict[str, Any], sig: int) -> dict[str, Any]:
    name = signal.Signals(sig).name
    ended = int(summary.get("sessions_ended", 0))
    run = summary.get("run_id") or "-"
    return {
        **summary,
        "status": RunStatus.ACTIVE,
        "reason": "interrupted",
        "signal": name,
        "sessions_ended": ended,
        "error": f"run {run} stopped by {name}: {ended} session(s) ended and recorded; the run stays active "
        f"(resume it with `roundtable run --headless --resume --run {run}`)",
        "exit_code": EXIT_SIGNALLED + sig,
    }


def exit_status(status: str, reason: str, error: str) -> int:
    """The exit status of a headless run that ended with `status` for `reason`."""
    if error or reason == "autopilot_stopped":
        return EXIT_ERROR
    return EXIT_BLOCKED if status == RunStatus.BLOCKED else EXIT_OK


def _finish_headless(outcome: dict[str, Any], as_json: bool) -> None:
    if as_json:
        import json

        click.echo(json.dumps(outcome, ensure_ascii=False))
    elif outcome["exit_code"] == EXIT_ERROR or outcome.get("reason") == "interrupted":
        click.echo(f"roundtable: {outcome['error'] or outcome['reason']}", err=True)
    sys.exit(outcome["exit_code"])


def _progress(as_json: bool) -> Any:
    """Where progress lines go: stdout, or stderr when stdout carries the JSON summary."""
    return (lambda line: click.echo(line, err=True)) if as_json else click.echo


async def _headless_entry(
    root: Path,
    goal: str,
    run_id: str,
    resume: bool,
    ticks: int,
    interval: float | None,
    retry_backoff: float | None,
    max_consecutive_errors: int | None,
    as_json: bool = False,
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    interrupted, sig = await interruptible(
        headless(
            root,
            goal=goal,
            run_id=run_id,
            resume=resume,
            ticks=ticks,
            interval=interval,
            retry_backoff=retry_backoff,
            max_consecutive_errors=max_consecutive_errors,
            echo=_progress(as_json),
            summary=summary,
        )
    )
    if interrupted is None:
        return _interrupted(summary, sig)
    result = interrupted
    error = f"orchestrator stopped after {result.iterations} iterations: {result.error}" if result.error else ""
    return {
        **summary,
        "status": result.status,
        "reason": result.reason,
        "iterations": result.iterations,
        "error": error,
        "exit_code": exit_status(result.status, result.reason, error),
    }


async def _autopilot_entry(
    root: Path,
    goal: str,
    run_id: str,
    resume: bool,
    ticks: int,
    interval: float | None,
    overrides: Overrides,
    as_json: bool = False,
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    interrupted, sig = await interruptible(
        headless_autopilot(
            root,
            goal=goal,
            run_id=run_id,
            resume=resume,
            ticks=ticks,
            interval=interval,
            overrides=overrides,
            echo=_progress(as_json),
            summary=summary,
        )
    )
    if interrupted is None:
        return _interrupted(summary, sig)
    result = interrupted
    error = f"autopilot stopped: {result.error}" if result.reason == "autopilot_stopped" else ""
    code = exit_status(result.status, result.reason, error)
    if result.reason == "iteration_limit" and result.status == RunStatus.ACTIVE:
        code = EXIT_BLOCKED  # the autopilot may launch no more: it needs the operator's limits
    return {
        **summary,
        "status": result.status,
        "reason": result.reason,
        "seconds": round(result.seconds, 1),
        "error": error,
        "exit_code": code,
    }
