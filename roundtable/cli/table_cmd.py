"""`roundtable table`: a compact summary of the state, read in one snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roundtable.cli.common import handle_errors, json_option, print_json, root_option, run_async

COUNTED = (
    ("AGENTS", "agents"),
    ("TASKS", "tasks"),
    ("CLAIMS", "claims"),
    ("PROPOSALS", "proposals"),
    ("TRANSACTIONS", "transactions"),
    ("MEMORY", "memory_entries"),
)


async def summary(root: Path) -> dict[str, Any]:
    from roundtable.config import load_config
    from roundtable.store.db import Database
    from roundtable.store.records import Run

    config = load_config(root)
    db = await Database.open(config.sqlite_path(root), readers=1)
    try:
        async with db.read() as r:
            runs = await r.all(Run, "SELECT * FROM runs ORDER BY started_at, id")
            counts = {
                key: int(await r.scalar(f"SELECT count(*) FROM {table}")) for _, table in COUNTED for key in [table]
            }
            active_claims = int(await r.scalar("SELECT count(*) FROM claims WHERE status = 'active'"))
    finally:
        await db.close()
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
    data = run_async(summary(root))
    if as_json:
        print_json(data)
        return
    click.echo(f"RUNS {data['counts']['runs']}")
    for run in data["runs"]:
        click.echo(f"{run['id']} [{run['status']}] {run['goal'] or '(no goal)'}")
    for label, table_name in COUNTED:
        click.echo(f"{label} {data['counts'][table_name]}")
