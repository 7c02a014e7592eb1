"""Memory entries: record, revise, query, summarise, mark stale.

Plain text matching, no embeddings: a query scores an entry by how often the lower-cased query
occurs in its title, body, scope and kind. Queries include stale entries (so an agent can see
that something was retracted); summaries leave them out. Nothing is ever deleted.

Who may edit: an entry records its author (`author_id`). Agents create entries and
edit only their own; the operator edits every entry. Recording with an existing `memory_id` never
overwrites silently: the previous version is kept in `memory_revisions` (with who replaced it)
and the entry's `revision` goes up. Every change appends an event (`memory.recorded`,
`memory.revised`, `memory.marked_stale`). Entries have no run of their own: an entry about a
proposal or a task (its `source_proposal_id`, or a scope naming one, as `summarize` filters) has
its events filed under that object's run, else under the run of its source event, else under the
run the call names (`services.run_scope`).
"""

from __future__ import annotations

from typing import Annotated, Any

from annotated_types import Le, MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.domain import EventType, MemoryStatus
from roundtable.errors import PermissionDenied
from roundtable.services.args import Args, Count, Id, Int, NewId, Query, RepoPath, Text, Title, Word
from roundtable.services.run_scope import NO_HINT, RunHint, object_run, resolve
from roundtable.store.db import Reader, Tx
from roundtable.store.records import MemoryEntry, MemoryRevision

DEFAULT_IMPORTANCE = 50
DEFAULT_QUERY_LIMIT = 10
MAX_QUERY_LIMIT = 1000
MAX_BODY = 100_000
MAX_REASON = 4000
_ORDER = "ORDER BY importance DESC, created_at, id"


class RecordArgs(Args):
    # `memory.record` (the title's bound, one line of 500 characters, is the `Title` type's).
    scope: RepoPath = Field(description="A task id, proposal id or 'project'.")
    kind: Word = Field(description="e.g. decision, finding, convention.")
    title: Title
    body_md: Annotated[Text, MaxLen(MAX_BODY)]
    source_event_id: Count = 0
    importance: Int = Field(default=DEFAULT_IMPORTANCE, description="Default 50; higher first.")
    memory_id: NewId = ""
    status: Word = Field(default=MemoryStatus.ACTIVE, description="Default active.")


class QueryArgs(Args):
    # `memory.query`: an empty query lists everything.
    allow_blank = frozenset({"query"})

    query: Query
    scope: RepoPath = ""
    kind: Word = ""
    limit: Annotated[Int, Le(MAX_QUERY_LIMIT)] = Field(
        default=DEFAULT_QUERY_LIMIT, description="At most this many (default 10)."
    )


class SummarizeArgs(Args):
    # `memory.summarize`: every filter given must equal the entry's scope.
    task_id: Id = ""
    proposal_id: Id = ""
    scope: RepoPath = ""


class MarkStaleArgs(Args):
    # `memory.mark_stale`.
    memory_id: Id
    reason_md: Annotated[Text, MaxLen(MAX_REASON)]


async def get_entry(q: Reader | Tx, memory_id: str) -> MemoryEntry:
    entry = await q.get(MemoryEntry, memory_id)
    return entry


async def record(tx: Tx, args: RecordArgs, *, actor: str = "", agent: str = "", runs: RunHint = NO_HINT) -> MemoryEntry:
    """Create an entry, or revise the one with `args.memory_id` (its previous version is kept).

    `agent` is the acting agent ("" for operator authority): an agent may revise only entries it
    wrote. `actor` is who is recorded (author of a new entry, editor of a revision)."""
    memory_id, source_event_id = args.memory_id, args.source_event_id
    fields = {"scope": args.scope, "kind": args.kind, "title": args.title, "body_md": args.body_md}
    who = agent or actor or "operator"
    existing = (
        await tx.one(MemoryEntry, "SELECT * FROM memory_entries WHERE id = ?", (memory_id,)) if memory_id else None
    )
    now = clock.now()
    if existing is not None:
        check_editor(existing, agent)
        await _keep_revision(tx, existing, who, now)
        await tx.update(
            "memory_entries",
            {"id": existing.id},
            {
                **fields,
                "source_event_id": source_event_id or None,
                "importance": args.importance or DEFAULT_IMPORTANCE,
                "status": args.status or MemoryStatus.ACTIVE,
                "revision": existing.revision + 1,
                "updated_at": now,
            },
        )
        entry = await get_entry(tx, existing.id)
        await _event(tx, EventType.MEMORY_REVISED, entry, who, runs, previous_revision=existing.revision)
        return entry
    new_id = memory_id or clock.new_id("M")
    await tx.insert(
        "memory_entries",
        {
            "id": new_id,
            **fields,
            "source_event_id": source_event_id or None,
            "importance": args.importance or DEFAULT_IMPORTANCE,
            "status": args.status or MemoryStatus.ACTIVE,
            "author_id": who,
            "created_at": now,
            "updated_at": now,
        },
    )
    entry = await get_entry(tx, new_id)
    await _event(tx, EventType.MEMORY_RECORDED, entry, who, runs)
    return entry


def check_editor(entry: MemoryEntry, agent: str) -> None:
    """Agents edit only the entries they wrote; the operator (`agent` empty) edits every entry."""
    if agent and entry.author_id != agent:
        author = entry.author_id or "the operator"
        raise PermissionDenied(
            f"memory entry {entry.id} was written by {author}; agents edit only their own entries "
            "(record a new entry instead)"
        )


async def _keep_revision(tx: Tx, entry: MemoryEntry, edited_by: str, now: str) -> None:
    """Store the version about to be replaced (numbered by the entry's current revision)."""
    await tx.execute(
        "INSERT OR REPLACE INTO memory_revisions (entry_id, revision, title, body_md, edited_by, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (entry.id, entry.revision, entry.title, entry.body_md, edited_by, now),
    )
    tx.tables.add("memory_revisions")


async def entry_run(tx: Tx, entry: MemoryEntry) -> str:
    """The run of the object an entry is about: its source proposal, the proposal or task its
    scope names, else its source event's run (`""` for none)."""
    run = await object_run(tx, proposal_id=entry.source_proposal_id or entry.scope, task_id=entry.scope)
    if not run and entry.source_event_id:
        value = await tx.scalar("SELECT run_id FROM events WHERE id = ?", (entry.source_event_id,))
        run = str(value) if value else ""
    return run


async def _event(tx: Tx, kind: str, entry: MemoryEntry, actor: str, runs: RunHint, **extra: object) -> None:
    await tx.append_event(
        await resolve(tx, runs, owner=await entry_run(tx, entry)),
        kind,
        {
            "memory_id": entry.id,
            "scope": entry.scope,
            "kind": entry.kind,
            "title": entry.title,
            "status": entry.status,
            "revision": entry.revision,
            "author_id": entry.author_id,
            **extra,
        },
        actor_id=actor,
    )


async def revisions(q: Reader | Tx, memory_id: str) -> list[MemoryRevision]:
    """The earlier versions of an entry, oldest first."""
    return await q.all(
        MemoryRevision, "SELECT * FROM memory_revisions WHERE entry_id = ? ORDER BY revision", (memory_id,)
    )


def _score(entry: MemoryEntry, needle: str) -> int:
    return sum(field.lower().count(needle) for field in (entry.title, entry.body_md, entry.scope, entry.kind))


async def query(q: Reader | Tx, args: QueryArgs) -> list[MemoryEntry]:
    """Entries matching the query text (all when empty), best first; at most `limit`
    (`MAX_QUERY_LIMIT` when it is 0 or less, so an answer never grows with the history). `scope`
    and `kind` filter in SQL; without text the order and the limit do too, so only the rows
    returned are read."""
    text, scope, kind = args.query, args.scope, args.kind
    limit = MAX_QUERY_LIMIT if args.limit <= 0 else args.limit
    terms, params = [], []
    for column, value in (("scope", scope), ("kind", kind)):
        if value:
            terms.append(f"{column} = ?")
            params.append(value)
    cond = f"WHERE {' AND '.join(terms)} " if terms else ""
    if not text:
        return await q.all(
            MemoryEntry, f"SELECT * FROM memory_entries {cond}ORDER BY importance DESC, id LIMIT ?", (*params, limit)
        )
    entries = await q.all(MemoryEntry, f"SELECT * FROM memory_entries {cond}{_ORDER}", params)
    needle = text.lower()
    scored = [(score, entry) for entry in entries if (score := _score(entry, needle))]
    scored.sort(key=lambda item: (-item[0], -item[1].importance, item[1].id))
    return [entry for _, entry in scored[:limit]]


async def summarize(q: Reader | Tx, args: SummarizeArgs) -> tuple[list[MemoryEntry], str]:
    """Active entries whose scope equals every given filter, and a Markdown summary of them."""
    task_id, proposal_id, scope = args.task_id, args.proposal_id, args.scope
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


async def mark_stale(
    tx: Tx, args: MarkStaleArgs, *, actor: str = "", agent: str = "", runs: RunHint = NO_HINT
) -> MemoryEntry:
    """Mark an entry stale, appending the reason to its body (repeatable; nothing deleted; the
    previous version is kept). An agent (`agent` given) may mark only its own entries."""
    memory_id, reason_md = args.memory_id, args.reason_md
    entry = await get_entry(tx, memory_id)
    check_editor(entry, agent)
    who = agent or actor or "operator"
    if entry.body_md.strip():
        body = f"{entry.body_md}\n\nStale reason: {reason_md}"
    else:
        body = f"Marked stale: {reason_md}"
    now = clock.now()
    await _keep_revision(tx, entry, who, now)
    await tx.update(
        "memory_entries",
        {"id": memory_id},
        {"status": MemoryStatus.STALE, "body_md": body, "revision": entry.revision + 1, "updated_at": now},
    )
    updated = await get_entry(tx, memory_id)
    await _event(tx, EventType.MEMORY_MARKED_STALE, updated, who, runs)
    return updated


def entries_dicts(entries: list[MemoryEntry]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in entries]
