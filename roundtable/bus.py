"""The in-process change bus: committed writes are announced here, after the commit.

Subscribers are the console (refresh panes), `table.watch` (long poll with `wait_ms`) and the
Chair (wake at once after `agent.turn_complete`). Commits by other processes (the CLI, another
owner) arrive here too, as `Change(external=True)`, from the one `PRAGMA data_version` watch of
the store (`Database.watch_commits`). Publishing never blocks: each subscriber has a
bounded queue and a full queue drops the oldest item, since a reader only needs to know that
something changed and re-reads the database anyway.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Change:
    """One committed write transaction: the tool (if any) and the events it appended.
    `external` marks a commit by another process (seen through `PRAGMA data_version`, see
    `store/watch.py`): only that something changed is known, so its tool and events are empty."""

    tool: str = ""
    events: tuple[dict[str, Any], ...] = ()
    tables: frozenset[str] = field(default_factory=frozenset)
    external: bool = False

    @property
    def event_types(self) -> set[str]:
        return {str(e.get("type", "")) for e in self.events}


class Subscription:
    """A bounded queue of changes; iterate it, or `get()` with a timeout."""

    def __init__(
        self, bus: ChangeBus, maxsize: int, accept: Callable[[Change], bool] | None = None, *, long_poll: bool = False
    ) -> None:
        self._bus = bus
        self._queue: asyncio.Queue[Change] = asyncio.Queue(maxsize)
        self._accept = accept
        self.long_poll = long_poll

    def _offer(self, change: Change, *, always: bool = False) -> None:
        if not always and self._accept is not None and not self._accept(change):
            return
        if self._queue.full():
            try:
                self._queue.get_nowait()
            except asyncio.QueueEmpty:  # pragma: no cover - race-free on one loop
                pass
        self._queue.put_nowait(change)

    async def get(self, timeout: float | None = None) -> Change | None:
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None

    def drain(self) -> list[Change]:
        items: list[Change] = []
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items

    def close(self) -> None:
        self._bus._subscribers.discard(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aiter__(self) -> AsyncIterator[Change]:
        while True:
            yield await self._queue.get()


class ChangeBus:
    """Fan-out of `Change`s to subscribers on one event loop. `version` counts publishes."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self.version = 0
        self._waiters: asyncio.Event | None = None
        self.stopping = False  # the owner is stopping: long polls answer with what they have

    def subscribe(
        self, maxsize: int = 256, accept: Callable[[Change], bool] | None = None, *, long_poll: bool = False
    ) -> Subscription:
        """A new subscription; with `accept`, only the changes it returns true for are queued
        (checked at publish time, so a waiter is not woken by changes it does not care about).
        A `long_poll` subscription (a request waiting for news) is also woken by `end_long_polls`."""
        sub = Subscription(self, maxsize, accept, long_poll=long_poll)
        self._subscribers.add(sub)
        return sub

    def end_long_polls(self) -> None:
        """The owner is stopping: wake every long poll, which then answers with what it has
        (`stopping` tells it not to wait again), instead of holding its request, and so the
        shutdown's drain, until its deadline. Other subscribers are not woken."""
        self.stopping = True
        for sub in list(self._subscribers):
            if sub.long_poll:
                sub._offer(Change(), always=True)

    def publish(self, change: Change) -> None:
        self.version += 1
        for sub in list(self._subscribers):
            sub._offer(change)
        if self._waiters is not None:
            self._waiters.set()
            self._waiters = None

    async def wait_for_change(self, after_version: int, timeout: float) -> bool:
        """Wait until `version` exceeds `after_version` or `timeout` seconds pass."""
        if self.version > after_version:
            return True
        if self._waiters is None:
            self._waiters = asyncio.Event()
        event = self._waiters
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return self.version > after_version
        return True
