"""Quotas on what agents create: tasks and proposals per agent in a run, and per run in all.

Checked inside the creating call's transaction, after the row is written (so the run is the one
the new record was filed under): past a quota the call raises `LimitReached`, the transaction
rolls back — the refused call changes nothing — and `Runtime.call` records one
`limits.quota_reached` event. Only agents are counted against the per-agent quota; the run's
quota counts every creator but the operator's and the owner's own components are never refused.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from roundtable.config import LimitsConfig
from roundtable.domain import EventType
from roundtable.errors import LimitReached
from roundtable.store.db import Tx

Kind = Literal["task", "proposal"]


def _count(kind: Kind, limit: int, run_id: str, agent_id: str = "") -> tuple[str, tuple[Any, ...]]:
    """The query counting the `kind`s the run (or the agent in it) has created, up to
    `limit + 1` only: whether the quota is passed is all that is asked, so the count stops there
    instead of walking the whole history."""
    if kind == "proposal":
        sql = "SELECT 1 FROM proposals WHERE run_id = ?" + (" AND agent_id = ?" if agent_id else "")
    else:
        sql = "SELECT 1 FROM events WHERE run_id = ? AND type = 'task.created'" + (
            " AND actor_id = ?" if agent_id else ""
        )
    params = (run_id, agent_id) if agent_id else (run_id,)
    return f"SELECT count(*) FROM ({sql} LIMIT ?)", (*params, limit + 1)


async def _created(tx: Tx, kind: Kind, limit: int, run_id: str, agent_id: str = "") -> int:
    return int(await tx.scalar(*_count(kind, limit, run_id, agent_id)) or 0)


def check_sync(conn: sqlite3.Connection, limits: LimitsConfig, kind: Kind, *, run_id: str, agent_id: str) -> None:
    """`check` for code on the writer's thread (a write job)."""
    if not agent_id:
        return

    def created(limit: int, agent: str = "") -> int:
        row = conn.execute(*_count(kind, limit, run_id, agent)).fetchone()
        return int(row[0] or 0) if row is not None else 0

    per_agent = limits.tasks_per_agent if kind == "task" else limits.proposals_per_agent
    per_run = limits.tasks_per_run if kind == "task" else limits.proposals_per_run
    if created(per_agent, agent_id) > per_agent:
        _refuse(kind, run_id, agent_id, "agent", per_agent, f"{agent_id} has created {per_agent} {kind}s")
    if created(per_run) > per_run:
        _refuse(kind, run_id, agent_id, "run", per_run, f"the run has {per_run} {kind}s")


async def check(tx: Tx, limits: LimitsConfig, kind: Kind, *, run_id: str, agent_id: str) -> None:
    """Refuse the `kind` an agent (`agent_id`) has just created when it passes a quota."""
    if not agent_id:
        return
    per_agent = limits.tasks_per_agent if kind == "task" else limits.proposals_per_agent
    per_run = limits.tasks_per_run if kind == "task" else limits.proposals_per_run
    mine = await _created(tx, kind, per_agent, run_id, agent_id)
    if mine > per_agent:
        _refuse(kind, run_id, agent_id, "agent", per_agent, f"{agent_id} has created {per_agent} {kind}s")
    total = await _created(tx, kind, per_run, run_id)
    if total > per_run:
        _refuse(kind, run_id, agent_id, "run", per_run, f"the run has {per_run} {kind}s")


def _refuse(kind: Kind, run_id: str, agent_id: str, scope: str, limit: int, what: str) -> None:
    key = f"limits.{kind}s_per_{scope}"
    where = f" in run {run_id}" if run_id else ""
    raise LimitReached(
        f"{kind} quota reached: {what}{where} (the limit, {key}, is {limit}); no more are accepted — "
        "finish the work with what exists or ask the operator",
        run_id=run_id,
        event_type=EventType.QUOTA_REACHED,
        payload={"kind": kind, "scope": scope, "limit": limit, "agent_id": agent_id, "key": key},
    )
