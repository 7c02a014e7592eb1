"""Run state and turns: `table.get_state`, `table.watch`, `agent.turn_request|start|complete`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from annotated_types import Le, MaxLen
from pydantic import AfterValidator, Field
from pydantic_core import PydanticCustomError

from roundtable.bus import Change
from roundtable.services.args import ITEMS_MAX, Args, Count, Cursor, Flag, Id, Int, Positive, Text, Texts, Word
from roundtable.services.coordination import state, turns
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, integer, result, string

if TYPE_CHECKING:
    StateList = str
else:
    StateList = Literal[state.STATE_KEYS]


def _unique(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise PydanticCustomError("unique", "must not name a list twice")
    return value


class GetStateArgs(Args):
    run_id: Id = ""
    status: Word = Field("", description="Only rows with this status.")
    agent_id: Id = Field("", description="Only rows of this agent.")
    lists: Annotated[list[StateList], MaxLen(ITEMS_MAX), AfterValidator(_unique)] = Field(
        [], json_schema_extra={"uniqueItems": True}
    )
    limit: Annotated[Positive, Le(state.STATE_MAX_LIMIT)] | None = Field(
        None, description=f"Rows per list, default {state.STATE_DEFAULT_LIMIT}, at most {state.STATE_MAX_LIMIT}."
    )
    cursor: Cursor = Field("", description="next_cursor of the previous page.")
    summary: Flag = Field(False, description="Counts only.")


async def get_state(call: Call[GetStateArgs]) -> dict[str, Any]:
    """One page of the table (see `state.state_page`): bounded by default, filterable, with a
    cursor to the next page and a summary mode that returns counts only."""
    a = call.args
    query = state.StateQuery(
        run_id=a.run_id,
        status=a.status,
        agent_id=a.agent_id,
        lists=tuple(k for k in state.STATE_KEYS if k in a.lists) if a.lists else state.STATE_KEYS,
        limit=a.limit or state.STATE_DEFAULT_LIMIT,
        summary=a.summary,
        cursor=a.cursor,
        scope=call.scope,
    )
    return await state.state_page(call.r, query)


class WatchArgs(Args):
    run_id: Id = ""
    limit: Int = Field(0, description="Default 10, at most 200.")
    after_event_id: Count | None = None
    wait_ms: Annotated[Count, Le(30000)] = 0
    types: Texts = []
    everything: Flag = Field(False, description="All events, not only yours.")


async def watch(call: Call[WatchArgs]) -> dict[str, Any]:
    """One read snapshot; in cursor mode with `wait_ms`, long-poll until an event is newer than
    the cursor (of `types`, when given). No connection is held while waiting: the change bus
    wakes the poll, for this process's commits and (through the store's commit watch) for other
    processes' alike — and only for a commit whose events could match, so many agents waiting
    for their turn cost nothing while other work commits.

    An agent that names neither a run nor types (and not `everything`) is shown what concerns
    it (`state.watch_page`'s `concern`): the question it asks at start-up and between steps is
    "what happened to my work", not the project's whole log."""
    a = call.args
    scope = call.scope
    run_id = a.run_id or (scope.run_id if scope is not None else "")
    limit = state.normalise_limit(a.limit)
    after = a.after_event_id
    wait = a.wait_ms / 1000.0
    types = tuple(dict.fromkeys(a.types))
    caller = call.caller
    mine = not (a.everything or a.run_id or types or caller.is_internal or caller.is_anonymous)
    concern = call.agent_id if mine else ""
    db, bus = call.runtime.db, call.runtime.bus
    if after is not None and wait > 0:
        db.watch_commits()  # a CLI process serving this call directly has none running yet
        deadline = time.monotonic() + wait
        with bus.subscribe(maxsize=1, accept=_could_match(run_id, types)) as changes:
            while True:
                async with db.read() as r:
                    if await state.newest_event_after(r, run_id, after, types, concern):
                        break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or await changes.get(remaining) is None:
                    break
    async with db.read() as r:
        return await state.watch_page(r, run_id, limit, after, scope, types, concern)


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


_AGENT = "Your agent id (default: the one your credential names)."
_REQUEST = "From agent.turn_request."


class TurnRequestArgs(Args):
    allow_blank = frozenset({"run_id", "reason_md"})

    run_id: Id
    agent_id: Id = Field("", description=_AGENT)
    reason_md: Text = Field(description="Why (1-1000 characters).")


async def turn_request(call: Call[TurnRequestArgs]) -> dict[str, Any]:
    a = call.args
    return await turns.request_turn(call.w, a.run_id, a.agent_id, a.reason_md)


class TurnArgs(Args):
    allow_blank = frozenset({"run_id"})

    run_id: Id
    agent_id: Id = Field("", description=_AGENT)
    request_event_id: Positive = Field(description=_REQUEST)


async def turn_start(call: Call[TurnArgs]) -> dict[str, Any]:
    a = call.args
    return await turns.poll_start_turn(call.runtime.db, a.run_id, a.agent_id, a.request_event_id)


async def turn_complete(call: Call[TurnArgs]) -> dict[str, Any]:
    a = call.args
    return await turns.complete_turn(call.w, a.run_id, a.agent_id, a.request_event_id)


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
            "Start here: what concerns you (your tasks, claims, proposals and news on them, reviews asked "
            "of you); after_event_id: only newer; wait_ms: wait for types."
        ),
        args=WatchArgs,
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
                "tasks": {**RECORDS, "description": "What concerns you: your open tasks."},
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
        description=("In an active run: ask for a turn, then wait for agent.turn_scheduled."),
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
        description=("Start your turn once agent.turn_scheduled names your request."),
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
