"""`roundtable runs list|end|archive`: see the runs and close the ones that are done.

A run stays `active` until its work converges or the operator ends it; `end` sets a final status
(`completed`, `blocked` or `failed`) and `ended_at`, with a `run.ended` event, so the Chair stops
ticking it. `archive` hides an ended run from the console's Runs pane and from `resume` (status
`archived`); nothing is deleted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roundtable.cli.common import fail, handle_errors, json_option, print_json, root_option, run_async

END_STATUSES = ("completed", "blocked", "failed")


async def _list(root: Path, include_archived: bool) -> list[dict[str, Any]]:
    from roundtable.runtime import Runtime
    from roundtable.store.records import Run

    runtime = await Runtime.open(root)
    try:
        async with runtime.db.read() as r:
            runs = await r.all(Run, "SELECT * FROM runs ORDER BY started_at DESC, id DESC")
    finally:
        await runtime.close()
    return [run.to_dict() for run in runs if include_archived or run.status != "archived"]


async def _end(root: Path, run_id: str, status: str, archive: bool) -> dict[str, Any]:
    from roundtable.runtime import Runtime
    from roundtable.services import runs

    runtime = await Runtime.open(root)
    try:
        run = await (runs.archive_run(runtime, run_id) if archive else runs.end_run(runtime, run_id, status))
    finally:
        await runtime.close()
    return run.to_dict()


@click.group()
def runs() -> None:
    """List runs, end one, or archive an ended one."""


@runs.command("list")
@root_option
@json_option
@click.option("--all", "include_archived", is_flag=True, help="Include archived runs.")
@handle_errors
def list_(root: Path, as_json: bool, include_archived: bool) -> None:
    """Runs, newest first (archived ones only with --all)."""
    rows = run_async(_list(root, include_archived))
    if as_json:
        print_json({"runs": rows})
        return
    if not rows:
        click.echo("no runs yet (roundtable run --goal TEXT starts one)")
        return
    for row in rows:
        ended = f"  ended {row['ended_at']}" if row["ended_at"] else ""
        click.echo(f"{row['id']}  [{row['status']}]  started {row['started_at']}{ended}  goal: {row['goal'] or '-'}")


@runs.command("end")
@root_option
@click.argument("run_id")
@click.option("--status", type=click.Choice(END_STATUSES), default="completed", show_default=True)
@handle_errors
def end(root: Path, run_id: str, status: str) -> None:
    """End an active run with a final status; the Chair stops ticking it."""
    row = run_async(_end(root, run_id, status, archive=False))
    click.echo(f"{row['id']} is {row['status']}")


@runs.command("archive")
@root_option
@click.argument("run_id")
@handle_errors
def archive(root: Path, run_id: str) -> None:
    """Hide an ended run from the console and from resume (nothing is deleted)."""
    row = run_async(_end(root, run_id, "", archive=True))
    if row["status"] != "archived":  # pragma: no cover - archive_run raises instead
        fail(f"{run_id} was not archived")
    click.echo(f"{row['id']} is archived")
