"""`roundtable table`: a compact summary of the state, read in one snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.calls import read
from roundtable.cli.common import handle_errors, json_option, print_json, root_option

if TYPE_CHECKING:
    from roundtable.store.db import Reader

COUNTED = (
    ("AGENTS", "agents"),
    ("TASKS", "tasks"),
    ("CLAIMS", "claims"),
    ("PROPOSALS", "proposals"),
    ("TRANSACTIONS", "transactions"),
    ("MEMORY", "memory_entries"),
)


async def summary(r: Reader) -> dict[str, Any]:
    from roundtable.store.records import Run

    runs = await r.all(Run, "SELECT * FROM runs ORDER BY started_at, id")
    counts = {key: int(await r.scalar(f"SELECT count(*) FROM {table}")) for _, table in COUNTED for key in [table]}
    active_claims = int(await r.scalar("SELECT count(*) FROM claims WHERE status = 'active'"))
    return {
        "runs": [{"id": run.id, "status": run.status, "goal": run.goal} for run in runs],
        "counts": {"runs": len(runs), **counts, "active_claims": active_claims},
    }


@click.command()
@root_option
@json_option
@handle_errors
def table(root: Path, as_json: bool) -> None:
    """Print a compact summary of runs, agents, tasks, claims, proposals and memory."""
    data = read(root, summary)
    if as_json:
        print_json(data)
        return
    click.echo(f"RUNS {data['counts']['runs']}")
    for run in data["runs"]:
        click.echo(f"{run['id']} [{run['status']}] {run['goal'] or '(no goal)'}")
    for label, table_name in COUNTED:
        click.echo(f"{label} {data['counts'][table_name]}")
