"""`roundtable runs list|create|resume|end|archive`: see the runs (with what their sessions spent),
start one, close the ones that are done.

`create --goal TEXT` starts an `active` run; a running owner (`roundtable start`, the console)
notices the commit and its Chair and autopilot take the run up, so a new goal never needs the
owner stopped. A run stays `active` until its work converges or the operator ends it; `end` sets
a final status (`completed`, `blocked` or `failed`) and `ended_at`, with a `run.ended` event, so
the Chair stops ticking it. `archive` hides an ended run from the console's Runs pane and from
`resume` (status `archived`); nothing is deleted. Every change is the operator operation
`run.create|resume|end|archive` through `Runtime.call`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.calls import call, given, read
from roundtable.cli.common import handle_errors, json_option, print_json, root_option
from roundtable.domain import RUN_ENDINGS, RunStatus

if TYPE_CHECKING:
    from roundtable.store.db import Reader

# Plain strings: click offers an enum member's name (COMPLETED), not its value.
END_STATUSES = [str(status) for status in RUN_ENDINGS]


def _list(root: Path, include_archived: bool) -> list[dict[str, Any]]:
    from roundtable.services.sessions import usage
    from roundtable.store.records import Run

    async def query(r: Reader) -> tuple[list[Run], dict[str, usage.Totals]]:
        return await r.all(Run, "SELECT * FROM runs ORDER BY started_at DESC, id DESC"), await usage.breakdown(
            r, "run_id"
        )

    runs, spend = read(root, query)
    return [
        {**run.to_dict(), "usage": spend.get(run.id, usage.Totals()).to_dict()}
        for run in runs
        if include_archived or run.status != RunStatus.ARCHIVED
    ]


def call_run_operation(root: Path, operation: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one `run.*` operation as the operator (`cli.calls`); returns the run's record."""
    return dict(call(root, operation, given(args))["run"])


def _say(row: dict[str, Any], as_json: bool, line: str) -> None:
    if as_json:
        print_json({"run": row})
    else:
        click.echo(line)


@click.group()
def runs() -> None:
    """List runs, create one, resume, end or archive one."""


@runs.command("list")
@root_option
@json_option
@click.option("--all", "include_archived", is_flag=True, help="Include archived runs.")
@handle_errors
def list_(root: Path, as_json: bool, include_archived: bool) -> None:
    """Runs, newest first (archived ones only with --all)."""
    rows = _list(root, include_archived)
    if as_json:
        print_json({"runs": rows})
        return
    if not rows:
        click.echo("no runs yet (roundtable runs create --goal TEXT starts one)")
        return
    from roundtable.services.sessions.usage import describe

    for row in rows:
        ended = f"  ended {row['ended_at']}" if row["ended_at"] else ""
        click.echo(
            f"{row['id']}  [{row['status']}]  started {row['started_at']}{ended}  {describe(row['usage'])}"
            f"  goal: {row['goal'] or '-'}"
        )


@runs.command("create")
@root_option
@json_option
@click.option("--goal", required=True, help="What the run is for (the planner turns it into tasks).")
@click.option("--run", "run_id", default="", help="Id of the new run (default RUN-<time>).")
@handle_errors
def create(root: Path, as_json: bool, goal: str, run_id: str) -> None:
    """Start an active run; a running owner's Chair and autopilot take it up."""
    if not goal.strip():
        raise click.BadParameter("must not be blank", param_hint="--goal")
    row = call_run_operation(root, "run.create", {"goal": goal, "run_id": run_id})
    _say(row, as_json, f"created run {row['id']} (goal: {row['goal']})")


@runs.command("resume")
@root_option
@json_option
@click.argument("run_id", required=False, default="")
@handle_errors
def resume(root: Path, as_json: bool, run_id: str) -> None:
    """Make a run active again (default: the latest active run, else the latest run)."""
    row = call_run_operation(root, "run.resume", {"run_id": run_id})
    _say(row, as_json, f"{row['id']} is {row['status']}")


@runs.command("end")
@root_option
@json_option
@click.argument("run_id")
@click.option("--status", type=click.Choice(END_STATUSES), default="completed", show_default=True)
@handle_errors
def end(root: Path, as_json: bool, run_id: str, status: str) -> None:
    """End an active run with a final status; the Chair stops ticking it."""
    row = call_run_operation(root, "run.end", {"run_id": run_id, "status": status})
    _say(row, as_json, f"{row['id']} is {row['status']}")


@runs.command("archive")
@root_option
@json_option
@click.argument("run_id")
@handle_errors
def archive(root: Path, as_json: bool, run_id: str) -> None:
    """Hide an ended run from the console and from resume (nothing is deleted)."""
    row = call_run_operation(root, "run.archive", {"run_id": run_id})
    _say(row, as_json, f"{row['id']} is archived")
