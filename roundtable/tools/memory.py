"""Memory: `memory.query`, `memory.record`, `memory.summarize`, `memory.mark_stale`. Who may edit
which entry (agents their own, the operator every one) is decided in `services.coordination.memory`."""

from __future__ import annotations

from typing import Any

from roundtable.domain import MemoryStatus
from roundtable.services.coordination import memory
from roundtable.tools.args import opt_int, opt_str, record_id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, integer, obj, result, string


async def mark_stale(call: Call) -> dict[str, Any]:
    entry = await memory.mark_stale(
        call.w,
        call.args["memory_id"],
        call.args["reason_md"],
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    return {"entry": entry.to_dict()}


async def query(call: Call) -> dict[str, Any]:
    a = call.args
    entries = await memory.query(
        call.r,
        a.get("query", ""),
        scope=opt_str(a, "scope"),
        kind=opt_str(a, "kind"),
        limit=opt_int(a, "limit", memory.DEFAULT_QUERY_LIMIT),
    )
    return {"entries": memory.entries_dicts(entries)}


async def record(call: Call) -> dict[str, Any]:
    a = call.args
    entry = await memory.record(
        call.w,
        scope=a["scope"],
        kind=a["kind"],
        title=a["title"],
        body_md=a["body_md"],
        source_event_id=opt_int(a, "source_event_id", 0),
        importance=opt_int(a, "importance", memory.DEFAULT_IMPORTANCE),
        memory_id=record_id(a, "memory_id"),
        status=opt_str(a, "status", MemoryStatus.ACTIVE),
        actor=call.actor,
        agent=call.agent_id,
        runs=call.run_hint,
    )
    return {"entry": entry.to_dict()}


async def summarize(call: Call) -> dict[str, Any]:
    a = call.args
    entries, summary = await memory.summarize(
        call.r, task_id=opt_str(a, "task_id"), proposal_id=opt_str(a, "proposal_id"), scope=opt_str(a, "scope")
    )
    return {"entries": memory.entries_dicts(entries), "summary_md": summary, "entry_count": len(entries)}


TOOLS = [
    ToolSpec(
        name="memory.mark_stale",
        description=("Mark your memory entry stale, with a reason."),
        input_schema=obj(
            {"memory_id": string(), "reason_md": string()},
            ["memory_id", "reason_md"],
        ),
        output_schema=result({"entry": RECORD}),
        handler=mark_stale,
        idempotent=True,
    ),
    ToolSpec(
        name="memory.query",
        description=("Search memory (case-insensitive; empty query lists all), most important first."),
        input_schema=obj(
            {
                "query": string(),
                "scope": string(),
                "kind": string(),
                "limit": integer("At most this many (default 10, at most 1000)."),
            },
            ["query"],
        ),
        output_schema=result({"entries": RECORDS}),
        handler=query,
        mode="read",
        read_only=True,
        idempotent=True,
        allow_blank=frozenset({"query"}),
    ),
    ToolSpec(
        name="memory.record",
        description=(
            "Record something worth remembering (decision, finding, convention); with the memory_id of your own entry, a new revision of it."
        ),
        input_schema=obj(
            {
                "scope": string("e.g. a task id, proposal id or 'project'."),
                "kind": string("e.g. decision, finding, convention."),
                "title": string(),
                "body_md": string(),
                "source_event_id": integer(minimum=0),
                "importance": integer("Default 50; higher first."),
                "memory_id": string(),
                "status": string("Default active."),
            },
            ["scope", "kind", "title", "body_md"],
        ),
        output_schema=result({"entry": RECORD}),
        handler=record,
    ),
    ToolSpec(
        name="memory.summarize",
        description=("Summarise the memory of a task, proposal or scope."),
        input_schema=obj({"task_id": string(), "proposal_id": string(), "scope": string()}),
        output_schema=result({"entries": RECORDS, "summary_md": string(), "entry_count": integer()}),
        handler=summarize,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
]
