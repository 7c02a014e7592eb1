"""What supervised sessions spent: one `session_usage` row per session, and its rollups.

Two sources write a row. The owner's gateway counts what the model API itself answered, request
by request (`add_measured`, through the internal operation `gateway.record_usage`): that row's
`source` is 'gateway' and it is the authoritative figure. The supervisor reads the harness's own
output (`usage_stream`) and records its running totals through `session.record_usage` (`record`):
that is the figure only while the gateway has measured nothing for the session; once it has (or
once the gateway opened the session, `mark_measured`), what the harness prints is kept beside it
as a cross-check (`printed_tokens`, `printed_cost_usd`) and never replaces, lowers or raises it. A row keeps what the session worked for — its task, the proposal and revision it
reviewed or produced, its agent and run, the UTC day it started — so every rollup (`totals`,
`breakdown`) is one indexed sum. Cost is the harness's own figure when it reports one, else the
configured price table's (`usage.prices`), else unknown (recorded as 0 with `cost_source` '').
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roundtable import clock
from roundtable.config import PriceConfig
from roundtable.services.sessions.usage_stream import Usage
from roundtable.store.db import Reader, Tx
from roundtable.store.records import AgentSession

_COLUMNS = "input_tokens, cached_input_tokens, output_tokens, cost_usd"
_SUMS = (
    "count(*), coalesce(sum(input_tokens), 0), coalesce(sum(cached_input_tokens), 0), "
    "coalesce(sum(output_tokens), 0), coalesce(sum(cost_usd), 0), "
    "coalesce(sum(cost_source = '' AND input_tokens + output_tokens > 0), 0)"
)
# The groupings a rollup can be asked for (column names, never from input).
GROUPS = ("run_id", "task_id", "agent_id", "proposal_id", "day")


@dataclass(frozen=True)
class Totals:
    """Summed usage of some sessions; `unpriced` counts those whose cost is unknown."""

    sessions: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "input_tokens": self.input_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "unpriced_sessions": self.unpriced,
        }


def _totals(row: Any) -> Totals:
    if row is None:
        return Totals()
    return Totals(int(row[0]), int(row[1]), int(row[2]), int(row[3]), float(row[4]), int(row[5]))


def price_of(prices: dict[str, PriceConfig], model: str, usage: Usage) -> float | None:
    """The cost of `usage` from the price table (the model's entry, else `*`), or None."""
    entry = None
    for name in [m for m in model.split(",") if m] or [""]:
        entry = prices.get(name) or entry
    entry = entry or prices.get("*")
    if entry is None:
        return None
    cached_price = entry.input if entry.cached_input is None else entry.cached_input
    fresh = max(0, usage.input_tokens - usage.cached_input_tokens)
    return (fresh * entry.input + usage.cached_input_tokens * cached_price + usage.output_tokens * entry.output) / 1e6


@dataclass(frozen=True)
class Recorded:
    """The session's row after a record, with what it worked for."""

    session_id: str
    run_id: str
    agent_id: str
    task_id: str
    proposal_id: str
    revision: int
    day: str
    usage: Usage
    cost_usd: float
    cost_source: str


async def _work_of(tx: Tx, session: AgentSession, metadata: dict[str, Any]) -> tuple[str, str, int]:
    """(task, proposal, revision) the session works for — what its capability is bound to (else
    its metadata): a reviewer's proposal at the revision it first reported on; an implementer's
    latest revision made during the session."""
    bound = await tx.fetchone(
        "SELECT task_id, proposal_id FROM session_capabilities WHERE session_id = ? ORDER BY issued_at, id LIMIT 1",
        (session.id,),
    )
    task_id = str((bound[0] if bound is not None else "") or metadata.get("task_id") or "")
    proposal_id = str((bound[1] if bound is not None else "") or metadata.get("proposal_id") or "")
    known = await tx.fetchone("SELECT proposal_id, revision FROM session_usage WHERE session_id = ?", (session.id,))
    if proposal_id:
        if known is not None and known[0] == proposal_id and int(known[1]):
            return task_id, proposal_id, int(known[1])
        number = await tx.scalar("SELECT revision_number FROM proposals WHERE id = ?", (proposal_id,))
        return task_id, proposal_id, int(number or 0)
    if not task_id:
        return "", "", 0
    row = await tx.fetchone(
        "SELECT r.proposal_id, r.number FROM patch_revisions r JOIN proposals p ON p.id = r.proposal_id"
        " WHERE p.task_id = ? AND r.agent_id = ? AND r.created_at >= ? ORDER BY r.created_at DESC, r.number DESC"
        " LIMIT 1",
        (task_id, session.agent_id, session.started_at),
    )
    if row is not None:
        return task_id, str(row[0]), int(row[1])
    return task_id, "", 0


GATEWAY = "gateway"
HARNESS = "harness"


async def _source(tx: Tx, session_id: str) -> tuple[str, Usage, float, str] | None:
    """The row's (source, counts, cost, cost source), or None when the session has no row."""
    row = await tx.fetchone(
        f"SELECT source, model, {_COLUMNS}, cost_source FROM session_usage WHERE session_id = ?", (session_id,)
    )
    if row is None:
        return None
    return str(row[0]), Usage(int(row[2]), int(row[3]), int(row[4]), None, str(row[1])), float(row[5]), str(row[6])


async def record(tx: Tx, session_id: str, usage: Usage, prices: dict[str, PriceConfig]) -> Recorded:
    """Set the session's usage to `usage` (running totals, not an increment) as the harness
    printed it. A row the gateway measures keeps its figures: `usage` is stored only as the
    cross-check, and the answer carries the gateway's figures (so budgets judge those)."""
    known = await _source(tx, session_id)
    if known is not None and known[0] == GATEWAY:
        await tx.execute(
            "UPDATE session_usage SET printed_tokens = ?, printed_cost_usd = ? WHERE session_id = ?",
            (usage.tokens, usage.cost_usd, session_id),
        )
        tx.tables.add("session_usage")
        _source_name, measured, cost, cost_source = known
        return await _write(tx, session_id, measured, cost, cost_source, GATEWAY, write=False)
    model = usage.model
    if usage.cost_usd is not None:
        cost, source = usage.cost_usd, "harness"
    else:
        priced = price_of(prices, model or await _session_model(tx, session_id), usage)
        cost, source = (priced, "prices") if priced is not None else (0.0, "")
    return await _write(tx, session_id, usage, cost, source, HARNESS)


async def mark_measured(tx: Tx, session_id: str) -> Recorded:
    """The gateway measures this session from now on: its row says so (zero counts when it had
    none; figures the harness printed before are dropped for the gateway's)."""
    known = await _source(tx, session_id)
    if known is not None and known[0] == GATEWAY:
        return await _write(tx, session_id, known[1], known[2], known[3], GATEWAY, write=False)
    return await _write(tx, session_id, Usage(), 0.0, "", GATEWAY)


async def add_measured(tx: Tx, session_id: str, spent: Usage, prices: dict[str, PriceConfig]) -> Recorded:
    """Add one model request's usage, as the model API answered it, to the session's
    gateway-measured totals (a row the harness wrote before starts again from zero: the
    gateway's figure replaces it). The request is priced by its own model; its cost adds up."""
    known = await _source(tx, session_id)
    if known is not None and known[0] == GATEWAY:
        before, cost_before, source_before = known[1], known[2], known[3]
    else:
        before, cost_before, source_before = Usage(), 0.0, ""
    model = spent.model or before.model or await _session_model(tx, session_id)
    priced = price_of(prices, model, spent)
    # A row is unpriced ('') while any request with tokens had no price; that sticks.
    unpriced_before = before.tokens > 0 and source_before == ""
    if priced is None:
        cost = cost_before
        cost_source = "" if spent.tokens or unpriced_before else source_before
    else:
        cost = cost_before + priced
        cost_source = "" if unpriced_before else "prices"
    total = Usage(
        before.input_tokens + spent.input_tokens,
        before.cached_input_tokens + spent.cached_input_tokens,
        before.output_tokens + spent.output_tokens,
        None,
        model,
    )
    return await _write(tx, session_id, total, cost, cost_source, GATEWAY)


async def _session_model(tx: Tx, session_id: str) -> str:
    return str(await tx.scalar("SELECT model FROM agent_sessions WHERE id = ?", (session_id,)) or "")


async def _write(
    tx: Tx, session_id: str, usage: Usage, cost: float, cost_source: str, source: str, *, write: bool = True
) -> Recorded:
    """Upsert the session's row (unless `write` is False) and say what it worked for."""
    import json

    from roundtable.services.sessions import records as sessions

    session = await sessions.get(tx, session_id)
    try:
        metadata = json.loads(session.metadata_json or "{}")
    except ValueError:
        metadata = {}
    task_id, proposal_id, revision = await _work_of(tx, session, metadata if isinstance(metadata, dict) else {})
    model = usage.model or session.model or ""
    day = (session.started_at or clock.now())[:10]
    if not write:
        return Recorded(
            session_id, session.run_id, session.agent_id, task_id, proposal_id, revision, day, usage, cost, cost_source
        )
    values = {
        "run_id": session.run_id,
        "agent_id": session.agent_id,
        "task_id": task_id,
        "proposal_id": proposal_id,
        "revision": revision,
        "day": day,
        "model": model,
        "input_tokens": usage.input_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": cost,
        "cost_source": cost_source,
        "source": source,
        "updated_at": clock.now(),
    }
    columns = ", ".join(values)
    updates = ", ".join(f"{c} = excluded.{c}" for c in values)
    await tx.execute(
        f"INSERT INTO session_usage (session_id, {columns}) VALUES (?, {', '.join('?' for _ in values)})"
        f" ON CONFLICT(session_id) DO UPDATE SET {updates}",
        [session_id, *values.values()],
    )
    tx.tables.add("session_usage")
    return Recorded(
        session_id, session.run_id, session.agent_id, task_id, proposal_id, revision, day, usage, cost, cost_source
    )


async def of_session(reader: Reader | Tx, session_id: str) -> dict[str, Any] | None:
    """The session's usage row as a dict, or None when it reported none."""
    row = await reader.fetchone(
        f"SELECT model, {_COLUMNS}, cost_source, proposal_id, revision, updated_at, source, printed_tokens,"
        " printed_cost_usd FROM session_usage"
        " WHERE session_id = ?",
        (session_id,),
    )
    if row is None:
        return None
    return {
        "model": row[0],
        "input_tokens": int(row[1]),
        "cached_input_tokens": int(row[2]),
        "output_tokens": int(row[3]),
        "tokens": int(row[1]) + int(row[3]),
        "cost_usd": round(float(row[4]), 6),
        "cost_source": row[5],
        "proposal_id": row[6],
        "revision": int(row[7]),
        "updated_at": row[8],
        "source": row[9],
        "printed_tokens": int(row[10]),
        "printed_cost_usd": None if row[11] is None else round(float(row[11]), 6),
    }


async def totals(reader: Reader | Tx, **where: str) -> Totals:
    """Summed usage of the sessions matching every `column=value` (columns from `GROUPS`)."""
    for column in where:
        if column not in GROUPS:
            raise ValueError(f"unknown usage grouping {column}")
    clause = " AND ".join(f"{c} = ?" for c in where) or "1"
    return _totals(await reader.fetchone(f"SELECT {_SUMS} FROM session_usage WHERE {clause}", tuple(where.values())))


async def breakdown(reader: Reader | Tx, group: str, **where: str) -> dict[str, Totals]:
    """Usage summed per value of `group` (a column of `GROUPS`), among rows matching `where`."""
    if group not in GROUPS or any(c not in GROUPS for c in where):
        raise ValueError(f"unknown usage grouping {group}")
    clause = " AND ".join(f"{c} = ?" for c in where) or "1"
    rows = await reader.fetchall(
        f"SELECT {group}, {_SUMS} FROM session_usage WHERE {clause} GROUP BY {group} ORDER BY {group}",
        tuple(where.values()),
    )
    return {str(row[0]): _totals(row[1:]) for row in rows}


async def by_revision(reader: Reader | Tx, proposal_id: str) -> list[dict[str, Any]]:
    """What each revision of a proposal cost (its author's and its reviewers' sessions)."""
    rows = await reader.fetchall(
        f"SELECT revision, {_SUMS} FROM session_usage WHERE proposal_id = ? GROUP BY revision ORDER BY revision",
        (proposal_id,),
    )
    return [{"revision": int(row[0]), **_totals(row[1:]).to_dict()} for row in rows]


def describe(t: Totals | dict[str, Any]) -> str:
    """`12.3k tokens · $0.42` (`$?` when some session's cost is unknown and none is known)."""
    data = t.to_dict() if isinstance(t, Totals) else t
    tokens = int(data.get("tokens", 0))
    cost = float(data.get("cost_usd", 0.0))
    unpriced = int(data.get("unpriced_sessions", 0))
    money = f"${cost:.2f}" if cost or not unpriced else "$?"
    if unpriced and cost:
        money += "+?"
    return f"{short_count(tokens)} tokens · {money}"


def short_count(n: int) -> str:
    """1234 → `1.2k`, 2500000 → `2.5M`."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)
