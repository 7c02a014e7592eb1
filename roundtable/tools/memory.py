"""Memory: `memory.query`, `memory.record`, `memory.summarize`, `memory.mark_stale`. Who may edit
which entry (agents their own, the operator every one) is decided in `services.coordination.memory`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from roundtable.domain import MemoryStatus
from roundtable.services.args import Args, Count, Id, Int, NewId, Query, RepoPath, Text, Title, Word
from roundtable.services.coordination import memory
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, integer, result, string


class MarkStaleArgs(Args):
    memory_id: Id
    reason_md: Text


async def mark_stale(call: Call[MarkStaleArgs]) -> dict[str, Any]:
    entry = await memory.mark_stale(
        call.w,
        call.args.memory_id,
        call.args.reason_md,
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    return {"entry": entry.to_dict()}


class QueryArgs(Args):
    allow_blank = frozenset({"query"})

    query: Query
    scope: RepoPath = ""
    kind: Word = ""
    limit: Int = Field(memory.DEFAULT_QUERY_LIMIT, description="At most this many (default 10, at most 1000).")


async def query(call: Call[QueryArgs]) -> dict[str, Any]:
    a = call.args
    entries = await memory.query(call.r, a.query, scope=a.scope, kind=a.kind, limit=a.limit)
    return {"entries": memory.entries_dicts(entries)}


class RecordArgs(Args):
    scope: RepoPath = Field(description="e.g. a task id, proposal id or 'project'.")
    kind: Word = Field(description="e.g. decision, finding, convention.")
    title: Title
    body_md: Text
    source_event_id: Count = 0
    importance: Int = Field(memory.DEFAULT_IMPORTANCE, description="Default 50; higher first.")
    memory_id: NewId = ""
    status: Word = Field(MemoryStatus.ACTIVE, description="Default active.")


async def record(call: Call[RecordArgs]) -> dict[str, Any]:
    a = call.args
    entry = await memory.record(
        call.w,
        scope=a.scope,
        kind=a.kind,
        title=a.title,
        body_md=a.body_md,
        source_event_id=a.source_event_id,
        importance=a.importance,
        memory_id=a.memory_id,
        status=a.status,
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    return {"entry": entry.to_dict()}


class SummarizeArgs(Args):
    task_id: Id = ""
    proposal_id: Id = ""
    scope: RepoPath = ""


async def summarize(call: Call[SummarizeArgs]) -> dict[str, Any]:
    a = call.args
    entries, summary = await memory.summarize(call.r, task_id=a.task_id, proposal_id=a.proposal_id, scope=a.scope)
    return {"entries": memory.entries_dicts(entries), "summary_md": summary, "entry_count": len(entries)}


TOOLS = [
    ToolSpec(
        name="memory.mark_stale",
        description=("Mark your memory entry stale, with a reason."),
        args=MarkStaleArgs,
        output_schema=result({"entry": RECORD}),
        handler=mark_stale,
        idempotent=True,
    ),
    ToolSpec(
        name="memory.query",
        description=("Search memory (case-insensitive; empty query lists all), most important first."),
        args=QueryArgs,
        output_schema=result({"entries": RECORDS}),
        handler=query,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="memory.record",
        description=(
            "Record something worth remembering (decision, finding, convention); with the memory_id of your own entry, a new revision of it."
        ),
        args=RecordArgs,
        output_schema=result({"entry": RECORD}),
        handler=record,
    ),
    ToolSpec(
        name="memory.summarize",
        description=("Summarise the memory of a task, proposal or scope."),
        args=SummarizeArgs,
        output_schema=result({"entries": RECORDS, "summary_md": string(), "entry_count": integer()}),
        handler=summarize,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
]
