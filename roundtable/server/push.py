"""Server pushes driven by the change bus: resource updates, log messages and list changes.

One `Hub` per MCP server (the HTTP endpoint, each session endpoint). It subscribes to the
runtime's change bus and, for every committed change, works out which resources it touched
(`resources.change_keys`) and pushes

- `notifications/resources/updated` for each subscribed URI touched, with
  `_meta["roundtable/events"]` naming the events behind it (id, type, agent) — the turn queue's
  update when the subscriber's turn is scheduled names `agent.turn_scheduled` and the agent;
- `notifications/message` for events relevant to the principal, at or above the level the
  client set with `logging/setLevel` (nothing before it sets one);
- `notifications/resources/list_changed` when tasks, proposals or runs come and go;
- `notifications/tools/list_changed` when the set of tools the principal may call changes (a
  session's capability revoked or expired, its session, run, agent or task closed).

Handshake-era connections receive them on their standalone stream (the HTTP GET stream, relayed
by the stdio bridge); 2026-07-28 clients on their `subscriptions/listen` stream. Each connection
has its own bounded, coalescing outbox drained by its own task, so a slow client never holds
up the others or the bus. A capability session's pushes stop the moment its capability no
longer passes the checks. Writes by other processes never reach this process's bus: a tick
(1 s) notices events it has not seen and dispatches them too, and re-stats subscribed files.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from roundtable.domain import EventType, ReviewEvent, TurnEvent
from roundtable.server import resources
from roundtable.server.resources import Access, Ref

if TYPE_CHECKING:
    from roundtable.bus import Subscription
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.server.push")

LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
OUTBOX_MAX = 256
SEND_TIMEOUT = 5.0
# A client opens its GET stream just after `initialized`; a push due before it is connected is
# held (coalescing) this long instead of being dropped by the transport.
STREAM_WAIT = 10.0
TICK_SECONDS = 1.0
MAX_SUBSCRIPTIONS = 256  # per connection
META_EVENTS = 20  # events named in one update's _meta
META_KEY = "roundtable/events"
# Tables whose changes can change what a capability session may call.
CAPABILITY_TABLES = frozenset({"session_capabilities", "agent_sessions", "runs", "agents", "tasks", "proposals"})
# Events after which `resources/list` may list something else.
LIST_EVENTS = frozenset(
    {
        EventType.TASK_CREATED,
        EventType.TASK_REPLACED,
        EventType.TASK_UPDATED,
        EventType.PROPOSAL_CREATED,
        EventType.DECISION_RECORDED,
        EventType.PATCH_APPLIED,
        EventType.PATCH_REJECTED,
        EventType.PATCH_ROLLED_BACK,
        "run.started",
        EventType.RUN_CREATED,
        EventType.RUN_ENDED,
        EventType.RUN_ARCHIVED,
    }
)
# For the operator: every event at `info`, these higher.
OPERATOR_LEVELS: dict[str, str] = {
    EventType.APPROVAL_REQUESTED: "notice",
    EventType.PROPOSAL_REVIEW_REQUESTED: "notice",
    EventType.PATCH_APPLIED: "notice",
    EventType.RUN_ENDED: "notice",
    EventType.CAPABILITY_DENIED: "warning",
    EventType.TRANSACTION_RECOVERED: "warning",
    TurnEvent.EXPIRED: "warning",
    EventType.CHAIR_ERROR: "error",
    EventType.PATCH_APPLY_FAILED: "error",
    EventType.PATCH_ROLLBACK_FAILED: "error",
    EventType.ORCHESTRATOR_FAILED: "error",
}
# For an agent: events on its own proposals.
AUTHOR_LEVELS: dict[str, str] = {
    EventType.VOTE_CAST: "info",
    ReviewEvent.COMMENTED: "notice",
    EventType.SECURITY_REVIEWED: "info",
    EventType.TEST_FINISHED: "info",
    EventType.TEST_EVIDENCE_REPORTED: "info",
    EventType.APPROVAL_REQUESTED: "info",
    EventType.APPROVAL_DECIDED: "notice",
    EventType.DECISION_RECORDED: "notice",
    EventType.PATCH_APPLIED: "notice",
    EventType.PATCH_REJECTED: "warning",
    EventType.PATCH_ROLLED_BACK: "warning",
}
CLAIM_LOSS = frozenset(
    {EventType.CLAIM_SUSPENDED, EventType.CLAIM_REVOKED, EventType.CLAIM_EXPIRED, EventType.CLAIM_STALE}
)

Outbound = Callable[[str, dict[str, Any] | None], Awaitable[None]]


def level_index(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 0


@dataclass(eq=False)
class Conn:
    """One client connection (or one `subscriptions/listen` stream) and its outbox."""

    key: int
    access: Access
    outbound: Outbound
    subs: dict[str, Ref] = field(default_factory=dict)
    level: int | None = None
    tools: bool = False
    resources_list: bool = False
    listen: bool = False
    _items: dict[Hashable, tuple[str, dict[str, Any] | None]] = field(default_factory=dict)
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _counter: itertools.count[int] = field(default_factory=itertools.count)
    task: asyncio.Task[None] | None = None
    closed: bool = False
    sent: int = 0
    dropped: int = 0
    # Whether the standalone stream is connected (None: unknown, send at once).
    ready: Callable[[], bool | None] | None = None
    _gave_up: bool = False

    def push(self, method: str, params: dict[str, Any] | None, coalesce: Hashable | None = None) -> None:
        """Queue one notification; an update already queued for the same URI absorbs this one
        (its `_meta` events are merged), and a full outbox drops its oldest item."""
        if self.closed:
            return
        key = coalesce if coalesce is not None else ("unique", next(self._counter))
        queued = self._items.get(key)
        if queued is not None and params is not None:
            old = queued[1] or {}
            merged = list((old.get("_meta") or {}).get(META_KEY, [])) + list(
                (params.get("_meta") or {}).get(META_KEY, [])
            )
            if merged:
                old.setdefault("_meta", {})[META_KEY] = merged[-META_EVENTS:]
            return
        if queued is not None:
            return
        if len(self._items) >= OUTBOX_MAX:
            self._items.pop(next(iter(self._items)))
            self.dropped += 1
        self._items[key] = (method, params)
        self._wake.set()

    async def drain(self) -> None:
        """Send queued notifications in order until closed (a task, or a listen handler)."""
        while not self.closed:
            if not self._items:
                self._wake.clear()
                await self._wake.wait()
                continue
            await self._await_stream()
            if not self._items:
                continue
            key = next(iter(self._items))
            method, params = self._items.pop(key)
            try:
                await asyncio.wait_for(self.outbound(method, params), SEND_TIMEOUT)
                self.sent += 1
            except TimeoutError:
                self.dropped += 1
                log.info("a client did not take a %s notification within %.0f s; dropped", method, SEND_TIMEOUT)
            except asyncio.CancelledError:
                raise
            except Exception:
                self.dropped += 1
                log.debug("notification %s not delivered", method, exc_info=True)

    async def _await_stream(self) -> None:
        """Hold the outbox until the client's standalone stream is connected (bounded)."""
        if self.ready is None:
            return
        deadline = asyncio.get_running_loop().time() + STREAM_WAIT
        while not self.closed and self.ready() is False and not self._gave_up:
            if asyncio.get_running_loop().time() >= deadline:
                self._gave_up = True  # a client without a GET stream: stop waiting for it
                return
            await asyncio.sleep(0.02)
        if self._gave_up and self.ready() is not False:
            self._gave_up = False

    def close(self) -> None:
        self.closed = True
        self._items.clear()
        self._wake.set()
        if self.task is not None and not self.task.done():
            self.task.cancel()


class Hub:
    """Subscriptions and pushes of one MCP server. `start()` inside the server's loop (its
    lifespan); `stop()` at shutdown."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        tool_state: Callable[[], Awaitable[Hashable]] | None = None,
        tool_tables: frozenset[str] = CAPABILITY_TABLES,
        list_changes: bool = True,
        tick: float = TICK_SECONDS,
        stream_ready: Callable[[Any], bool | None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.stream_ready = stream_ready
        self.conns: dict[int, Conn] = {}
        self.tool_state = tool_state
        self.tool_tables = tool_tables  # the tables whose changes may change `tool_state`
        self.list_changes = list_changes
        self.tick = tick
        self._tools: Hashable = None
        self._task: asyncio.Task[None] | None = None
        self._sub: Subscription | None = None
        self._seen = 0
        self._stamps: dict[tuple[str, str], tuple[int, int]] = {}
        self._authors: dict[str, str] = {}
        self._claims: dict[str, str] = {}
        self._keys = itertools.count(1)
        self.dispatched = 0

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is not None:
            return
        self._sub = self.runtime.bus.subscribe(maxsize=1024)
        with contextlib.suppress(Exception):
            async with self.runtime.db.read() as reader:
                self._seen = int(await reader.scalar("SELECT COALESCE(MAX(id), 0) FROM events") or 0)
        if self.tool_state is not None:
            with contextlib.suppress(Exception):
                self._tools = await self.tool_state()
        self._task = asyncio.create_task(self._run(), name="roundtable-push")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self._sub is not None:
            self._sub.close()
            self._sub = None
        for conn in list(self.conns.values()):
            conn.close()
        self.conns.clear()

    # --- connections ----------------------------------------------------------------------

    def attach(self, connection: Any, access: Access) -> Conn | None:
        """The `Conn` of an SDK connection with a standalone channel (None without one: a
        2026-07-28 request has no stream outside its own reply)."""
        if connection is None or not getattr(connection, "has_standalone_channel", False):
            return None
        key = id(connection)
        conn = self.conns.get(key)
        if conn is not None:
            conn.access = access
            return conn

        async def outbound(method: str, params: dict[str, Any] | None) -> None:
            await connection.notify(method, params)

        conn = Conn(key, access, outbound)
        if self.stream_ready is not None:
            check = self.stream_ready
            conn.ready = lambda: check(connection)
        self.conns[key] = conn
        conn.task = asyncio.create_task(conn.drain(), name="roundtable-push-conn")
        stack = getattr(connection, "exit_stack", None)
        if stack is not None:
            stack.callback(self.detach, key)
        return conn

    def open_listen(self, access: Access, outbound: Outbound) -> Conn:
        """A `subscriptions/listen` stream: the handler drains it (`await conn.drain()`)."""
        conn = Conn(-next(self._keys), access, outbound, listen=True)
        self.conns[conn.key] = conn
        return conn

    def end_listens(self) -> None:
        """End every `subscriptions/listen` stream gracefully (at shutdown: each handler then
        answers its request, so no long-lived POST holds the drain)."""
        for conn in list(self.conns.values()):
            if conn.listen:
                conn.close()

    def detach(self, key: int) -> None:
        conn = self.conns.pop(key, None)
        if conn is not None:
            conn.close()

    def subscribe(self, conn: Conn, text: str, ref: Ref) -> None:
        if text not in conn.subs and len(conn.subs) >= MAX_SUBSCRIPTIONS:
            from roundtable.errors import ValidationError

            raise ValidationError(f"at most {MAX_SUBSCRIPTIONS} subscriptions per connection")
        conn.subs[text] = ref
        if ref.kind in ("doc", "file") and ref.key not in self._stamps:
            self._stamps[ref.key] = self._stamp(ref)

    def unsubscribe(self, conn: Conn, text: str) -> None:
        conn.subs.pop(text, None)

    @staticmethod
    def set_level(conn: Conn, level: str) -> None:
        conn.level = level_index(level)

    # --- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        sub = self._sub
        assert sub is not None
        loop = asyncio.get_running_loop()
        next_tick = loop.time() + self.tick
        while True:
            change = await sub.get(timeout=max(0.0, next_tick - loop.time()))
            try:
                if change is not None:
                    await self._on_change(list(change.events), set(change.tables))
                    for extra in sub.drain():
                        await self._on_change(list(extra.events), set(extra.tables))
                if loop.time() >= next_tick:
                    next_tick = loop.time() + self.tick
                    await self._on_tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("push dispatch failed")

    async def _on_change(self, events: list[dict[str, Any]], tables: set[str], *, files: bool = True) -> None:
        for event in events:
            with contextlib.suppress(TypeError, ValueError):
                self._seen = max(self._seen, int(event.get("id") or 0))
        if self.tool_state is not None and tables & self.tool_tables:
            await self._check_tools()
        if not self.conns:
            return
        parsed = [dict(e, _payload=resources.payload_of(e)) for e in events]
        touched = resources.change_keys(parsed, tables)
        if files:
            for key in self._changed_files():
                touched.add(key, None)
        if not touched.keys:
            return
        self.dispatched += 1
        listed = self.list_changes and ("runs" in tables or any(e.get("type") in LIST_EVENTS for e in parsed))
        for conn in list(self.conns.values()):
            if conn.closed:
                continue
            updates: list[tuple[str, list[dict[str, Any]]]] = []
            for text, ref in conn.subs.items():
                hit = touched.keys.get(ref.key)
                if hit is not None:
                    updates.append((text, hit))
            lines = await self._log_lines(conn, parsed) if conn.level is not None and not conn.listen else []
            relist = listed and conn.resources_list
            if not (updates or lines or relist):
                continue
            if not await self._live(conn):
                continue  # revoked, expired or disabled: no more pushes
            for text, hit in updates:
                meta = [_brief(e) for e in hit[-META_EVENTS:]]
                params: dict[str, Any] = {"uri": text}
                if meta:
                    params["_meta"] = {META_KEY: meta}
                conn.push("notifications/resources/updated", params, coalesce=("updated", text))
            for level, data in lines:
                conn.push("notifications/message", {"level": level, "logger": "roundtable", "data": data})
            if relist:
                conn.push("notifications/resources/list_changed", None, coalesce=("list", "resources"))

    async def _on_tick(self) -> None:
        if self.tool_state is not None:
            await self._check_tools()
        # Events written by other processes (they never reach this process's bus).
        wanted = any(c.subs or c.level is not None for c in self.conns.values())
        async with self.runtime.db.read() as reader:
            newest = int(await reader.scalar("SELECT COALESCE(MAX(id), 0) FROM events") or 0)
            rows = []
            if newest > self._seen and wanted:
                rows = await reader.fetchall("SELECT * FROM events WHERE id > ? ORDER BY id LIMIT 500", (self._seen,))
        if not wanted:
            self._seen = max(self._seen, newest)  # nobody to tell: not news later either
            return
        events = [{key: row[key] for key in row.keys()} for row in rows]
        if events or self._stamps:
            await self._on_change(events, {"events"} if events else set())

    async def _live(self, conn: Conn) -> bool:
        try:
            return bool(await conn.access.live())
        except Exception:
            return False

    async def _check_tools(self) -> None:
        assert self.tool_state is not None
        try:
            state = await self.tool_state()
        except Exception:
            log.debug("tool state check failed", exc_info=True)
            return
        if state == self._tools:
            return
        self._tools = state
        for conn in list(self.conns.values()):
            if conn.tools and not conn.closed:
                conn.push("notifications/tools/list_changed", None, coalesce=("list", "tools"))

    # --- files ----------------------------------------------------------------------------

    def _stamp(self, ref: Ref) -> tuple[int, int]:
        import os

        if ref.kind == "doc":
            return resources.doc_stamp(self.runtime.root, ref.ident)
        try:
            st = os.stat(os.path.join(os.fspath(self.runtime.root), ref.ident))
        except (OSError, ValueError):
            return (0, -1)
        return (st.st_mtime_ns, st.st_size)

    def _changed_files(self) -> list[tuple[str, str]]:
        if not self._stamps:
            return []
        wanted = {
            ref.key: ref for conn in self.conns.values() for ref in conn.subs.values() if ref.kind in ("doc", "file")
        }
        for key in [k for k in self._stamps if k not in wanted]:
            del self._stamps[key]
        changed: list[tuple[str, str]] = []
        for key, ref in wanted.items():
            stamp = self._stamp(ref)
            if self._stamps.get(key) != stamp:
                self._stamps[key] = stamp
                changed.append(key)
        return changed

    # --- log messages ---------------------------------------------------------------------

    async def _log_lines(self, conn: Conn, events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        assert conn.level is not None
        out: list[tuple[str, dict[str, Any]]] = []
        for event in events:
            found = await self._relevance(conn.access, event)
            if found is None:
                continue
            level, summary = found
            if level_index(level) < conn.level:
                continue
            data = {
                "event_id": event.get("id"),
                "type": event.get("type"),
                "run_id": event.get("run_id") or "",
                "task_id": event.get("task_id") or "",
                "actor_id": event.get("actor_id") or "",
                "summary": summary,
            }
            out.append((level, data))
        return out

    async def _relevance(self, access: Access, event: dict[str, Any]) -> tuple[str, str] | None:
        """(level, one-line summary) of an event for this principal, or None if it is not news
        to it: the operator hears everything; an agent what concerns it (its turns, its task
        assignments, its proposals, its claims, its denials); an anonymous caller run ends."""
        kind = str(event.get("type") or "")
        payload: dict[str, Any] = event.get("_payload") or {}
        actor = str(event.get("actor_id") or "")
        bound = access.bound
        caller = access.caller
        if bound is None and caller.is_operator:
            return OPERATOR_LEVELS.get(kind, "info"), _summary(kind, payload, actor)
        me = bound.agent_id if bound is not None else caller.agent_id
        if not me:
            if kind in (EventType.RUN_ENDED, EventType.RUN_ARCHIVED):
                return "notice", _summary(kind, payload, actor)
            return None
        if kind == EventType.CAPABILITY_DENIED and actor == me:
            return "warning", f"refused: {payload.get('tool', '?')} ({payload.get('reason_code', '?')})"
        if actor == me:
            return None  # your own action is no news to you
        if kind == TurnEvent.SCHEDULED and payload.get("agent_id") == me:
            return "notice", f"your turn is scheduled (request {payload.get('request_event_id')}): start it now"
        if kind == TurnEvent.EXPIRED and payload.get("agent_id") == me:
            return (
                "warning",
                f"your turn request {payload.get('request_event_id')} expired ({payload.get('timeout', '')})",
            )
        if kind == EventType.TASK_ASSIGNED and payload.get("assigned_agent_id") == me:
            return "notice", f"task {payload.get('task_id')} is assigned to you"
        if kind == EventType.PROPOSAL_REVIEW_REQUESTED and me in (payload.get("reviewers") or ()):
            return "notice", f"your review is requested on proposal {payload.get('proposal_id')}"
        if kind in (EventType.RUN_ENDED, EventType.RUN_ARCHIVED) and (
            bound is None or bound.run_id == event.get("run_id")
        ):
            return "notice", _summary(kind, payload, actor)
        proposal_id = payload.get("proposal_id")
        if kind in AUTHOR_LEVELS and isinstance(proposal_id, str) and await self._author(proposal_id) == me:
            return AUTHOR_LEVELS[kind], f"on your proposal {proposal_id}: " + _summary(kind, payload, actor)
        claim_id = payload.get("claim_id")
        if kind in CLAIM_LOSS and isinstance(claim_id, str) and await self._claimant(claim_id) == me:
            return "warning", f"your claim on {payload.get('resource_id', claim_id)} is {kind.split('.', 1)[1]}"
        return None

    async def _author(self, proposal_id: str) -> str:
        if proposal_id not in self._authors:
            if len(self._authors) > 10_000:
                self._authors.clear()
            async with self.runtime.db.read() as reader:
                self._authors[proposal_id] = str(
                    await reader.scalar("SELECT agent_id FROM proposals WHERE id = ?", (proposal_id,)) or ""
                )
        return self._authors[proposal_id]

    async def _claimant(self, claim_id: str) -> str:
        if claim_id not in self._claims:
            if len(self._claims) > 10_000:
                self._claims.clear()
            async with self.runtime.db.read() as reader:
                self._claims[claim_id] = str(
                    await reader.scalar("SELECT agent_id FROM claims WHERE id = ?", (claim_id,)) or ""
                )
        return self._claims[claim_id]


def _brief(event: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = event.get("_payload") or {}
    out: dict[str, Any] = {"id": event.get("id"), "type": event.get("type")}
    for key in ("agent_id", "request_event_id", "proposal_id", "task_id", "status"):
        value = payload.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            out[key] = value
    if "agent_id" not in out and event.get("actor_id"):
        out["actor_id"] = event.get("actor_id")
    return out


def _summary(kind: str, payload: dict[str, Any], actor: str) -> str:
    parts = [kind]
    for key in ("proposal_id", "task_id", "agent_id", "status", "vote", "decision", "reason", "error"):
        value = payload.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            parts.append(f"{key}={str(value)[:120]}")
    if actor:
        parts.append(f"by {actor}")
    return " ".join(parts)
