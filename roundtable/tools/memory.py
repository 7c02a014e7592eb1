"""Memory: `memory.query`, `memory.record`, `memory.summarize`, `memory.mark_stale`. Who may edit
which entry (agents their own, the operator every one) is decided in `services.coordination.memory`."""

from __future__ import annotations

from typing import Any

from roundtable.services.coordination import memory
from roundtable.services.coordination.memory import MarkStaleArgs, QueryArgs, RecordArgs, SummarizeArgs
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, integer, result, string


async def mark_stale(call: Call[MarkStaleArgs]) -> dict[str, Any]:
    entry = await memory.mark_stale(call.w, call.args, actor=call.actor, agent=call.agent_id, runs=call.run_hint)
    return {"entry": entry.to_dict()}


async def query(call: Call[QueryArgs]) -> dict[str, Any]:
    return {"entries": memory.entries_dicts(await memory.query(call.r, call.args))}


async def record(call: Call[RecordArgs]) -> dict[str, Any]:
    entry = await memory.record(call.w, call.args, actor=call.actor, agent=call.agent_id, runs=call.run_hint)
    return {"entry": entry.to_dict()}


async def summarize(call: Call[SummarizeArgs]) -> dict[str, Any]:
    entries, summary = await memory.summarize(call.r, call.args)
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
        description="Search memory; most important first; an empty query lists all.",
        args=QueryArgs,
        output_schema=result({"entries": RECORDS}),
        handler=query,
        rare_args=frozenset({"scope", "limit"}),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="memory.record",
        description=("Record what others should know; memory_id of your own entry revises it."),
        args=RecordArgs,
        rare_args=frozenset({"status", "source_event_id", "importance"}),
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
