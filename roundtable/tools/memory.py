"""Memory: `memory.query`, `memory.record`, `memory.summarize`, `memory.mark_stale`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORD, RECORDS, integer, obj, result, string

TOOLS = [
    ToolSpec(
        name="memory.mark_stale",
        description="Mark a memory entry stale with a reason.",
        input_schema=obj(
            {"memory_id": string("Memory id, e.g. M-..."), "reason_md": string("Why it is stale.")},
            ["memory_id", "reason_md"],
        ),
        output_schema=result({"memory": RECORD}, required=["memory"]),
        handler=not_implemented("memory.mark_stale"),
        idempotent=True,
    ),
    ToolSpec(
        name="memory.query",
        description="Search memory entries (case-insensitive text; empty query lists all), most important first.",
        input_schema=obj(
            {
                "query": string("Text to find in title or body."),
                "scope": string("Exact scope filter."),
                "kind": string("Exact kind filter."),
                "limit": integer("At most this many (default 10; 0 or less: no limit)."),
            },
            ["query"],
        ),
        output_schema=result({"memories": RECORDS}),
        handler=not_implemented("memory.query"),
        mode="read",
        read_only=True,
        idempotent=True,
        allow_blank=frozenset({"query"}),
    ),
    ToolSpec(
        name="memory.record",
        description="Record something worth remembering (a decision, a finding, a convention).",
        input_schema=obj(
            {
                "scope": string("e.g. a task id, proposal id or 'project'."),
                "kind": string("e.g. decision, finding, convention."),
                "title": string("Short title."),
                "body_md": string("The content, in Markdown."),
                "source_event_id": integer("Event this came from.", minimum=0),
                "importance": integer("Default 50; higher first."),
                "memory_id": string("Explicit id (default: generated)."),
                "status": string("Default active."),
            },
            ["scope", "kind", "title", "body_md"],
        ),
        output_schema=result({"memory": RECORD}, required=["memory"]),
        handler=not_implemented("memory.record"),
    ),
    ToolSpec(
        name="memory.summarize",
        description="Summarise the memory entries of a task, proposal or scope.",
        input_schema=obj(
            {"task_id": string("Task id."), "proposal_id": string("Proposal id."), "scope": string("Scope.")}
        ),
        output_schema={"type": "object"},
        handler=not_implemented("memory.summarize"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
]
