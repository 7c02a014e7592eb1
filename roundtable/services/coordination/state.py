"""The shared read model: the state snapshot (`table.get_state`) and the watch page (`table.watch`).

Both operations' arguments are declared here (`GetStateArgs`, `WatchArgs`) and received whole:
`state_page` and `watch` take the validated model and the caller's scope.

Both are read by the caller inside ONE read transaction, so every list describes one instant.
Claims are shown with expiry evaluated at read time: an `active` claim past its `expires_at`
reads as `expired` even before the Chair's sweep has written that.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from annotated_types import Le, MaxLen
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from roundtable import clock
from roundtable.bus import Change
from roundtable.domain import ClaimStatus
from roundtable.errors import ValidationError
from roundtable.services.args import ITEMS_MAX, Args, Count, Cursor, Flag, Id, Int, Positive, Texts, Word
from roundtable.services.coordination.session_scope import Scope, where
from roundtable.store.db import Database, Reader, Tx
from roundtable.store.records import (
    Agent,
    Claim,
    Decision,
    Event,
    HumanApproval,
    MemoryEntry,
    Proposal,
    Record,
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
    "decisions",  # ours: decisions are part of the table the operator and agents read
)
WATCH_DEFAULT_LIMIT = 10
WATCH_MAX_LIMIT = 200


_ZERO = {"str": "", "int": 0, "float": 0.0, "bool": False}
_LAYOUTS: dict[type, tuple[tuple[str, str], ...]] = {}


def _layout(cls: type[Record]) -> tuple[tuple[str, str], ...]:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        layout = _LAYOUTS[cls] = tuple((f.name, str(f.type)) for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    return layout


def _convert(layout: tuple[tuple[str, str], ...], rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    """`[cls.from_row(row).to_dict() …]` without building the records: the same dicts (NULL →
    zero value, bools as bools), several times faster on a 10,000-row snapshot."""
    out = []
    for row in rows:
        item: dict[str, Any] = {}
        for name, kind in layout:
            value = row[name]
            if value is None:
                value = _ZERO[kind]
            elif kind == "bool":
                value = bool(value)
            elif kind == "float":
                value = float(value)
            item[name] = value
        out.append(item)
    return out


def _task_json(item: dict[str, Any]) -> dict[str, Any]:
    raw = item.pop("readable_paths_json", "") or "[]"
    if raw == "[]":
        item["readable_paths"] = []
        return item
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = []
    item["readable_paths"] = [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
    return item


def _claim_json(item: dict[str, Any], now: str) -> dict[str, Any]:
    if item["status"] == ClaimStatus.ACTIVE and item["expires_at"] and item["expires_at"] <= now:
        item["status"] = ClaimStatus.EXPIRED
    return item


# --- table.get_state: the lists, their orders, filters, pages ------------------------------------


@dataclasses.dataclass(frozen=True)
class StateList:
    """One list of `table.get_state`: its table, documented order and filterable columns."""

    key: str
    cls: type[Record]
    table: str
    order: tuple[tuple[str, bool], ...]  # (column, descending)
    status: bool = True  # has a status column
    run: str = ""  # the column naming its run ("id" for runs)
    agent: str = ""  # the column naming its agent


LISTS: tuple[StateList, ...] = (
    StateList("runs", Run, "runs", (("started_at", False), ("id", False)), run="id"),
    StateList("agents", Agent, "agents", (("created_at", False), ("id", False)), agent="id"),
    StateList(
        "tasks", Task, "tasks", (("priority", False), ("created_at", False), ("id", False)), agent="assigned_agent_id"
    ),
    StateList("claims", Claim, "claims", (("created_at", False), ("id", False)), agent="agent_id"),
    StateList("proposals", Proposal, "proposals", (("created_at", False), ("id", False)), agent="agent_id"),
    StateList("transactions", Transaction, "transactions", (("id", False),), run="run_id"),
    StateList("human_approvals", HumanApproval, "human_approvals", (("created_at", False), ("id", False))),
    StateList("security_reviews", SecurityReview, "security_reviews", (("created_at", False), ("id", False))),
    StateList("memory", MemoryEntry, "memory_entries", (("importance", True), ("created_at", False), ("id", False))),
    StateList("decisions", Decision, "decisions", (("created_at", False), ("id", False)), status=False),
)
STATE_DEFAULT_LIMIT = 100
STATE_MAX_LIMIT = 1000
_CURSOR_VERSION = 1


if TYPE_CHECKING:
    StateKey = str
else:
    StateKey = Literal[STATE_KEYS]


def _unique(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise PydanticCustomError("unique", "must not name a list twice")
    return value


class GetStateArgs(Args):
    """What one `table.get_state` call asks for. Filters restrict every selected list; a list
    without the filtered field (e.g. `decisions` has no status) has no rows under that filter."""

    run_id: Id = ""
    status: Word = Field("", description="Only rows with this status.")
    agent_id: Id = Field("", description="Only rows of this agent.")
    lists: Annotated[list[StateKey], MaxLen(ITEMS_MAX), AfterValidator(_unique)] = Field(
        [], json_schema_extra={"uniqueItems": True}
    )
    limit: Annotated[Positive, Le(STATE_MAX_LIMIT)] | None = Field(
        None, description=f"Rows per list, default {STATE_DEFAULT_LIMIT}, at most {STATE_MAX_LIMIT}."
    )
    cursor: Cursor = Field("", description="next_cursor of the previous page.")
    summary: Flag = Field(False, description="Counts only.")

    @property
    def selected(self) -> tuple[str, ...]:
        """The lists asked for, in the table's order (every list when none is named)."""
        return tuple(k for k in STATE_KEYS if k in self.lists) if self.lists else STATE_KEYS

    @property
    def rows(self) -> int:
        """Rows per list."""
        return STATE_DEFAULT_LIMIT if self.limit is None else self.limit

    def filters(self) -> list[Any]:
        return [self.run_id, self.status, self.agent_id, list(self.selected)]


def _where(spec: StateList, query: GetStateArgs, scope: Scope | None, now: str) -> tuple[list[str], list[Any]] | None:
    """The filter's conditions for one list, or None when the list cannot match it."""
    clauses: list[str] = []
    params: list[Any] = []
    scoped, scoped_params = where(scope, spec.table)
    if scoped:
        clauses.append(scoped)
        params.extend(scoped_params)
    if query.run_id:
        if not spec.run:
            return None
        clauses.append(f"{spec.run} = ?")
        params.append(query.run_id)
    if query.agent_id:
        if not spec.agent:
            return None
        clauses.append(f"{spec.agent} = ?")
        params.append(query.agent_id)
    if query.status:
        if not spec.status:
            return None
        if spec.key == "claims" and query.status == ClaimStatus.EXPIRED:
            # Read-time expiry: an active claim past its expiry reads as expired.
            clauses.append("(status = 'expired' OR (status = 'active' AND expires_at != '' AND expires_at <= ?))")
            params.append(now)
        elif spec.key == "claims" and query.status == ClaimStatus.ACTIVE:
            clauses.append("status = 'active' AND NOT (expires_at != '' AND expires_at <= ?)")
            params.append(now)
        else:
            clauses.append("status = ?")
            params.append(query.status)
    return clauses, params


def _after(order: tuple[tuple[str, bool], ...], key: list[Any]) -> tuple[str, list[Any]]:
    """Rows strictly after `key` in `order` (keyset paging): an OR over the order's prefixes."""
    terms: list[str] = []
    params: list[Any] = []
    for i, (column, descending) in enumerate(order):
        equal = [f"{c} = ?" for c, _ in order[:i]]
        terms.append("(" + " AND ".join([*equal, f"{column} {'<' if descending else '>'} ?"]) + ")")
        params.extend([*key[:i], key[i]])
    return "(" + " OR ".join(terms) + ")", params


def page_sql(spec: StateList, clauses: Sequence[str]) -> str:
    """One page of a list under `clauses`, in its documented order (`LIMIT ?` last). Unfiltered,
    it is read from the list's order index (schema step 9), not by sorting the whole table."""
    order = ", ".join(f"{c}{' DESC' if d else ''}" for c, d in spec.order)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    return f"SELECT * FROM {spec.table} {where} ORDER BY {order} LIMIT ?"


def _finish(spec: StateList, items: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    if spec.key == "tasks":
        return [_task_json(t) for t in items]
    if spec.key == "claims":
        return [_claim_json(c, now) for c in items]
    return items


def _claims_by_status(conn: sqlite3.Connection, where: str, params: list[Any], now: str) -> dict[str, int]:
    """Claims per status with expiry evaluated at `now` (an active claim past its expiry counts
    as `expired`): the stored statuses grouped in index order, then the expired ones among the
    active counted by one index range — not a computed status grouped through a sort."""
    counts = {
        str(r[0]): int(r[1])
        for r in conn.execute(f"SELECT status, count(*) FROM claims {where} GROUP BY status", params).fetchall()
    }
    lapsed = "status = 'active' AND expires_at != '' AND expires_at <= ?"
    expired_where = f"{where} AND {lapsed}" if where else f"WHERE {lapsed}"
    expired = int(conn.execute(f"SELECT count(*) FROM claims {expired_where}", [*params, now]).fetchone()[0])
    if expired:
        counts["active"] -= expired
        if not counts["active"]:
            del counts["active"]
        counts["expired"] = counts.get("expired", 0) + expired
    return counts


def encode_cursor(filters: list[Any], keys: dict[str, list[Any] | None]) -> str:
    raw = json.dumps({"v": _CURSOR_VERSION, "f": filters, "k": keys}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, filters: list[Any]) -> dict[str, list[Any] | None]:
    """The per-list positions of a cursor this tool issued for the same filters."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        keys = data["k"]
        ok = data.get("v") == _CURSOR_VERSION and isinstance(keys, dict)
    except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
        raise ValidationError("table.get_state: cursor is not one this tool issued (pass next_cursor unchanged)")
    if data.get("f") != filters:
        raise ValidationError(
            "table.get_state: cursor was issued for other filters (run_id, status, agent_id, lists); "
            "pass the same filters with it"
        )
    for key, value in keys.items():
        if key not in STATE_KEYS or not (value is None or isinstance(value, list)):
            raise ValidationError("table.get_state: cursor is not one this tool issued (pass next_cursor unchanged)")
    return keys


def _load_page(conn: sqlite3.Connection, query: GetStateArgs, scope: Scope | None, now: str) -> dict[str, Any]:
    """Runs on the reader's thread (one hop): every selected list's page, totals and cursor."""
    positions = decode_cursor(query.cursor, query.filters()) if query.cursor else None
    out: dict[str, Any] = {key: [] for key in STATE_KEYS}
    counts: dict[str, int] = {}
    by_status: dict[str, dict[str, int]] = {}
    next_keys: dict[str, list[Any] | None] = {}
    more = False
    for spec in LISTS:
        if spec.key not in query.selected:
            continue
        found = _where(spec, query, scope, now)
        if found is None:
            counts[spec.key] = 0
            next_keys[spec.key] = None
            continue
        clauses, params = found
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        if query.summary:
            if spec.key == "claims":
                by_status[spec.key] = _claims_by_status(conn, where, params, now)
            elif spec.status:
                grouped = conn.execute(f"SELECT status, count(*) FROM {spec.table} {where} GROUP BY status", params)
                by_status[spec.key] = {str(r[0]): int(r[1]) for r in grouped.fetchall()}
            if spec.status:
                counts[spec.key] = sum(by_status[spec.key].values())
                continue
        counts[spec.key] = int(conn.execute(f"SELECT count(*) FROM {spec.table} {where}", params).fetchone()[0])
        if query.summary:
            continue
        page_clauses, page_params = list(clauses), list(params)
        if positions is not None:
            if spec.key not in positions or positions[spec.key] is None:
                next_keys[spec.key] = None
                continue  # this list was complete on an earlier page
            position = positions[spec.key]
            assert position is not None
            if len(position) != len(spec.order):
                raise ValidationError(
                    "table.get_state: cursor is not one this tool issued (pass next_cursor unchanged)"
                )
            term, term_params = _after(spec.order, position)
            page_clauses.append(term)
            page_params.extend(term_params)
        page_rows = conn.execute(page_sql(spec, page_clauses), [*page_params, query.rows + 1]).fetchall()
        has_more = len(page_rows) > query.rows
        page_rows = page_rows[: query.rows]
        if has_more:
            more = True
            next_keys[spec.key] = [page_rows[-1][c] for c, _ in spec.order]
        else:
            next_keys[spec.key] = None
        out[spec.key] = _finish(spec, _convert(_layout(spec.cls), page_rows), now)
    out["counts"] = counts
    out["has_more"] = more
    out["next_cursor"] = encode_cursor(query.filters(), next_keys) if more else ""
    out["limit"] = query.rows
    if query.summary:
        out["by_status"] = by_status
        out["usage"] = _usage_summary(conn, query)
    return out


def _usage_summary(conn: sqlite3.Connection, query: GetStateArgs) -> dict[str, Any]:
    """What the supervised sessions under the run/agent filters spent (`services.sessions.usage`)."""
    clauses = [f"{column} = ?" for column, value in (("run_id", query.run_id), ("agent_id", query.agent_id)) if value]
    params = [value for value in (query.run_id, query.agent_id) if value]
    row = conn.execute(
        "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(cached_input_tokens), 0),"
        " coalesce(sum(output_tokens), 0), coalesce(sum(cost_usd), 0) FROM session_usage"
        + (" WHERE " + " AND ".join(clauses) if clauses else ""),
        params,
    ).fetchone()
    return {
        "sessions": int(row[0]),
        "input_tokens": int(row[1]),
        "cached_input_tokens": int(row[2]),
        "output_tokens": int(row[3]),
        "tokens": int(row[1]) + int(row[3]),
        "cost_usd": round(float(row[4]), 6),
    }


async def state_page(q: Reader | Tx, query: GetStateArgs, scope: Scope | None = None) -> dict[str, Any]:
    """One `table.get_state` answer: the first (or the cursor's next) page of every selected
    list in one read snapshot, with each list's total under the filters. Pages of one walk are
    separate snapshots: rows are never repeated or skipped, but rows written meanwhile may show.
    `scope` (a capability session's) keeps in every list only what it may read."""
    return await q.run(_load_page, query, scope, clock.now())


def _load_all(conn: sqlite3.Connection, now: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for spec in LISTS:
        order = ", ".join(f"{c}{' DESC' if d else ''}" for c, d in spec.order)
        rows = conn.execute(f"SELECT * FROM {spec.table} ORDER BY {order}").fetchall()
        out[spec.key] = _finish(spec, _convert(_layout(spec.cls), rows), now)
    return out


async def load_state(q: Reader | Tx) -> dict[str, list[dict[str, Any]]]:
    """Every row of the lists of `table.get_state` in their documented orders (the spec's nine,
    plus decisions), in one worker-thread hop: run snapshots store this."""
    return await q.run(_load_all, clock.now())


# --- table.watch: the event log after a cursor and what waits -----------------------------------


class WatchArgs(Args):
    """What one `table.watch` call asks for (a limit of 0 or less is the default)."""

    run_id: Id = ""
    # Its maximum is in the schema itself; the description says only what the schema cannot.
    limit: Annotated[Int, Le(WATCH_MAX_LIMIT)] = Field(0, description=f"Default {WATCH_DEFAULT_LIMIT}.")
    after_event_id: Count | None = None
    wait_ms: Annotated[Count, Le(30000)] = 0
    types: Texts = []
    everything: Flag = Field(False, description="All events, not only yours.")


# How far back an agent's start-up read (no cursor) looks for its news: the newest this many
# events. A cursor page reads every event after its cursor.
CONCERN_LOOKBACK = 10_000

# What concerns one agent (`concern`, its id), for a watch that names nothing else: news from
# others about its tasks and its proposals (votes, decisions, tests, landings), its turns, and the
# reviews asked of it. Its own actions are left out: it knows them.
_MY_PROPOSALS = "SELECT id FROM proposals WHERE agent_id = ?"
_ASKED_OF = "EXISTS (SELECT 1 FROM json_each(payload_json, '$.reviewers') WHERE value = ?)"
_CONCERN_EVENTS = (
    "coalesce(actor_id, '') != ? AND ("
    "task_id IN (SELECT id FROM tasks WHERE assigned_agent_id = ?)"
    f" OR json_extract(payload_json, '$.proposal_id') IN ({_MY_PROPOSALS})"
    " OR json_extract(payload_json, '$.agent_id') = ?"
    f" OR (type = 'proposal.review_requested' AND {_ASKED_OF}))"
)
# The lists and counts of a watch page, cut to the agent's own rows (`?` is its id each time).
_REVIEWS_ASKED = (
    "SELECT json_extract(payload_json, '$.proposal_id') FROM events"
    f" WHERE type = 'proposal.review_requested' AND {_ASKED_OF}"
)
_CONCERN_ROWS: dict[str, str] = {
    "tasks": "assigned_agent_id = ?",
    "proposals": f"(agent_id = ? OR id IN ({_REVIEWS_ASKED}))",
    "transactions": f"proposal_id IN ({_MY_PROPOSALS})",
    "human_approvals": f"(requested_by = ? OR proposal_id IN ({_MY_PROPOSALS}))",
    "claims": "agent_id = ?",
}


def _concerning(table: str, base: str, concern: str) -> tuple[str, tuple[Any, ...]]:
    """`base` narrowed to the rows of `table` that concern agent `concern` (unchanged when "")."""
    if not concern:
        return base, ()
    condition = _CONCERN_ROWS[table]
    params = (concern,) * condition.count("?")
    return (f"{base} AND {condition}" if base else condition), params


def _event_filter(run_id: str, types: Sequence[str], concern: str = "") -> tuple[list[str], list[Any]]:
    """The conditions (and parameters) selecting the events of `run_id` (any run when empty)
    whose type is one of `types` (any type when empty) and, with `concern` (an agent id), that
    concern that agent."""
    terms: list[str] = []
    params: list[Any] = []
    if run_id:
        terms.append("run_id = ?")
        params.append(run_id)
    if types:
        terms.append(f"type IN ({', '.join('?' for _ in types)})")
        params.extend(types)
    if concern:
        terms.append(f"({_CONCERN_EVENTS})")
        params.extend([concern] * _CONCERN_EVENTS.count("?"))
    return terms, params


async def newest_event_after(
    q: Reader | Tx, run_id: str, after: int, types: Sequence[str] = (), concern: str = ""
) -> bool:
    """Whether any event (of `run_id`, or of any run when empty; of `types` when given; that
    concerns agent `concern` when given) is newer than `after` — one indexed probe."""
    # fetchall (one thread hop) rather than fetchone (three); the query returns at most one row.
    terms, params = _event_filter(run_id, types, concern)
    rows = await q.fetchall(f"SELECT 1 FROM events WHERE {' AND '.join([*terms, 'id > ?'])} LIMIT 1", (*params, after))
    return bool(rows)


def _and(scope: Scope | None, table: str, base: str = "") -> tuple[str, tuple[Any, ...]]:
    """`base` (a condition or "") joined with `scope`'s condition on `table`, as `WHERE …`."""
    scoped, params = where(scope, table)
    terms = [t for t in (base, scoped) if t]
    return ("WHERE " + " AND ".join(terms) if terms else ""), params


# The lists of a watch page besides its events: at most `limit` rows each, the oldest first (the
# ones waiting longest); the list tools page through the rest. A list of several statuses is read
# as one index range per status, each cut at `limit`, then merged: `status IN (…)` would read
# every open row of the project and sort them all on each call (work growing with history).
_WATCH_LISTS: tuple[tuple[str, type[Record], str, tuple[str, ...], str], ...] = (
    ("blocked_tasks", Task, "tasks", ("status = 'blocked'",), "priority, created_at, id"),
    ("pending_proposals", Proposal, "proposals", ("status = 'pending'", "status = 'in_review'"), "created_at, id"),
    ("required_approvals", HumanApproval, "human_approvals", ("status = 'requested'",), "created_at, id"),
)


# How a watch list's row names its run (an approval by its proposal's or task's), for `--run`:
# that run's rows and those of no run (`''`, as convergence counts them), never another run's.
_RUN_OF: dict[str, tuple[str, int]] = {
    "tasks": ("run_id IN (?, '')", 1),
    "proposals": ("run_id IN (?, '')", 1),
    "transactions": ("run_id IN (?, '')", 1),
    "human_approvals": (
        "(proposal_id IN (SELECT id FROM proposals WHERE run_id IN (?, ''))"
        " OR task_id IN (SELECT id FROM tasks WHERE run_id IN (?, '')))",
        2,
    ),
}


def _of_run(table: str, base: str, run_id: str) -> tuple[str, tuple[Any, ...]]:
    """`base` narrowed to `run_id`'s rows of `table` (unchanged when no run is named)."""
    if not run_id:
        return base, ()
    condition, count = _RUN_OF[table]
    return (f"{base} AND {condition}" if base else condition), (run_id,) * count


def watch_list_sql(
    scope: Scope | None,
    table: str,
    conditions: tuple[str, ...],
    order: str,
    limit: int,
    run_id: str = "",
    concern: str = "",
) -> tuple[str, tuple[Any, ...]]:
    """The first `limit` rows of `table` matching any of `conditions`, in `order` (only
    `run_id`'s when given; only those concerning agent `concern` when given)."""
    parts: list[str] = []
    params: list[Any] = []
    for condition in conditions:
        narrowed, run_params = _of_run(table, condition, run_id)
        narrowed, concern_params = _concerning(table, narrowed, concern)
        w, p = _and(scope, table, narrowed)
        parts.append(f"SELECT * FROM {table} {w} ORDER BY {order} LIMIT ?")
        params += [*run_params, *concern_params, *p, limit]
    if len(parts) == 1:
        return parts[0], tuple(params)
    union = " UNION ALL ".join(f"SELECT * FROM ({part})" for part in parts)
    return f"SELECT * FROM ({union}) ORDER BY {order} LIMIT ?", (*params, limit)


def _watch_rows(
    conn: sqlite3.Connection,
    run_id: str,
    limit: int,
    after: int | None,
    types: tuple[str, ...],
    scope: Scope | None,
    now: str,
    concern: str = "",
) -> dict[str, Any]:
    """`watch_page` on the reader's thread: every query of the page in one hop."""
    terms, params = _event_filter(run_id, types, concern)
    if after is None:
        if concern:
            # An agent's start-up read: its news among the newest events only (one rowid range),
            # not a test of every event ever logged; its lists below are complete.
            terms = [*terms, "id > (SELECT coalesce(max(id), 0) FROM events) - ?"]
            params = [*params, CONCERN_LOOKBACK]
        cond = f"WHERE {' AND '.join(terms)} " if terms else ""
        rows = conn.execute(f"SELECT * FROM events {cond}ORDER BY id DESC LIMIT ?", (*params, limit)).fetchall()
        events = _convert(_layout(Event), rows)
        events.reverse()
        has_more = False
        next_after = events[-1]["id"] if events else 0
    else:
        cond = " AND ".join([*terms, "id > ?"])
        sql = f"SELECT * FROM events WHERE {cond} ORDER BY id LIMIT ?"
        events = _convert(_layout(Event), conn.execute(sql, (*params, after, limit + 1)).fetchall())
        has_more = len(events) > limit
        events = events[:limit]
        next_after = events[-1]["id"] if events else after
    narrowed, run_params = _of_run("transactions", "", run_id)
    narrowed, concern_params = _concerning("transactions", narrowed, concern)
    w, p = _and(scope, "transactions", narrowed)
    rows = conn.execute(
        f"SELECT * FROM transactions {w} ORDER BY id DESC LIMIT ?", (*run_params, *concern_params, *p, limit)
    ).fetchall()
    transactions = _convert(_layout(Transaction), rows)
    transactions.reverse()
    page: dict[str, Any] = {
        "run_id": run_id,
        "events": events,
        "next_after_event_id": next_after,
        "has_more_events": has_more,
        "transactions": transactions,
    }
    for key, cls, table, conditions, order in _WATCH_LISTS:
        sql, p = watch_list_sql(scope, table, conditions, order, limit, run_id, concern)
        rows = conn.execute(sql, p).fetchall()
        items = _convert(_layout(cls), rows)
        page[key] = [_task_json(t) for t in items] if cls is Task else items
    active, active_c = _concerning("claims", "status = 'active' AND expires_at > ?", concern)
    suspended, suspended_c = _concerning("claims", "status = 'suspended'", concern)
    open_, open_c = _concerning("tasks", "status IN ('open', 'in_progress', 'blocked')", concern)
    active_w, active_p = _and(scope, "claims", active)
    suspended_w, suspended_p = _and(scope, "claims", suspended)
    open_w, open_p = _and(scope, "tasks", open_)
    agents_w, agents_p = _and(scope, "agents", "is_enabled = 1")
    counts = conn.execute(
        "SELECT"
        f" (SELECT count(*) FROM claims {active_w}),"
        f" (SELECT count(*) FROM claims {suspended_w}),"
        f" (SELECT count(*) FROM tasks {open_w}),"
        f" (SELECT count(*) FROM agents {agents_w})",
        (now, *active_c, *active_p, *suspended_c, *suspended_p, *open_c, *open_p, *agents_p),
    ).fetchone()
    page.update(
        active_claims=int(counts[0]),
        suspended_claims=int(counts[1]),
        open_tasks=int(counts[2]),
        active_agents=int(counts[3]),
    )
    if concern:
        page.update(_start_up(conn, concern, scope, limit, now))
        return _compact(page, concern)
    return page


# What a row of each list of an agent's page keeps: what it acts on (the list tools and
# `proposal.get` have the rest).
_BRIEF: dict[str, tuple[str, ...]] = {
    "transactions": ("id", "proposal_id", "status"),
    "blocked_tasks": ("id", "title", "status"),
    "pending_proposals": ("id", "title", "agent_id", "task_id", "status", "revision_number"),
    "required_approvals": ("id", "subject", "status", "proposal_id"),
}


def _compact(page: dict[str, Any], agent_id: str) -> dict[str, Any]:
    """An agent's watch page as it reads it: each event in brief (`_event_brief`); each list row's
    ids and status; nothing empty, nothing of the project's at large, no fact twice (a count only
    where its list is cut or absent, an event's task only where no row it names says it, no event
    that only announces a record the page lists: `_announces`)."""
    out: dict[str, Any] = {}
    proposal_tasks = {row["id"]: row.get("task_id") for row in page["pending_proposals"]}
    workspace_tasks = {t["workspace"]["id"]: t["id"] for t in page.get("tasks", []) if "workspace" in t}
    listed = {*proposal_tasks, *workspace_tasks, *(row["id"] for key in ("tasks", "claims") for row in page.get(key, []))}
    events = [_event_brief(e, agent_id, proposal_tasks, workspace_tasks) for e in page["events"]]
    events = [e for e in events if not _announces(e, listed)]
    if events:
        out["events"] = events
    out["next_after_event_id"] = page["next_after_event_id"]
    if page["has_more_events"]:
        out["has_more_events"] = True
    shown = {"active_claims": len(page.get("claims", [])), "open_tasks": len(page.get("tasks", []))}
    for key, value in page.items():
        if key in _BRIEF and value:
            out[key] = [{k: row.get(k) for k in _BRIEF[key]} for row in value]
        elif key in ("tasks", "claims", "memory") and value:
            out[key] = value
        elif key in ("active_claims", "suspended_claims", "open_tasks") and value > shown.get(key, 0):
            out[key] = value
    return out


# What an event's payload keeps on an agent's page: ids, numbers, words (a vote, a decision, a
# status) and flags that are set; not hashes (the revision's), paths, text or lists, which the
# records the ids name hold.
_WORD = re.compile(r"[\w.:@-]{1,40}")
_HASH = re.compile(r"[0-9a-f]{32,}")


def _kept(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and bool(_WORD.fullmatch(value)) and not _HASH.fullmatch(value)


# Events that only announce a record's being made or put up for review: beside the record listed
# (its row names its author and status), they say nothing more.
_ANNOUNCING = frozenset({"created", "review_requested"})


def _announces(event: dict[str, Any], listed: set[Any]) -> bool:
    """Whether `event` (in brief) only says that a record the page lists was made or put up for
    review (a `workspace.created` beside the workspace under its task, a
    `proposal.review_requested` beside the pending proposal): the listed record says it."""
    kind, _, verb = str(event["type"]).partition(".")
    return verb in _ANNOUNCING and event.get(f"{kind}_id") in listed


def _event_brief(
    event: dict[str, Any], agent_id: str, proposal_tasks: dict[str, Any], workspace_tasks: dict[str, Any]
) -> dict[str, Any]:
    """One event as an agent reads it: id, type, actor, task and the payload's short values
    beside them (`_kept`; not the agent's own id, which it knows). Its task goes when the
    proposal or workspace it names is listed on the page with that task."""
    out: dict[str, Any] = {"id": event["id"], "type": event["type"], "actor_id": event["actor_id"]}
    if event["task_id"]:
        out["task_id"] = event["task_id"]
    payload = json.loads(event["payload_json"] or "{}")
    for key, value in (payload.items() if isinstance(payload, dict) else ()):
        if key not in out and value != agent_id and _kept(value):
            out[key] = value
    said = (proposal_tasks.get(str(out.get("proposal_id"))), workspace_tasks.get(str(out.get("workspace_id"))))
    if out.get("task_id") and out["task_id"] in said:
        del out["task_id"]
    return out


# An agent's watch page also answers its start-up questions in the same call: its open tasks
# (assigned to it, or with a workspace of its own) in full, each with its workspace (id, path),
# the claims it holds, and the headlines of what is known (memory: `memory.query` has the bodies).
MEMORY_HEADLINES = 5
_OPEN_TASK = "status IN ('open', 'in_progress', 'blocked')"
_WORKSPACES_OF = "SELECT task_id FROM workspaces WHERE agent_id = ? AND state != 'removed'"


def _start_up(conn: sqlite3.Connection, agent_id: str, scope: Scope | None, limit: int, now: str) -> dict[str, Any]:
    tasks_w, tasks_p = _and(scope, "tasks", f"(assigned_agent_id = ? OR id IN ({_WORKSPACES_OF})) AND {_OPEN_TASK}")
    tasks = [
        dict(zip(("id", "title", "body_md", "status", "priority"), row, strict=True))
        for row in conn.execute(
            f"SELECT id, title, body_md, status, priority FROM tasks {tasks_w} ORDER BY priority, created_at, id LIMIT ?",
            (agent_id, agent_id, *tasks_p, limit),
        ).fetchall()
    ]
    if tasks:
        marks = ", ".join("?" for _ in tasks)
        rows = conn.execute(
            f"SELECT task_id, id, path FROM workspaces WHERE agent_id = ? AND state != 'removed' AND task_id IN ({marks})",
            (agent_id, *(t["id"] for t in tasks)),
        ).fetchall()
        spaces = {task_id: {"id": ws_id, "path": path} for task_id, ws_id, path in rows}
        for task in tasks:
            if task["id"] in spaces:
                task["workspace"] = spaces[task["id"]]
    claims_w, claims_p = _and(scope, "claims", "agent_id = ? AND status = 'active' AND expires_at > ?")
    claims = conn.execute(
        f"SELECT id, resource_id, claim_type, task_id, expires_at FROM claims {claims_w}"
        " ORDER BY created_at, id LIMIT ?",
        (agent_id, now, *claims_p, limit),
    ).fetchall()
    memory = conn.execute(
        "SELECT id, kind, title FROM memory_entries WHERE status = 'active'"
        " ORDER BY pinned DESC, importance DESC, created_at DESC, id LIMIT ?",
        (MEMORY_HEADLINES,),
    ).fetchall()
    return {
        "tasks": tasks,
        "claims": [
            dict(zip(("id", "resource_id", "claim_type", "task_id", "expires_at"), r, strict=True)) for r in claims
        ],
        "memory": [dict(zip(("id", "kind", "title"), row, strict=True)) for row in memory],
    }


async def watch_page(
    q: Reader | Tx,
    run_id: str,
    limit: int,
    after: int | None,
    scope: Scope | None = None,
    types: Sequence[str] = (),
    concern: str = "",
) -> dict[str, Any]:
    """One `table.watch` result, read in one worker-thread hop. `after=None` is snapshot mode
    (the newest `limit` events). `types` keeps only events of those types. `scope` (a capability
    session's) limits the lists and counts to what it may read; `concern` (an agent id) to what
    concerns that agent (`_CONCERN_EVENTS`, `_CONCERN_ROWS`; the count of active agents stays the
    project's). Every list holds at most `limit` rows (the oldest), so the page does not grow with
    the project's history (`proposal.list`, `task.list` and `table.get_state` page through the rest)."""
    return await q.run(_watch_rows, run_id, limit, after, tuple(types), scope, clock.now(), concern)


async def watch(db: Database, args: WatchArgs, scope: Scope | None, agent_id: str) -> dict[str, Any]:
    """One `table.watch` answer: one read snapshot; in cursor mode with `wait_ms`, long-poll until
    an event is newer than the cursor (of `types`, when given). No connection is held while
    waiting: the change bus wakes the poll, for this process's commits and (through the store's
    commit watch) for other processes' alike — and only for a commit whose events could match, so
    many agents waiting for their turn cost nothing while other work commits. A stopping owner
    ends the wait (`ChangeBus.end_long_polls`): the poll answers with the page as it stands.

    `agent_id` is the calling agent ("" for the operator and callers that are no agent). An agent
    that names neither a run nor types (and not `everything`) is shown what concerns it
    (`watch_page`'s `concern`): the question it asks at start-up and between steps is "what
    happened to my work", not the project's whole log. A capability session's run is its
    `scope`'s unless it names one."""
    run_id = args.run_id or (scope.run_id if scope is not None else "")
    limit = args.limit if args.limit > 0 else WATCH_DEFAULT_LIMIT
    after = args.after_event_id
    wait = args.wait_ms / 1000.0
    types = tuple(dict.fromkeys(args.types))
    concern = "" if args.everything or args.run_id or types else agent_id
    if after is not None and wait > 0:
        db.watch_commits()  # a CLI process serving this call directly has none running yet
        deadline = time.monotonic() + wait
        with db.bus.subscribe(maxsize=1, accept=_could_match(run_id, types), long_poll=True) as changes:
            while True:
                async with db.read() as r:
                    if await newest_event_after(r, run_id, after, types, concern):
                        break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or db.bus.stopping or await changes.get(remaining) is None:
                    break
    async with db.read() as r:
        return await watch_page(r, run_id, limit, after, scope, types, concern)


def _could_match(run_id: str, types: tuple[str, ...]) -> Callable[[Change], bool]:
    """Whether a committed change may hold an event a long poll waits for: another process's
    commit (its events are unknown) or one with an event of the run and of the types."""

    def accept(change: Change) -> bool:
        if change.external:
            return True
        return any(
            (not run_id or e.get("run_id") == run_id) and (not types or e.get("type") in types) for e in change.events
        )

    return accept
