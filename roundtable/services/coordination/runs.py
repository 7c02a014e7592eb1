"""Runs: create, select, resume and end the run records the Chair ticks.

`create`, `resume`, `end` and `archive` work inside the caller's transaction: they are the
operator operations `run.create|resume|end|archive` (`tools/runs_ops.py`), which the CLI, the
console, `start --goal` and an operator token over MCP call through `Runtime.call`. The
`*_run(project, …)` forms open their own write transaction (the Chair's ending, tests).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.domain import RUN_ENDINGS, EventType, RunStatus
from roundtable.errors import ToolError
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Run

if TYPE_CHECKING:
    from roundtable.services.project import Project

TERMINAL_RUN_STATUSES = RUN_ENDINGS


async def get_run(q: Reader | Tx, run_id: str) -> Run:
    """The run `run_id`, or `get run <id>: not found`."""
    run = await q.get(Run, run_id)
    return run


async def list_runs(q: Reader | Tx) -> list[Run]:
    return await q.all(Run, "SELECT * FROM runs ORDER BY started_at, id")


async def active_run_ids(runtime: Project) -> list[str]:
    """Ids of every run whose status is exactly `active`, oldest first."""
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT id FROM runs WHERE status = 'active' ORDER BY started_at, id")
    return [str(row[0]) for row in rows]


async def create(tx: Tx, goal: str, *, run_id: str = "", actor: str = "", record: bool = True) -> Run:
    """Create an `active` run (`RUN-<stamp>` unless `run_id` is given; an existing id is
    refused), with a `run.created` event (`record`)."""
    new_id = run_id or clock.new_id("RUN")
    if await tx.scalar("SELECT 1 FROM runs WHERE id = ?", (new_id,)):
        raise ToolError(f"run {new_id} already exists; use --resume (roundtable runs resume {new_id})")
    await tx.insert(
        "runs",
        {
            "id": new_id,
            "goal": goal or None,
            "status": RunStatus.ACTIVE,
            "started_at": clock.now(),
            "ended_at": None,
            "metadata_json": "{}",
        },
    )
    if record:
        await tx.append_event(new_id, EventType.RUN_CREATED, {"goal": goal}, actor_id=actor)
    return await get_run(tx, new_id)


async def create_run(runtime: Project, goal: str, *, run_id: str = "") -> Run:
    """`create` in its own write transaction, without the `run.created` event the operation
    records (fixtures seed runs with it; every command, the console and MCP use `run.create`)."""
    async with runtime.db.write(tool="run.create") as tx:
        return await create(tx, goal, run_id=run_id, record=False)


async def resume(tx: Tx, run_id: str = "", *, actor: str = "") -> Run:
    """Reactivate `run_id`, or the latest active run, or else the latest run of any status.

    An `active` run with no `ended_at` is returned unchanged; otherwise it becomes `active`
    again with `ended_at` cleared (goal and metadata are kept) and a `run.resumed` event."""
    if run_id:
        run = await get_run(tx, run_id)
        if run.status == RunStatus.ARCHIVED:
            raise ToolError(f"run {run_id} is archived")
    else:
        runs = [r for r in await list_runs(tx) if r.status != RunStatus.ARCHIVED]
        if not runs:
            raise ToolError("no run available to resume (create one: roundtable runs create --goal TEXT)")
        active = [r for r in runs if r.status == RunStatus.ACTIVE]
        run = active[-1] if active else runs[-1]
    if run.status == RunStatus.ACTIVE and not run.ended_at:
        return run
    await tx.update("runs", {"id": run.id}, {"status": RunStatus.ACTIVE, "ended_at": None})
    await tx.append_event(run.id, EventType.RUN_RESUMED, {"previous": run.status}, actor_id=actor)
    return await get_run(tx, run.id)


async def resume_run(runtime: Project, run_id: str = "") -> Run:
    """`resume` in its own write transaction."""
    async with runtime.db.write(tool="run.resume") as tx:
        return await resume(tx, run_id)


async def end(tx: Tx, run_id: str, status: str, *, actor: str = "", details: dict[str, Any] | None = None) -> Run:
    """Set a run's final status (`completed`, `blocked`, `failed`, …) and `ended_at`, with a
    `run.ended` event (carrying `details`: what the end did to the run's open work). Ending an
    archived run is refused; ending an ended run again changes its final status."""
    if not status.strip():
        raise ToolError("run status is required")
    run = await get_run(tx, run_id)
    if run.status == RunStatus.ARCHIVED:
        raise ToolError(f"run {run_id} is archived")
    now = clock.now()
    await tx.update("runs", {"id": run_id}, {"status": status, "ended_at": run.ended_at or now})
    payload = {"status": status, "previous": run.status, **(details or {})}
    await tx.append_event(run_id, EventType.RUN_ENDED, payload, actor_id=actor)
    return await get_run(tx, run_id)


async def end_run(runtime: Project, run_id: str, status: str) -> Run:
    """`end` in its own write transaction."""
    async with runtime.db.write(tool="run.end") as tx:
        return await end(tx, run_id, status)


async def archive(tx: Tx, run_id: str, *, actor: str = "") -> Run:
    """Archive an ended run: hidden from the console's Runs pane and from `resume`."""
    run = await get_run(tx, run_id)
    if run.status == RunStatus.ACTIVE:
        raise ToolError(f"run {run_id} is active: end it first (roundtable runs end {run_id})")
    if run.status != RunStatus.ARCHIVED:
        await tx.update("runs", {"id": run_id}, {"status": RunStatus.ARCHIVED})
        await tx.append_event(run_id, EventType.RUN_ARCHIVED, {"previous": run.status}, actor_id=actor)
    return await get_run(tx, run_id)


async def snapshot(tx: Tx, run_id: str) -> str:
    """Store the state snapshot (the `table.get_state` lists) as a `run_snapshots` row of
    `run_id` (which must exist); returns its id."""
    from roundtable.services.coordination.state import load_state

    await get_run(tx, run_id)
    state = await load_state(tx)
    snapshot_id = clock.new_id("RS")
    await tx.insert(
        "run_snapshots",
        {
            "id": snapshot_id,
            "run_id": run_id,
            "snapshot_json": json.dumps(state, separators=(",", ":"), ensure_ascii=False),
            "created_at": clock.now(),
        },
    )
    return snapshot_id


async def write_snapshot(runtime: Project, run_id: str) -> str:
    """`snapshot` in its own write transaction."""
    async with runtime.db.write(tool="run.snapshot") as tx:
        return await snapshot(tx, run_id)
