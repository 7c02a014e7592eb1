"""`roundtable run`: chair a run from the operator's console, or `--headless` for a bounded
number of Chair ticks with no listener and no console (system.md §1.4, §7.2, §7.4)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.common import fail, handle_errors, root_option, run_async
from roundtable.config import format_duration, parse_duration

if TYPE_CHECKING:
    from roundtable import chair as chair_types


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
) -> chair_types.LoopResult:
    """Take the owner lock (no listeners), select or create the run, tick, snapshot."""
    from roundtable import chair
    from roundtable.owner import Owner
    from roundtable.services import runs

    async with Owner(root, http=False, socket=False, chair=False, log=echo) as owner:
        runtime = owner.runtime  # the owner has synchronised the agents from the config
        if resume:
            run = await runs.resume_run(runtime, run_id)
            echo(f"resumed run {run.id}")
        else:
            run = await runs.create_run(runtime, goal, run_id=run_id)
            echo(f"created run {run.id}")

        def on_tick(number: int, report: chair.TickReport, convergence: tuple[str, str]) -> None:
            for line in report.lines():
                echo(f"tick {number}: {line}")
            echo(f"tick {number}: run is {convergence[0]} ({convergence[1]})")

        every = interval if interval is not None else runtime.config.chair.tick_interval
        result = await chair.run_loop(runtime, run.id, max_iterations=max(1, ticks), interval=every, on_tick=on_tick)
        snapshot = await runs.write_snapshot(runtime, run.id)
        echo(
            f"run {run.id} is {result.status} after {result.iterations} tick(s) ({result.reason}); snapshot {snapshot}"
        )
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
@click.option("--ticks", type=int, default=1, show_default=True, help="Headless: number of ticks (at least 1).")
@click.option(
    "--interval",
    callback=_duration,
    default=None,
    help=f"Headless: wait between ticks (default chair.tick_interval, {format_duration(1.0)}).",
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
    ticks: int,
    interval: float | None,
) -> None:
    """Chair a run: the operator's console with the Chair loop, or --headless ticks."""
    if run_id:
        from roundtable.clock import is_valid_id

        if not is_valid_id(run_id):
            raise click.BadParameter("must be 1-128 letters, digits, '.', '_' or '-'", param_hint="--run")
    if read_only and (headless or demo or goal):
        flag = "--headless" if headless else "--demo" if demo else "--goal"
        raise click.UsageError(f"--read-only opens an existing run and writes nothing; it cannot be combined with {flag}")
    if headless:
        run_async(_headless_entry(root, goal, run_id, resume, ticks, interval))
        return
    from roundtable.tui.launch import run_console  # Textual loads only for the console

    run_console(root=root, goal=goal, resume=resume, read_only=read_only, demo=demo, run_id=run_id)


async def _headless_entry(root: Path, goal: str, run_id: str, resume: bool, ticks: int, interval: float | None) -> None:
    result = await headless(root, goal=goal, run_id=run_id, resume=resume, ticks=ticks, interval=interval)
    if result.error:
        fail(f"orchestrator stopped after {result.iterations} iterations: {result.error}")
