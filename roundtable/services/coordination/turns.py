"""The turn queue: requests, the Chair's scheduling, starts, completions and expiry.

A turn has no table of its own; its state is read from the run's events, in id order:
`agent.turn_requested` (the request; its event id is the request id) → `agent.turn_scheduled`
(Chair) → `agent.turn_started` (agent) → `agent.turn_completed` (agent). The Chair may end a
request early with `agent.turn_expired`: a scheduled turn not started within
`chair.turn_start_timeout`, a started turn not completed within `chair.turn_timeout`, or a request
of an agent that is no longer enabled. An expired request counts as finished everywhere.

Every function here runs inside the caller's transaction (the tools run in `BEGIN IMMEDIATE`,
so the read-check-append of a request is serialised across processes by SQLite's write lock),
except `poll_start_turn` (the tool `agent.turn_start`), which refuses a start that is not yet allowed on a read snapshot first and
only then opens its write transaction: agents that poll it before their turn cost a point read.
The agents' three turn operations are declared here (`TurnRequestArgs`, `TurnArgs`) and received
whole; `start_turn` is the start itself, for callers that hold a transaction.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from roundtable import clock
from roundtable.domain import CHAIR_ID, TURN_EVENTS, RunStatus, TurnEvent
from roundtable.errors import NotYet, ToolError, ValidationError
from roundtable.services.args import Args, Id, Positive, Text
from roundtable.services.coordination.agents import get_agent
from roundtable.services.coordination.runs import get_run
from roundtable.services.run_scope import active_runs
from roundtable.store import rows
from roundtable.store.db import Database, Reader, Tx
from roundtable.store.records import Event, Run

log = logging.getLogger("roundtable.turns")

REQUESTED = TurnEvent.REQUESTED.value
SCHEDULED = TurnEvent.SCHEDULED.value
STARTED = TurnEvent.STARTED.value
COMPLETED = TurnEvent.COMPLETED.value
EXPIRED = TurnEvent.EXPIRED.value
MAX_REASON = 1000


@dataclass
class Turn:
    """One request and how far it got."""

    request_event_id: int
    agent_id: str
    reason_md: str
    requested_at: str
    scheduled_at: str = ""
    scheduled_for: str = ""
    started_at: str = ""
    completed_at: str = ""
    expired_at: str = ""
    expired_reason: str = ""

    @property
    def finished(self) -> bool:
        return bool(self.completed_at or self.expired_at)

    @property
    def in_flight(self) -> bool:
        """Scheduled and not finished (whether or not it has started)."""
        return bool(self.scheduled_at) and not self.finished

    @property
    def status(self) -> str:
        if self.expired_at:
            return "expired"
        if self.completed_at:
            return "completed"
        if self.started_at:
            return "started"
        if self.scheduled_at:
            return "scheduled"
        return "requested"

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_event_id": self.request_event_id,
            "agent_id": self.agent_id,
            "reason_md": self.reason_md,
            "status": self.status,
            "requested_at": self.requested_at,
            "scheduled_at": self.scheduled_at,
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "expired_at": self.expired_at,
            "expired_reason": self.expired_reason,
        }


def _payload(event: Event) -> dict[str, Any]:
    try:
        value = json.loads(event.payload_json)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def load_turns(q: Reader | Tx, run_id: str) -> dict[int, Turn]:
    """Every turn request of `run_id` with its lifecycle, keyed by request id (ascending).

    A lifecycle event whose payload cannot be decoded is skipped and logged: we write these
    payloads ourselves, and one damaged row must not jam the whole queue (spec weakness 33)."""
    # No ORDER BY: SQLite would then pick the (run_id, id) index and walk every event of the
    # run; (run_id, type, id) finds the turn events directly and they are sorted here.
    events = await q.all(
        Event,
        f"SELECT * FROM events WHERE run_id = ? AND type IN ({', '.join('?' for _ in TURN_EVENTS)})",
        (run_id, *TURN_EVENTS),
    )
    events.sort(key=lambda e: e.id)
    return _turns_from(events, run_id)


# The request the latest `agent.turn_scheduled` of a run named (0 when none). Turns are scheduled
# one at a time, the oldest unfinished request first, so when that request was scheduled every
# older one had finished — and a finished turn stays finished: the open requests are among the
# ones from it on.
_FLOOR = (
    "coalesce((SELECT json_extract(payload_json, '$.request_event_id') FROM events"
    " WHERE run_id = ? AND type = ? ORDER BY id DESC LIMIT 1), 0)"
)


async def load_open_turns(q: Reader | Tx, run_id: str) -> dict[int, Turn]:
    """The unfinished turn requests of `run_id` (`load_turns` without the finished ones), keyed by
    request id. Only the requests from the last scheduled one on (`_FLOOR`) and the finishing
    events after it are read, then the events from the oldest unfinished request on, so the work
    stays near the queue's size as the run's history grows."""
    finished = {
        int(row[0])
        for row in await q.fetchall(
            "SELECT json_extract(payload_json, '$.request_event_id') FROM events WHERE run_id = ? "
            f"AND type IN (?, ?) AND id > {_FLOOR} AND json_type(payload_json, '$.request_event_id') = 'integer'",
            (run_id, COMPLETED, EXPIRED, run_id, SCHEDULED),
        )
    }
    requests = await q.fetchall(
        f"SELECT id FROM events WHERE run_id = ? AND type = ? AND id >= {_FLOOR}",
        (run_id, REQUESTED, run_id, SCHEDULED),
    )
    open_ids = [int(row[0]) for row in requests if int(row[0]) not in finished]
    if not open_ids:
        return {}
    events = await q.all(
        Event,
        f"SELECT * FROM events WHERE run_id = ? AND type IN ({', '.join('?' for _ in TURN_EVENTS)}) AND id >= ?",
        (run_id, *TURN_EVENTS, min(open_ids)),
    )
    events.sort(key=lambda e: e.id)
    return {rid: turn for rid, turn in _turns_from(events, run_id).items() if not turn.finished}


_REQUEST_SQL = "SELECT * FROM events WHERE id = ? AND run_id = ? AND type = ?"
_LATER = [t for t in TURN_EVENTS if t != REQUESTED]
_LATER_SQL = (
    f"SELECT * FROM events WHERE run_id = ? AND type IN ({', '.join('?' for _ in _LATER)}) AND id > ? "
    "AND json_extract(payload_json, '$.request_event_id') = ?"
)


async def load_turn(q: Reader | Tx, run_id: str, request_id: int) -> Turn | None:
    """One turn request of `run_id` and its lifecycle, or None: the request event by its id, then
    the lifecycle events after it that name it — the work grows with the events since the
    request, not with the run's history."""
    request = await q.one(Event, _REQUEST_SQL, (request_id, run_id, REQUESTED))
    if request is None:
        return None
    events = await q.all(Event, _LATER_SQL, (run_id, *_LATER, request_id, request_id))
    events.sort(key=lambda e: e.id)
    return _turns_from([request, *events], run_id).get(request_id)


def _load_turn_on(conn: sqlite3.Connection, run_id: str, request_id: int) -> Turn | None:
    """`load_turn` on a connection's own thread (the same two queries)."""
    found = rows.records(conn, Event, _REQUEST_SQL, (request_id, run_id, REQUESTED))
    if not found:
        return None
    events = rows.records(conn, Event, _LATER_SQL, (run_id, *_LATER, request_id, request_id))
    events.sort(key=lambda e: e.id)
    return _turns_from([found[0], *events], run_id).get(request_id)


def _turns_from(events: list[Event], run_id: str) -> dict[int, Turn]:
    """Turns from turn events in id order (a request first, then what happened to it)."""
    turns: dict[int, Turn] = {}
    for event in events:
        payload = _payload(event)
        if event.type == REQUESTED:
            reason = payload.get("reason_md")
            turns[event.id] = Turn(
                request_event_id=event.id,
                agent_id=event.actor_id or str(payload.get("agent_id", "")),
                reason_md=reason if isinstance(reason, str) else "",
                requested_at=event.created_at,
            )
            continue
        request_id = payload.get("request_event_id")
        if not isinstance(request_id, int) or isinstance(request_id, bool):
            log.warning("skipping turn event %s of run %s: no request_event_id in payload", event.id, run_id)
            continue
        turn = turns.get(request_id)
        if turn is None:
            continue
        if event.type == SCHEDULED and not turn.scheduled_at:
            turn.scheduled_at = event.created_at
            turn.scheduled_for = str(payload.get("agent_id", ""))
        elif event.type == STARTED and not turn.started_at:
            turn.started_at = event.created_at
        elif event.type == COMPLETED and not turn.completed_at:
            turn.completed_at = event.created_at
        elif event.type == EXPIRED and not turn.expired_at:
            turn.expired_at = event.created_at
            turn.expired_reason = str(payload.get("timeout", ""))
    return turns


def outstanding(turns: dict[int, Turn]) -> dict[str, Turn]:
    """Unfinished requests, the oldest per agent, in request order."""
    out: dict[str, Turn] = {}
    for turn in turns.values():
        if not turn.finished and turn.agent_id not in out:
            out[turn.agent_id] = turn
    return dict(sorted(out.items(), key=lambda item: item[1].request_event_id))


async def _require(tx: Reader | Tx, tool: str, run_id: str, agent_id: str, **more: str) -> None:
    """Refuse a turn call that lacks a field, naming exactly the missing ones; a missing
    `run_id` also says which runs are active — or that, with none, turns are not needed."""
    missing = [name for name, value in (("run_id", run_id), ("agent_id", agent_id), *more.items()) if not value]
    if not missing:
        return
    text = f"{tool}: missing {' and '.join(missing)}"
    if "run_id" in missing:
        active = await active_runs(tx)
        if not active:
            text += (
                "; no run is active, and turns are needed only inside an active run: "
                "without one, work directly (claim, propose, review)"
            )
        elif len(active) == 1:
            text += f"; the active run is {active[0]}: pass run_id {active[0]}"
        else:
            text += f"; name one of the active runs: {', '.join(active)}"
    raise ValidationError(text)


_AGENT = "Your agent id (default: the one your credential names)."


class TurnRequestArgs(Args):
    # `agent.turn_request`: a blank run or reason is refused by `_require`, naming what is missing.
    allow_blank = frozenset({"run_id", "reason_md"})

    run_id: Id
    agent_id: Id = Field(default="", description=_AGENT)
    # The bound applies to the trimmed reason, so `request_turn` checks it (not a maxLength).
    reason_md: Text = Field(description="Why (1-1000 characters).")


class TurnArgs(Args):
    # `agent.turn_start` and `agent.turn_complete`.
    allow_blank = frozenset({"run_id"})

    run_id: Id
    agent_id: Id = Field(default="", description=_AGENT)
    request_event_id: Positive = Field(description="From agent.turn_request.")


async def request_turn(tx: Tx, args: TurnRequestArgs) -> dict[str, Any]:
    """`agent.turn_request`: queue a request (or return the agent's outstanding one)."""
    run_id, agent_id, reason = args.run_id, args.agent_id, args.reason_md.strip()
    await _require(tx, "agent.turn_request", run_id, agent_id, reason_md=reason)
    if len(reason) > MAX_REASON:
        raise ValidationError(f"reason_md must be {MAX_REASON} characters or fewer")
    run = await get_run(tx, run_id)
    if run.status != RunStatus.ACTIVE:
        raise ToolError(f"run {run_id} is {run.status} and cannot accept turn requests")
    agent = await get_agent(tx, agent_id)
    if not agent.is_enabled:
        raise ToolError(f"agent {agent_id} is disabled")
    pending = outstanding(await load_open_turns(tx, run_id))
    duplicate = agent_id in pending
    if duplicate:
        request_id = pending[agent_id].request_event_id
    else:
        event = await tx.append_event(
            run_id,
            REQUESTED,
            {"agent_id": agent_id, "reason_md": reason, "requested_at": clock.now()},
            actor_id=agent_id,
        )
        request_id = event.id
    ahead = sum(1 for other, t in pending.items() if other != agent_id and t.request_event_id < request_id)
    return {
        "request_event_id": request_id,
        "agent_id": agent_id,
        "queued": True,
        "duplicate": duplicate,
        "queue_position": ahead + 1,
    }


NOT_SCHEDULED = (
    "turn request has not been scheduled by the Chair yet; do not poll agent_turn_start: wait for "
    "agent.turn_scheduled naming your request (table_watch with after_event_id, wait_ms and types "
    "[agent.turn_scheduled, agent.turn_expired], or subscribe to roundtable://turns/{run_id}), then call it once"
)


async def _check_lifecycle(q: Reader | Tx, run_id: str, agent_id: str, request_id: int, event_type: str) -> None:
    """Refuse a start or completion the request's state does not allow (reads only)."""
    if request_id <= 0:
        raise ValidationError(_BAD_REQUEST_ID)
    await _require(q, "agent.turn_start" if event_type == STARTED else "agent.turn_complete", run_id, agent_id)
    _judge(await get_run(q, run_id), await load_turn(q, run_id, request_id), run_id, agent_id, event_type)


def _check_start_on(conn: sqlite3.Connection, run_id: str, agent_id: str, request_id: int) -> None:
    """`_check_lifecycle` of a start with every field given, on a connection's own thread: the
    run and the turn read in one hop."""
    _judge(rows.get(conn, Run, run_id), _load_turn_on(conn, run_id, request_id), run_id, agent_id, STARTED)


_BAD_REQUEST_ID = "request_event_id must be a positive number (the one agent.turn_request returned)"


def _judge(run: Run, turn: Turn | None, run_id: str, agent_id: str, event_type: str) -> None:
    """Refuse what a run's status and a turn's state do not allow for `event_type`."""
    if run.status != RunStatus.ACTIVE:
        raise ToolError(f"run {run_id} is {run.status} and cannot accept turn lifecycle events")
    if turn is not None and turn.scheduled_for and turn.scheduled_for != turn.agent_id:
        raise ToolError("turn request was scheduled for a different agent")
    if turn is None or turn.agent_id != agent_id:
        raise ToolError("turn request not found for this agent")
    if turn.completed_at:
        raise ToolError("turn request is already complete")
    if turn.expired_at:
        raise ToolError("turn request has expired")
    if event_type == STARTED:
        if not turn.scheduled_at:
            raise NotYet(NOT_SCHEDULED.format(run_id=run_id))
        if turn.started_at:
            raise ToolError("turn request has already started")
    elif not turn.started_at:
        raise ToolError("turn request has not started")


async def _lifecycle(tx: Tx, run_id: str, agent_id: str, request_id: int, event_type: str) -> dict[str, Any]:
    await _check_lifecycle(tx, run_id, agent_id, request_id, event_type)
    event = await tx.append_event(
        run_id, event_type, {"agent_id": agent_id, "request_event_id": request_id}, actor_id=agent_id
    )
    return {"event": event.to_dict(), "request_event_id": request_id, "status": event_type}


async def start_turn(tx: Tx, run_id: str, agent_id: str, request_id: int) -> dict[str, Any]:
    """Acknowledge a turn the Chair scheduled, inside the caller's transaction."""
    return await _lifecycle(tx, run_id, agent_id, request_id, STARTED)


async def poll_start_turn(db: Database, args: TurnArgs) -> dict[str, Any]:
    """`agent.turn_start`: checked first on a read snapshot, so a call before the turn is
    scheduled (an agent polling) is refused after one hop to a reader (the run and the turn's
    events by index) without taking the write lock; an allowed start is checked again and
    recorded in one write transaction."""
    run_id, agent_id, request_id = args.run_id, args.agent_id, args.request_event_id
    if run_id and agent_id:
        await db.read_call(_check_start_on, run_id, agent_id, request_id)
    else:  # a missing field: the refusal names it (and the active runs)
        async with db.read() as r:
            await _check_lifecycle(r, run_id, agent_id, request_id, STARTED)
    async with db.write(tool="agent.turn_start") as tx:
        return await start_turn(tx, run_id, agent_id, request_id)


async def complete_turn(tx: Tx, args: TurnArgs) -> dict[str, Any]:
    """`agent.turn_complete`: finish a started turn so the queue moves on."""
    return await _lifecycle(tx, args.run_id, args.agent_id, args.request_event_id, COMPLETED)


# --- the Chair's side --------------------------------------------------------------------------


def overdue(
    turns: Iterable[Turn], now: str, *, start_timeout: float, turn_timeout: float, enabled: set[str]
) -> list[tuple[Turn, str]]:
    """The unfinished turns to expire at `now`, each with why: scheduled but not started in
    time, started but not completed in time, or requested by an agent no longer enabled."""
    now_ns = clock.parse(now)
    due: list[tuple[Turn, str]] = []
    for turn in turns:
        if turn.finished:
            continue
        reason = ""
        if turn.agent_id not in enabled:
            reason = "agent_disabled"
        elif turn.started_at:
            if now_ns - clock.parse(turn.started_at) > turn_timeout * 1e9:
                reason = "turn_timeout"
        elif turn.scheduled_at and now_ns - clock.parse(turn.scheduled_at) > start_timeout * 1e9:
            reason = "turn_start_timeout"
        if reason:
            due.append((turn, reason))
    return due


def next_to_schedule(turns: Iterable[Turn]) -> Turn | None:
    """The oldest unfinished request not yet scheduled, unless a turn is in flight."""
    turns = list(turns)
    if any(t.in_flight for t in turns):
        return None
    waiting = [t for t in turns if not t.finished and not t.scheduled_at]
    return min(waiting, key=lambda t: t.request_event_id) if waiting else None


async def expire_overdue(
    tx: Tx, run_id: str, now: str, *, start_timeout: float, turn_timeout: float, enabled: set[str]
) -> list[dict[str, Any]]:
    """Expire the run's `overdue` turns at `now`. Returns what was expired."""
    expired: list[dict[str, Any]] = []
    turns = (await load_open_turns(tx, run_id)).values()
    for turn, reason in overdue(turns, now, start_timeout=start_timeout, turn_timeout=turn_timeout, enabled=enabled):
        payload = {"agent_id": turn.agent_id, "request_event_id": turn.request_event_id, "timeout": reason}
        await tx.append_event(run_id, EXPIRED, payload, actor_id=CHAIR_ID)
        expired.append(payload)
    return expired


# Why the turns of an agent whose session ended were expired (`agent.turn_expired`'s `timeout`).
SESSION_EXITED = "session_exited"


async def hand_back(tx: Tx, run_id: str, agent_id: str, session_id: str) -> list[dict[str, Any]]:
    """Expire every unfinished turn request of `agent_id` in `run_id` because its session ended
    (`SESSION_EXITED`): a turn held by a process that is gone would otherwise block the run's
    queue until `chair.turn_timeout`. Returns what was expired."""
    expired: list[dict[str, Any]] = []
    for turn in (await load_open_turns(tx, run_id)).values():
        if turn.finished or turn.agent_id != agent_id:
            continue
        payload = {
            "agent_id": agent_id,
            "request_event_id": turn.request_event_id,
            "timeout": SESSION_EXITED,
            "session_id": session_id,
        }
        await tx.append_event(run_id, EXPIRED, payload, actor_id=CHAIR_ID)
        expired.append(payload)
    return expired


async def schedule_next(tx: Tx, run_id: str) -> dict[str, Any] | None:
    """Schedule the oldest unfinished request unless a turn is in flight; returns the payload."""
    turn = next_to_schedule((await load_open_turns(tx, run_id)).values())
    if turn is None:
        return None
    payload = {
        "agent_id": turn.agent_id,
        "request_event_id": turn.request_event_id,
        "reason": turn.reason_md or None,
        "position": 1,
    }
    await tx.append_event(run_id, SCHEDULED, payload, actor_id=CHAIR_ID)
    return payload


async def has_outstanding(q: Reader | Tx, run_id: str) -> bool:
    return bool(outstanding(await load_open_turns(q, run_id)))
