"""Run state and turns: `table.get_state`, `table.watch`, `agent.turn_request|start|complete`.
The table's two reads are declared in `services.coordination.state`, which receives their
arguments whole with the caller's scope; the turn operations' in `services.coordination.turns`."""

from __future__ import annotations

from typing import Any

from roundtable.services.coordination import state, turns
from roundtable.services.coordination.state import GetStateArgs, WatchArgs
from roundtable.services.coordination.turns import TurnArgs, TurnRequestArgs
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, integer, result, string


async def get_state(call: Call[GetStateArgs]) -> dict[str, Any]:
    """One page of the table (see `state.state_page`): bounded by default, filterable, with a
    cursor to the next page and a summary mode that returns counts only."""
    return await state.state_page(call.r, call.args, call.scope)


async def watch(call: Call[WatchArgs]) -> dict[str, Any]:
    """The watch page, long-polled in cursor mode (`state.watch`). Internal and anonymous callers
    are no agent: they are never narrowed to what concerns them."""
    caller = call.caller
    agent_id = "" if caller.is_internal or caller.is_anonymous else call.agent_id
    return await state.watch(call.runtime.db, call.args, call.scope, agent_id)


async def turn_request(call: Call[TurnRequestArgs]) -> dict[str, Any]:
    return await turns.request_turn(call.w, call.args)


async def turn_start(call: Call[TurnArgs]) -> dict[str, Any]:
    return await turns.poll_start_turn(call.runtime.db, call.args)


async def turn_complete(call: Call[TurnArgs]) -> dict[str, Any]:
    return await turns.complete_turn(call.w, call.args)


TOOLS = [
    ToolSpec(
        name="table.get_state",
        description=(
            "The coordination table in one snapshot (lists: only those; summary: counts only). Page with cursor = next_cursor."
        ),
        args=GetStateArgs,
        output_schema=result(
            {
                **{key: RECORDS for key in state.STATE_KEYS},
                "counts": {"type": "object", "description": "Each selected list's total under the filters."},
                "has_more": boolean(),
                "next_cursor": string(),
                "limit": integer(),
                "by_status": {"type": "object", "description": "Summary mode: list -> status -> count."},
                "usage": {"type": "object", "description": "Summary mode: tokens and cost_usd spent."},
            },
            required=[*state.STATE_KEYS, "counts", "has_more", "next_cursor", "limit"],
        ),
        handler=get_state,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="table.watch",
        description=(
            "What concerns you: start here. Your tasks, claims, proposals and their news, reviews asked of "
            "you; after_event_id: only newer; wait_ms: wait for them."
        ),
        args=WatchArgs,
        rare_args=frozenset({"limit", "run_id", "types", "everything"}),  # tuning, another run, the whole table
        output_schema=result(
            {
                "run_id": string(),
                "events": RECORDS,
                "next_after_event_id": integer(),
                "has_more_events": boolean(),
                "transactions": RECORDS,
                "blocked_tasks": RECORDS,
                "pending_proposals": RECORDS,
                "required_approvals": RECORDS,
                "active_claims": integer(),
                "suspended_claims": integer(),
                "open_tasks": integer(),
                "active_agents": integer(),
                "tasks": {
                    **RECORDS,
                    "description": "What concerns you: your open tasks (yours, or in a workspace of yours), in full, "
                    "each with its workspace (id, path).",
                },
                "claims": {**RECORDS, "description": "What concerns you: the claims you hold."},
                "memory": {**RECORDS, "description": "What concerns you: the headlines of memory."},
            },
        ),
        handler=watch,
        mode="none",
        read_only=True,
    ),
    ToolSpec(
        name="agent.turn_request",
        description="Ask for a turn in an active run; then wait for agent.turn_scheduled.",
        args=TurnRequestArgs,
        output_schema=result(
            {
                "request_event_id": integer(),
                "agent_id": string(),
                "queued": boolean(),
                "duplicate": boolean(),
                "queue_position": integer(),
            }
        ),
        handler=turn_request,
    ),
    ToolSpec(
        name="agent.turn_start",
        description="Start your turn; once agent.turn_scheduled names your request.",
        args=TurnArgs,
        output_schema=result({"event": RECORD, "request_event_id": integer(), "status": string()}),
        handler=turn_start,
        mode="none",
    ),
    ToolSpec(
        name="agent.turn_complete",
        description=("Finish your turn."),
        args=TurnArgs,
        output_schema=result({"event": RECORD, "request_event_id": integer(), "status": string()}),
        handler=turn_complete,
    ),
]
