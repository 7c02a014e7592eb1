"""Run state and turns: `table.get_state`, `table.watch`, `agent.turn_request|start|complete`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORDS, boolean, integer, obj, result, string

_RUN = string("Run id, e.g. RUN-20260115T093012.123456789.")
_AGENT = string("Your agent id, e.g. implementer-1.")
_REQUEST = integer("The request_event_id returned by agent.turn_request.", minimum=1)

TOOLS = [
    ToolSpec(
        name="table.get_state",
        description=(
            "Read the whole coordination table in one consistent snapshot: runs, agents, tasks, "
            "claims, proposals, transactions, human approvals, security reviews and memory."
        ),
        input_schema=obj(),
        output_schema=result(
            {
                k: RECORDS
                for k in (
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
            }
        ),
        handler=not_implemented("table.get_state"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="table.watch",
        description=(
            "Poll the event log. Without after_event_id: the most recent events. With "
            "after_event_id: events newer than that cursor, oldest first; keep passing "
            "next_after_event_id until has_more_events is false. wait_ms (up to 30000) waits "
            "for a new event instead of returning an empty page at once."
        ),
        input_schema=obj(
            {
                "run_id": string("Only events of this run (empty: all runs)."),
                "limit": integer("Page size, default 10, at most 200."),
                "after_event_id": integer("Cursor: return events with a larger id.", minimum=0),
                "wait_ms": integer("Long-poll time when no event is newer than the cursor.", minimum=0, maximum=30000),
            }
        ),
        output_schema=result(
            {
                "run_id": string(),
                "events": RECORDS,
                "next_after_event_id": integer(),
                "has_more_events": boolean(),
            },
            required=["events", "next_after_event_id", "has_more_events"],
        ),
        handler=not_implemented("table.watch"),
        mode="none",
        read_only=True,
    ),
    ToolSpec(
        name="agent.turn_request",
        description=(
            "Ask the Chair for a turn when you have something time-sensitive to do. Requests are "
            "served first come, first served; one outstanding request per agent per run (a repeat "
            "returns the existing one with duplicate: true). Then watch for agent.turn_scheduled."
        ),
        input_schema=obj(
            {"run_id": _RUN, "agent_id": _AGENT, "reason_md": string("Why you need a turn (1-1000 characters).")},
            ["run_id", "agent_id", "reason_md"],
        ),
        output_schema=result(
            {"request_event_id": integer(), "queue_position": integer(), "duplicate": boolean()},
            required=["request_event_id", "queue_position"],
        ),
        handler=not_implemented("agent.turn_request"),
    ),
    ToolSpec(
        name="agent.turn_start",
        description="Acknowledge that your scheduled turn has started (only after agent.turn_scheduled names your request).",
        input_schema=obj(
            {"run_id": _RUN, "agent_id": _AGENT, "request_event_id": _REQUEST},
            ["run_id", "agent_id", "request_event_id"],
        ),
        output_schema={"type": "object"},
        handler=not_implemented("agent.turn_start"),
    ),
    ToolSpec(
        name="agent.turn_complete",
        description="Finish your turn so the Chair can schedule the next request in the queue.",
        input_schema=obj(
            {"run_id": _RUN, "agent_id": _AGENT, "request_event_id": _REQUEST},
            ["run_id", "agent_id", "request_event_id"],
        ),
        output_schema={"type": "object"},
        handler=not_implemented("agent.turn_complete"),
    ),
]
