"""One pattern for the console's background reads: at most one read in flight, and requests
that arrive while it runs collapse into one more read of the newest request.

The refresh (overview) and the inspector (one record) both use it. A read is never cancelled
mid-way (cancelling an aiosqlite query can leave its connection busy, see
`VirtualList._load_count`); instead the runner checks for a newer request when it finishes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Coalescer(Generic[T]):
    """`request(x)` runs `job(x)` now, or — when a job is running — once more afterwards with the
    newest `x` (earlier pending requests are dropped). `start` launches the runner loop in a
    worker of the caller's choosing; `idle` says nothing is running or pending."""

    def __init__(self, job: Callable[[T], Awaitable[None]], start: Callable[[], object]) -> None:
        self._job = job
        self._start = start
        self._running = False
        self._pending: list[T] = []  # at most one: the newest request
        self.latest: T | None = None

    @property
    def idle(self) -> bool:
        return not self._running and not self._pending

    @property
    def superseded(self) -> bool:
        """A newer request is waiting (the running job's result is already out of date)."""
        return bool(self._pending)

    def request(self, item: T) -> None:
        self.latest = item
        self._pending[:] = [item]
        if not self._running:
            self._running = True
            self._start()

    async def run(self) -> None:
        """The runner: call from the worker `start` launched."""
        try:
            while self._pending:
                item = self._pending.pop()
                await self._job(item)
            # No await between the loop's last check and here: no request can slip through.
        finally:
            self._running = False
