"""The autopilot's records: its events, blocking a task with the reason, and the reads the
dispatcher decides from.

Every write here runs inside the caller's transaction (the dispatcher reaches them through its
internal operations, `tools/autopilot_ops.py`, whose arguments are declared here and received
whole). Events:

- `autopilot.enabled` / `autopilot.disabled` — the operator turned it on or off;
- `autopilot.dispatched` {agent_id, role, task_id, proposal_id, reason, attempt, session_id};
- `autopilot.session_failed` {session_id, agent_id, task_id, proposal_id, exit_code, reason,
  attempt, next_retry_seconds};
- `autopilot.stopped` {reason} — it stopped itself (too many consecutive failures);
- `autopilot.skipped` {reason} — work it cannot do (a goal but no planner agent);
- `autopilot.tests_run` {proposal_id, revision, runs} — the host tests it ran on a revision;
- `task.blocked` {task_id, reason} — a task the autopilot gave up on (attempts exhausted, the
  harness is not installed); `task.get` shows the reason as `blocked_reason`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from roundtable import clock
from roundtable.domain import EventType, TaskStatus
from roundtable.errors import NotFound, ValidationError
from roundtable.services.args import Args, Flag, Id, Object, Text
from roundtable.services.run_scope import active_runs
from roundtable.store import rows
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Task

ACTOR = "dispatcher"
EVENT_TYPES = frozenset(
    {
        EventType.AUTOPILOT_ENABLED,
        EventType.AUTOPILOT_DISABLED,
        EventType.AUTOPILOT_DISPATCHED,
        EventType.AUTOPILOT_SESSION_FAILED,
        EventType.AUTOPILOT_STOPPED,
        EventType.AUTOPILOT_SKIPPED,
        EventType.AUTOPILOT_TESTS_RUN,
        EventType.AUTOPILOT_RATE_LIMITED,
    }
)
MAX_REASON = 2000

if TYPE_CHECKING:
    DispatcherEvent = str
else:
    DispatcherEvent = Literal[tuple(sorted(EVENT_TYPES))]


class SetEnabledArgs(Args):
    # `autopilot.set_enabled` (the operator's).
    enabled: Flag = Field(description="On (true) or off (false).")
    run_id: Id = Field(default="", description="Only this run's log.")


class RecordArgs(Args):
    # `autopilot.record` (internal: the dispatcher's).
    allow_blank = frozenset({"run_id"})

    type: DispatcherEvent = Field(description="The event type.")
    payload: Object
    run_id: Id = Field(description="The run the event belongs to.")
    task_id: Id = Field(default="", description="The task it concerns.")


class BlockTaskArgs(Args):
    # `autopilot.block_task` (internal: the dispatcher's; the budgets block a task the same way).
    allow_blank = frozenset({"run_id"})

    task_id: Id = Field(description="The task.")
    reason: Text = Field(description="Why it is blocked.")
    run_id: Id = Field(description="The run the event belongs to.")


def clip(text: str, limit: int = MAX_REASON) -> str:
    """A reason cut to a size an event can carry."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def record(tx: Tx, args: RecordArgs, *, actor: str) -> int:
    """Append one autopilot event (its type one of `EVENT_TYPES`, as the model holds); its id."""
    event = await tx.append_event(args.run_id, args.type, dict(args.payload), actor_id=actor, task_id=args.task_id)
    return int(event.id)


async def set_enabled(tx: Tx, args: SetEnabledArgs, *, actor: str) -> list[str]:
    """`autopilot.enabled` / `autopilot.disabled` in `args.run_id`, else in every active run (the
    log of no run when none is); the runs named."""
    runs = [args.run_id] if args.run_id else await active_runs(tx)
    kind = EventType.AUTOPILOT_ENABLED if args.enabled else EventType.AUTOPILOT_DISABLED
    for run_id in runs or [""]:
        await tx.append_event(run_id, kind, {"enabled": args.enabled}, actor_id=actor)
    return runs


async def block_task(tx: Tx, args: BlockTaskArgs, *, actor: str = ACTOR) -> Task:
    """Mark a task `blocked` with the reason (`task.blocked`); a task already terminal is refused.
    A task already blocked is left as it is, without another `task.blocked`: each one is a
    notification, and one blocked task sent the operator the same webhook three times."""
    run_id, task_id, reason = args.run_id, args.task_id, args.reason
    task = await tx.one(Task, "SELECT * FROM tasks WHERE id = ?", (task_id,))
    if task is None:
        raise NotFound("task", task_id)
    from roundtable.domain import TERMINAL_TASK_STATUSES

    if task.status in TERMINAL_TASK_STATUSES:
        raise ValidationError(f"task {task_id} is {task.status}; a closed task is not blocked")
    if task.status == TaskStatus.BLOCKED:
        return task
    await tx.update("tasks", {"id": task_id}, {"status": TaskStatus.BLOCKED, "updated_at": clock.now()})
    tx.tables.add("tasks")
    await tx.append_event(
        run_id,
        EventType.TASK_BLOCKED,
        {"task_id": task_id, "reason": clip(reason), "previous_status": task.status},
        actor_id=actor,
        task_id=task_id,
    )
    blocked = await tx.one(Task, "SELECT * FROM tasks WHERE id = ?", (task_id,))
    assert blocked is not None
    return blocked


async def blocked_reason(q: Reader | Tx, task_id: str) -> str:
    """Why the task was blocked (the latest `task.blocked` event), or ''."""
    return await q.run(blocked_reason_on, task_id)


def blocked_reason_on(conn: sqlite3.Connection, task_id: str) -> str:
    """`blocked_reason` on the connection's own thread."""
    raw = rows.scalar(
        conn,
        "SELECT payload_json FROM events WHERE type = ? AND task_id = ? ORDER BY id DESC LIMIT 1",
        (EventType.TASK_BLOCKED, task_id),
    )
    if not raw:
        return ""
    try:
        return str(json.loads(raw).get("reason", ""))
    except ValueError:
        return ""


@dataclass(frozen=True)
class DispatchCount:
    """How often the autopilot launched for one run, and for one piece of work in it."""

    run_total: int
    by_key: dict[str, int]


async def dispatch_counts(q: Reader | Tx, run_id: str) -> DispatchCount:
    """Dispatches recorded for `run_id` (a restarted owner keeps counting attempts from them). A
    task's attempts count from its latest `task.blocked` on: the block used them up, and a task the
    operator reopened gets its attempts anew (the run's total counts every dispatch)."""
    rows = await q.fetchall(
        "SELECT id, json_extract(payload_json, '$.key'), json_extract(payload_json, '$.task_id') FROM events"
        " WHERE run_id = ? AND type = 'autopilot.dispatched'",
        (run_id,),
    )
    blocked_at = {
        str(row[0]): int(row[1])
        for row in await q.fetchall(
            "SELECT task_id, max(id) FROM events WHERE type = ? AND task_id IS NOT NULL GROUP BY task_id",
            (EventType.TASK_BLOCKED,),
        )
    }
    by_key: dict[str, int] = {}
    for event_id, key, task_id in rows:
        if int(event_id) < blocked_at.get(str(task_id or ""), 0):
            continue
        name = str(key or "")
        by_key[name] = by_key.get(name, 0) + 1
    return DispatchCount(len(rows), by_key)
