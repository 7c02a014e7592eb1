"""The shared read model: the state snapshot (`table.get_state`) and the watch page (`table.watch`).

Both are read by the caller inside ONE read transaction, so every list describes one instant.
Claims are shown with expiry evaluated at read time: an `active` claim past its `expires_at`
reads as `expired` even before the Chair's sweep has written that.
"""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.services.tasks import task_dict
from roundtable.store.db import Reader, Tx
from roundtable.store.records import (
    Agent,
    Claim,
    Event,
    HumanApproval,
    MemoryEntry,
    Proposal,
    Run,
    SecurityReview,
    Task,
    Transaction,
)

STATE_KEYS = (
    "runs",
    "agents",
    "tasks",
    "claims",
    "proposals",
    "transactions",
    "human_approvals",
    "security_reviews",
    "memory",
)
WATCH_DEFAULT_LIMIT = 10
WATCH_MAX_LIMIT = 200


def claim_dict(claim: Claim, now: str) -> dict[str, Any]:
    """A claim record with expiry evaluated at `now`."""
    out = claim.to_dict()
    if claim.status == "active" and claim.expires_at and claim.expires_at <= now:
        out["status"] = "expired"
    return out


async def load_state(q: Reader | Tx) -> dict[str, list[dict[str, Any]]]:
    """The nine lists of `table.get_state`, in their documented orders."""
    now = clock.now()
    return {
        "runs": [r.to_dict() for r in await q.all(Run, "SELECT * FROM runs ORDER BY started_at, id")],
        "agents": [a.to_dict() for a in await q.all(Agent, "SELECT * FROM agents ORDER BY created_at, id")],
        "tasks": [task_dict(t) for t in await q.all(Task, "SELECT * FROM tasks ORDER BY priority, created_at, id")],
        "claims": [claim_dict(c, now) for c in await q.all(Claim, "SELECT * FROM claims ORDER BY created_at, id")],
        "proposals": [p.to_dict() for p in await q.all(Proposal, "SELECT * FROM proposals ORDER BY created_at, id")],
        "transactions": [t.to_dict() for t in await q.all(Transaction, "SELECT * FROM transactions ORDER BY id")],
        "human_approvals": [
            a.to_dict() for a in await q.all(HumanApproval, "SELECT * FROM human_approvals ORDER BY created_at, id")
        ],
        "security_reviews": [
            s.to_dict() for s in await q.all(SecurityReview, "SELECT * FROM security_reviews ORDER BY created_at, id")
        ],
        "memory": [
            m.to_dict()
            for m in await q.all(MemoryEntry, "SELECT * FROM memory_entries ORDER BY importance DESC, created_at, id")
        ],
    }


def normalise_limit(limit: int | None) -> int:
    if limit is None or limit <= 0:
        return WATCH_DEFAULT_LIMIT
    return min(limit, WATCH_MAX_LIMIT)


async def newest_event_after(q: Reader | Tx, run_id: str, after: int) -> bool:
    """Whether any event (of `run_id`, or of any run when empty) is newer than `after` — cheap."""
    # fetchall (one thread hop) rather than fetchone (three); the query returns at most one row.
    if run_id:
        rows = await q.fetchall("SELECT 1 FROM events WHERE run_id = ? AND id > ? LIMIT 1", (run_id, after))
    else:
        rows = await q.fetchall("SELECT 1 FROM events WHERE id > ? LIMIT 1", (after,))
    return bool(rows)


async def watch_page(q: Reader | Tx, run_id: str, limit: int, after: int | None) -> dict[str, Any]:
    """One `table.watch` result. `after=None` is snapshot mode (the newest `limit` events)."""
    run_filter = "WHERE run_id = ?" if run_id else ""
    params: tuple[Any, ...] = (run_id,) if run_id else ()
    if after is None:
        events = await q.all(Event, f"SELECT * FROM events {run_filter} ORDER BY id DESC LIMIT ?", (*params, limit))
        events.reverse()
        has_more = False
        next_after = events[-1].id if events else 0
    else:
        where = f"{run_filter} AND id > ?" if run_id else "WHERE id > ?"
        events = await q.all(Event, f"SELECT * FROM events {where} ORDER BY id LIMIT ?", (*params, after, limit + 1))
        has_more = len(events) > limit
        events = events[:limit]
        next_after = events[-1].id if events else after
    now = clock.now()
    transactions = await q.all(Transaction, "SELECT * FROM transactions ORDER BY id DESC LIMIT ?", (limit,))
    transactions.reverse()
    blocked = await q.all(Task, "SELECT * FROM tasks WHERE status = 'blocked' ORDER BY priority, created_at, id")
    pending = await q.all(
        Proposal, "SELECT * FROM proposals WHERE status IN ('pending', 'in_review') ORDER BY created_at, id"
    )
    approvals = await q.all(
        HumanApproval, "SELECT * FROM human_approvals WHERE status = 'requested' ORDER BY created_at, id"
    )
    (counts,) = await q.fetchall(
        "SELECT"
        " (SELECT count(*) FROM claims WHERE status = 'active' AND expires_at > ?),"
        " (SELECT count(*) FROM claims WHERE status = 'suspended'),"
        " (SELECT count(*) FROM tasks WHERE status IN ('open', 'in_progress', 'blocked')),"
        " (SELECT count(*) FROM agents WHERE is_enabled = 1)",
        (now,),
    )
    return {
        "run_id": run_id,
        "events": [e.to_dict() for e in events],
        "next_after_event_id": next_after,
        "has_more_events": has_more,
        "transactions": [t.to_dict() for t in transactions],
        "blocked_tasks": [task_dict(t) for t in blocked],
        "pending_proposals": [p.to_dict() for p in pending],
        "required_approvals": [a.to_dict() for a in approvals],
        "active_claims": int(counts[0]),
        "suspended_claims": int(counts[1]),
        "open_tasks": int(counts[2]),
        "active_agents": int(counts[3]),
    }
