"""The writer's lock: first come, first served, except that an urgent writer goes first.

One writer connection serves the whole process, so its transactions are serialised here. The
Chair's short transactions (a turn's hand-over) are urgent: under fifty agents' writes the
ordinary queue can be tens of transactions deep, and a hand-over should not wait behind it. The
lock passes straight to the next waiter on release, so nobody can barge in between.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib


class WriteLock:
    def __init__(self) -> None:
        self._locked = False
        self._urgent: collections.deque[asyncio.Future[None]] = collections.deque()
        self._ordinary: collections.deque[asyncio.Future[None]] = collections.deque()

    def locked(self) -> bool:
        return self._locked

    def waiting(self) -> int:
        return sum(not f.done() for f in (*self._urgent, *self._ordinary))

    async def acquire(self, *, urgent: bool = False) -> None:
        if not self._locked:
            self._locked = True
            return
        queue = self._urgent if urgent else self._ordinary
        future = asyncio.get_running_loop().create_future()
        queue.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # handed the lock just as we were cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(future)
            raise

    def release(self) -> None:
        for queue in (self._urgent, self._ordinary):
            while queue:
                future = queue.popleft()
                if not future.done():
                    future.set_result(None)  # ownership passes; the lock stays locked
                    return
        self._locked = False
