"""Memory entries: record (upsert by id), query, summarise, mark stale (spec/tools.md §2.8, §3.11).

Plain text matching, no embeddings: a query scores an entry by how often the lower-cased query
occurs in its title, body, scope and kind. Queries include stale entries (so an agent can see
that something was retracted); summaries leave them out. Nothing is ever deleted.
"""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.errors import ValidationError
from roundtable.store.db import Reader, Tx
from roundtable.store.records import MemoryEntry

DEFAULT_IMPORTANCE = 50
DEFAULT_QUERY_LIMIT = 10
MAX_TITLE = 500
MAX_BODY = 100_000
MAX_REASON = 4000
_ORDER = "ORDER BY importance DESC, created_at, id"


async def get_entry(q: Reader | Tx, memory_id: str) -> MemoryEntry:
    entry = await q.get(MemoryEntry, memory_id)
    return entry


async def record(
    tx: Tx,
    *,
    scope: str,
    kind: str,
    title: str,
    body_md: str,
    source_event_id: int = 0,
    importance: int = DEFAULT_IMPORTANCE,
    memory_id: str = "",
    status: str = "active",
) -> MemoryEntry:
    """Create an entry, or replace the one with `memory_id` (keeping its `created_at`)."""
    if not scope or not kind or not title or not body_md:
        raise ValidationError("scope, kind, title, and body_md are required")
    if len(title) > MAX_TITLE:
        raise ValidationError(f"title must be {MAX_TITLE} characters or fewer")
    if len(body_md) > MAX_BODY:
        raise ValidationError(f"body_md must be {MAX_BODY} characters or fewer")
    new_id = memory_id or clock.new_id("M")
    now = clock.now()
    await tx.execute(
        "INSERT INTO memory_entries (id, scope, kind, title, body_md, source_event_id, importance, status,"
        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET scope = excluded.scope, kind = excluded.kind, title = excluded.title,"
        " body_md = excluded.body_md, source_event_id = excluded.source_event_id,"
        " importance = excluded.importance, status = excluded.status, updated_at = excluded.updated_at",
        (
            new_id,
            scope,
            kind,
            title,
            body_md,
            source_event_id or None,
            importance or DEFAULT_IMPORTANCE,
            status or "active",
            now,
            now,
        ),
    )
    tx.tables.add("memory_entries")
    return await get_entry(tx, new_id)


def _score(entry: MemoryEntry, needle: str) -> int:
    return sum(field.lower().count(needle) for field in (entry.title, entry.body_md, entry.scope, entry.kind))


async def query(q: Reader | Tx, text: str, *, scope: str = "", kind: str = "", limit: int = 10) -> list[MemoryEntry]:
    """Entries matching `text` (all when empty), best first; `limit` ≤ 0 means no limit."""
    entries = await q.all(MemoryEntry, f"SELECT * FROM memory_entries {_ORDER}")
    needle = text.lower()
    scored: list[tuple[int, MemoryEntry]] = []
    for entry in entries:
        if (scope and entry.scope != scope) or (kind and entry.kind != kind):
            continue
        score = _score(entry, needle) if needle else entry.importance
        if needle and score == 0:
            continue
        scored.append((score, entry))
    scored.sort(key=lambda item: (-item[0], -item[1].importance, item[1].id))
    out = [entry for _, entry in scored]
    return out[:limit] if limit > 0 else out


async def summarize(
    q: Reader | Tx, *, task_id: str = "", proposal_id: str = "", scope: str = ""
) -> tuple[list[MemoryEntry], str]:
    """Active entries whose scope equals every given filter, and a Markdown summary of them."""
    entries = await q.all(MemoryEntry, f"SELECT * FROM memory_entries WHERE status != 'stale' {_ORDER}")
    filters = [f for f in (task_id, proposal_id, scope) if f]
    chosen = [e for e in entries if all(e.scope == f for f in filters)]
    chosen.sort(key=lambda e: (-e.importance, e.id))
    if proposal_id:
        header = f"Proposal: {proposal_id}"
    elif task_id:
        header = f"Task: {task_id}"
    else:
        header = f"Scope: {scope or 'project'}"
    lines = ["# Memory Summary", "", header, ""]
    if not chosen:
        lines.append("No active memory entries matched.")
    lines += [f"- [{e.kind}] {e.title}: {e.body_md}" for e in chosen]
    return chosen, "".join(line + "\n" for line in lines)


async def mark_stale(tx: Tx, memory_id: str, reason_md: str) -> MemoryEntry:
    """Mark an entry stale, appending the reason to its body (repeatable; nothing deleted)."""
    if not memory_id or not reason_md:
        raise ValidationError("memory_id and reason_md are required")
    if len(reason_md) > MAX_REASON:
        raise ValidationError(f"reason_md must be {MAX_REASON} characters or fewer")
    entry = await get_entry(tx, memory_id)
    if entry.body_md.strip():
        body = f"{entry.body_md}\n\nStale reason: {reason_md}"
    else:
        body = f"Marked stale: {reason_md}"
    await tx.update(
        "memory_entries",
        {"id": memory_id},
        {"status": "stale", "body_md": body, "updated_at": clock.now()},
    )
    return await get_entry(tx, memory_id)


def entries_dicts(entries: list[MemoryEntry]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in entries]
