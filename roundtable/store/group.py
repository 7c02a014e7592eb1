"""Group commit: the writer's lock, and the batch of writers that share one SQLite transaction.

Writers take the lock one at a time (`WriteLock`), and each runs its own statements in turn, as
before; what changes is where the transaction ends. When a writer finishes and another is
already waiting for the lock, the transaction stays open and the lock passes on: the next writer
runs inside the same transaction, in a savepoint of its own. The writer that finds nobody waiting
— or the batch full (`MAX_MEMBERS`), or older than `MAX_AGE_S`, or itself urgent — commits once
for all of them. One COMMIT (and one `BEGIN`, folded into the first statement's round trip) then
serves a whole batch, which is where concurrent writes gain; a lone writer never waits for
company, so a single call costs what it did.

Each writer keeps its own outcome: a refusal rolls back to its savepoint (nothing of it stays)
while its neighbours go on; its events are published, and its caller answered, only once the
COMMIT succeeded; a failed COMMIT fails every writer of the batch and publishes nothing. Event
ids and fencing numbers stay gap-free and increasing in commit order: writers run one after
another, and a rolled-back savepoint leaves no ids behind.

`Batch` is the bookkeeping of one open transaction; `store/db.py` drives it (`Database.write`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roundtable.bus import Change

MAX_MEMBERS = 32  # writers per transaction at most
MAX_AGE_S = 0.010  # a batch older than this commits at its next writer's end


@dataclass
class Job:
    """A write whose whole work is one synchronous function of the connection,
    `fn(conn, tx, *args)` (`Database.write_run`): a lock holder may run it for its caller, with
    others, in its own round trip to the writer's thread. `done` carries its outcome once the
    transaction it ran in has committed."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    tx: Any  # the job's `Tx` (its events, tables and principal)
    tool: str
    done: asyncio.Future[Any]


@dataclass
class _Waiter:
    future: asyncio.Future[bool]
    job: Job | None


class WriteLock:
    """The writer's lock: first come, first served, except that an urgent writer (the Chair's
    turn hand-over) goes before every ordinary one already waiting. Under fifty agents' writes
    the ordinary queue is ~50 transactions deep; a hand-over should not wait behind it. The lock
    passes straight to the next waiter on release, so nobody can barge in between.

    A waiter may carry a `Job`: the holder can then take it out of the queue and run it itself
    (`take_jobs`), and the waiter, instead of the lock, gets its job's outcome.

    `on_idle` is asked, when the lock is released with nobody waiting, whether it takes the lock
    over (returns True: the lock stays held, by whoever it hands it to) — the batch left open by
    a writer whose successor was cancelled as the lock reached it is committed that way."""

    def __init__(self, on_idle: Callable[[], bool] | None = None) -> None:
        self._locked = False
        self._urgent: collections.deque[_Waiter] = collections.deque()
        self._ordinary: collections.deque[_Waiter] = collections.deque()
        self._on_idle = on_idle

    def locked(self) -> bool:
        return self._locked

    def waiting(self) -> int:
        return sum(not w.future.done() for w in (*self._urgent, *self._ordinary))

    async def acquire(self, *, urgent: bool = False, job: Job | None = None) -> bool:
        """Wait for the lock: True once it is ours; False when a holder took `job` to run (its
        outcome then comes on `job.done`)."""
        if not self._locked:
            self._locked = True
            return True
        queue = self._urgent if urgent else self._ordinary
        waiter = _Waiter(asyncio.get_running_loop().create_future(), job)
        queue.append(waiter)
        try:
            return await waiter.future
        except asyncio.CancelledError:
            future = waiter.future
            if future.done() and not future.cancelled():
                if future.result():
                    self.release()  # handed the lock just as we were cancelled: pass it on
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(waiter)
            raise

    def release(self) -> None:
        for queue in (self._urgent, self._ordinary):
            while queue:
                waiter = queue.popleft()
                if not waiter.future.done():
                    waiter.future.set_result(True)  # ownership passes; the lock stays locked
                    return
        if self._on_idle is not None and self._on_idle():
            return
        self._locked = False

    def take_jobs(self, limit: int) -> list[Job]:
        """Up to `limit` jobs of the ordinary waiters at the head of the queue, in order (none
        while an urgent writer waits, and none past a waiter without a job: order is kept)."""
        if any(not w.future.done() for w in self._urgent):
            return []
        jobs: list[Job] = []
        while self._ordinary and len(jobs) < limit:
            waiter = self._ordinary[0]
            if waiter.future.done():
                self._ordinary.popleft()
                continue
            if waiter.job is None:
                break
            self._ordinary.popleft()
            waiter.future.set_result(False)
            jobs.append(waiter.job)
        return jobs


@dataclass
class Batch:
    """One open write transaction and the writers in it.

    `members` counts the writers that ended in it, `succeeded` those that did not fail;
    `changes` are the finished writers' announcements, in order, published after the COMMIT;
    `waiters` counts finished writers waiting for it (`done`). `savepoint` is the last finished
    writer's savepoint, released by the next writer's first statement (or by the COMMIT).
    `lost` says why the transaction was rolled back whole under its writers (SQLite ends a
    transaction on some errors, such as a full disk): the batch then fails."""

    started: float
    done: asyncio.Future[None]
    members: int = 0
    succeeded: int = 0
    waiters: int = 0
    changes: list[Change] = field(default_factory=list)
    savepoint: str = ""
    lost: str = ""
    _names: int = 0

    def prelude(self, begun: bool) -> tuple[tuple[str, ...], str]:
        """(statements the next writer's first round trip runs first, its savepoint name).
        The transaction's first writer opens it (`BEGIN IMMEDIATE`) and needs no savepoint: its
        failure rolls the whole (otherwise empty) transaction back."""
        if not begun:
            return ("BEGIN IMMEDIATE",), ""
        self._names += 1
        name = f"rt_member_{self._names}"
        release = (f"RELEASE {self.savepoint}",) if self.savepoint else ()
        return (*release, f"SAVEPOINT {name}"), name

    def open_for(self, now: float) -> bool:
        """Whether another writer may still join."""
        return not self.lost and self.members < MAX_MEMBERS and now - self.started < MAX_AGE_S
