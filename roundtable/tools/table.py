"""Run state and turns: `table.get_state`, `table.watch`, `agent.turn_request|start|complete`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from roundtable.bus import Change
from roundtable.services.coordination import state, turns
from roundtable.tools.args import opt_int, opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, integer, obj, result, string, strings

_TURN_ARGS = frozenset({"run_id", "agent_id"})


async def get_state(call: Call) -> dict[str, Any]:
    """One page of the table (see `state.state_page`): bounded by default, filterable, with a
    cursor to the next page and a summary mode that returns counts only."""
    a = call.args
    limit = opt_int(a, "limit", 0)
    query = state.StateQuery(
        run_id=a.get("run_id") or "",
        status=a.get("status") or "",
        agent_id=a.get("agent_id") or "",
        lists=tuple(k for k in state.STATE_KEYS if k in a["lists"]) if a.get("lists") else state.STATE_KEYS,
        limit=min(limit, state.STATE_MAX_LIMIT) if limit > 0 else state.STATE_DEFAULT_LIMIT,
        summary=bool(a.get("summary")),
        cursor=a.get("cursor") or "",
        scope=call.scope,
    )
    return await state.state_page(call.r, query)


async def watch(call: Call) -> dict[str, Any]:
    """One read snapshot; in cursor mode with `wait_ms`, long-poll until an event is newer than
    the cursor (of `types`, when given). No connection is held while waiting: the change bus
    wakes the poll, for this process's commits and (through the store's commit watch) for other
    processes' alike — and only for a commit whose events could match, so many agents waiting
    for their turn cost nothing while other work commits."""
    args = call.args
    scope = call.scope
    run_id = args.get("run_id") or (scope.run_id if scope is not None else "")
    limit = state.normalise_limit(opt_int(args, "limit", 0))
    after: int | None = args["after_event_id"] if "after_event_id" in args else None
    wait = opt_int(args, "wait_ms", 0) / 1000.0
    types = tuple(dict.fromkeys(str(t) for t in args.get("types") or ()))
    db, bus = call.runtime.db, call.runtime.bus
    if after is not None and wait > 0:
        db.watch_commits()  # a CLI process serving this call directly has none running yet
        deadline = time.monotonic() + wait
        with bus.subscribe(maxsize=1, accept=_could_match(run_id, types)) as changes:
            while True:
                async with db.read() as r:
                    if await state.newest_event_after(r, run_id, after, types):
                        break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or await changes.get(remaining) is None:
                    break
    async with db.read() as r:
        return await state.watch_page(r, run_id, limit, after, scope, types)


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


async def turn_request(call: Call) -> dict[str, Any]:
    a = call.args
    return await turns.request_turn(call.w, opt_str(a, "run_id"), opt_str(a, "agent_id"), a["reason_md"])


async def turn_start(call: Call) -> dict[str, Any]:
    a = call.args
    return await turns.poll_start_turn(
        call.runtime.db, opt_str(a, "run_id"), opt_str(a, "agent_id"), a["request_event_id"]
    )


async def turn_complete(call: Call) -> dict[str, Any]:
    a = call.args
    return await turns.complete_turn(call.w, opt_str(a, "run_id"), opt_str(a, "agent_id"), a["request_event_id"])


_RUN = string()
_AGENT = string("Your agent id (default: the one your credential names).")
_REQUEST = integer("From agent.turn_request.", minimum=1)

TOOLS = [
    ToolSpec(
        name="table.get_state",
        description=(
            "The coordination table in one snapshot, list by list (lists: only those). At most limit rows per list; has_more means call again with cursor = next_cursor. summary: counts, by_status and usage (tokens, USD) only."
        ),
        input_schema=obj(
            {
                "run_id": string(),
                "status": string("Only rows with this status."),
                "agent_id": string("Only rows of this agent."),
                "lists": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(state.STATE_KEYS)},
                    "uniqueItems": True,
                },
                "limit": integer(
                    f"Rows per list, default {state.STATE_DEFAULT_LIMIT}, at most {state.STATE_MAX_LIMIT}.",
                    minimum=1,
                    maximum=state.STATE_MAX_LIMIT,
                ),
                "cursor": string("next_cursor of the previous page.", maxLength=4096),
                "summary": boolean("Counts only."),
            }
        ),
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
            "Events: the latest, or those after after_event_id (oldest first); wait_ms waits for one of types."
        ),
        input_schema=obj(
            {
                "run_id": string(),
                "limit": integer("Default 10, at most 200."),
                "after_event_id": integer(minimum=0),
                "wait_ms": integer(minimum=0, maximum=30000),
                "types": strings(),
            }
        ),
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
            },
        ),
        handler=watch,
        mode="none",
        read_only=True,
    ),
    ToolSpec(
        name="agent.turn_request",
        description=(
            "Ask the Chair for a turn in an active run (turns are not needed without one). One outstanding request per agent and run; then watch for agent.turn_scheduled."
        ),
        input_schema=obj(
            {"run_id": _RUN, "agent_id": _AGENT, "reason_md": string("Why you need a turn (1-1000 characters).")},
            ["run_id", "reason_md"],
        ),
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
        allow_blank=_TURN_ARGS | {"reason_md"},
    ),
    ToolSpec(
        name="agent.turn_start",
        description=("Start your turn once agent.turn_scheduled names your request."),
        input_schema=obj(
            {"run_id": _RUN, "agent_id": _AGENT, "request_event_id": _REQUEST},
            ["run_id", "request_event_id"],
        ),
        output_schema=result({"event": RECORD, "request_event_id": integer(), "status": string()}),
        handler=turn_start,
        mode="none",  # refuses an unscheduled start on a read, opens its write only to record one
        allow_blank=_TURN_ARGS,
    ),
    ToolSpec(
        name="agent.turn_complete",
        description=("Finish your turn; the Chair schedules the next request."),
        input_schema=obj(
            {"run_id": _RUN, "agent_id": _AGENT, "request_event_id": _REQUEST},
            ["run_id", "request_event_id"],
        ),
        output_schema=result({"event": RECORD, "request_event_id": integer(), "status": string()}),
        handler=turn_complete,
        allow_blank=_TURN_ARGS,
    ),
]
