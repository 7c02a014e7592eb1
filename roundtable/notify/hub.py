"""The notifier: follows the event log and tells the operator's sinks what needs them.

It keeps a cursor on the `events` table (starting at the newest event when it starts: what was
already there is not news) and reads past it whenever the change bus announces a commit — by this
process or, through the store's commit watch, by any other — and at least every `POLL` seconds.
Each event `kinds.from_event` maps to a notification, of a kind in `notify.events`, goes to every
sink: the webhooks' queues, `notify-send`, and the listeners (the console's terminal alerts).
Sinks never block: the follower only queues, so nothing on a tool call's path waits for a sink.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from roundtable.domain import EventType
from roundtable.notify import desktop as desktop_sink
from roundtable.notify.kinds import EVENT_KINDS, Notification, from_event
from roundtable.notify.webhooks import STATUS_FILE, WebhookSender

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.notify")

POLL = 2.0
BATCH = 500
_TYPES = tuple(EVENT_KINDS)


class Notifier:
    """One per owner: `await start()`, `await close()`; `add_listener` for in-process sinks."""

    def __init__(self, runtime: Runtime, *, desktop: bool | None = None, poll: float = POLL) -> None:
        self.runtime = runtime
        config = runtime.config.notify
        self.kinds = frozenset(config.events)
        self.webhooks = WebhookSender(
            config.webhooks,
            retries=config.retries,
            retry_backoff=config.retry_backoff,
            status_path=runtime.root / STATUS_FILE,
        )
        program = desktop_sink.available() if (config.desktop if desktop is None else desktop) else ""
        self.desktop = desktop_sink.Desktop(program) if program else None
        self.poll = poll
        self.project = runtime.config.project_name
        self._listeners: list[Callable[[Notification], None]] = []
        self._cursor = 0
        self._task: asyncio.Task[None] | None = None
        self.sent: list[Notification] = []  # the latest ones, newest last (bounded)

    def add_listener(self, listener: Callable[[Notification], None]) -> None:
        """Call `listener(notification)` on the loop for each notification (it must not block)."""
        self._listeners.append(listener)

    async def start(self) -> None:
        async with self.runtime.db.read() as r:
            self._cursor = int(await r.scalar("SELECT coalesce(max(id), 0) FROM events") or 0)
        self.webhooks.start()
        self._task = asyncio.create_task(self._follow(), name="roundtable-notify")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None
        await self.webhooks.close()
        if self.desktop is not None:
            await self.desktop.close()

    async def _follow(self) -> None:
        with self.runtime.bus.subscribe(maxsize=1024) as changes:
            while True:
                try:
                    await self.catch_up()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("reading events to notify failed")
                await changes.get(self.poll)
                changes.drain()

    async def catch_up(self) -> list[Notification]:
        """Notify every new event past the cursor; returns what was sent."""
        marks = ", ".join("?" for _ in _TYPES)
        sent: list[Notification] = []
        while True:
            async with self.runtime.db.read() as r:
                rows = await r.fetchall(
                    f"SELECT id, run_id, type, task_id, payload_json, created_at FROM events"
                    f" WHERE id > ? AND type IN ({marks}) ORDER BY id LIMIT ?",
                    (self._cursor, *_TYPES, BATCH),
                )
                approvals = [
                    str(json_field(row[4], "approval_id")) for row in rows if row[2] == EventType.APPROVAL_REQUESTED
                ]
                subjects = await _subjects(r, approvals)
            for row in rows:
                self._cursor = max(self._cursor, int(row[0]))
                subject = (
                    subjects.get(str(json_field(row[4], "approval_id")), "")
                    if row[2] == EventType.APPROVAL_REQUESTED
                    else ""
                )
                n = from_event(
                    int(row[0]),
                    str(row[1] or ""),
                    str(row[2]),
                    str(row[3] or ""),
                    str(row[4]),
                    str(row[5]),
                    self.project,
                    {"subject": subject} if subject else None,
                )
                if n is not None and n.kind in self.kinds:
                    self.dispatch(n)
                    sent.append(n)
            if len(rows) < BATCH:
                return sent

    def dispatch(self, n: Notification) -> None:
        """Hand `n` to every sink (queues only: nothing here waits)."""
        self.sent = [*self.sent[-99:], n]
        self.webhooks.submit(n)
        if self.desktop is not None:
            self.desktop.submit(n)
        for listener in list(self._listeners):
            try:
                listener(n)
            except Exception:
                log.exception("a notification listener failed")


def json_field(payload_json: str, key: str) -> Any:
    """One field of an event's JSON payload ('' when absent or unreadable)."""
    try:
        value = json.loads(payload_json or "{}")
    except ValueError:
        return ""
    return value.get(key, "") if isinstance(value, dict) else ""


async def _subjects(reader: Any, approval_ids: list[str]) -> dict[str, str]:
    """What each approval asks (its subject), for the notification's message."""
    wanted = [a for a in approval_ids if a]
    if not wanted:
        return {}
    marks = ", ".join("?" for _ in wanted)
    rows = await reader.fetchall(f"SELECT id, subject FROM human_approvals WHERE id IN ({marks})", tuple(wanted))
    return {str(row[0]): str(row[1] or "") for row in rows}
