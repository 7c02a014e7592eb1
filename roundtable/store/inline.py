"""Point reads on the event loop's own thread, while they are measured to be fast.

A read answered by one primary-key lookup (a task, a resource, a bearer token's row) costs
SQLite about 10-20 µs; sending it to a reader's worker thread and back costs several times that
(the queue, the thread's wake-up, the GIL hand-over, `call_soon_threadsafe`). `InlineReader`
runs such a read on a plain `sqlite3` connection of the loop's thread instead, in its own
snapshot, and keeps it there only while it stays under `LIMIT_S`:

- every inline read is timed (the loop thread's CPU time, so a machine busy with other
  processes does not count against it); every `WINDOW` reads, when the median of the window
  passes `LIMIT_S`, inline reads stop for `BACKOFF_CALLS` calls (they go to a reader thread as
  before), then are tried again — each further slow window doubles the pause, up to
  `BACKOFF_MAX`. The median, not the mean: a collection of Python's garbage
  collector that happens to start inside a read is not the read's cost;
- the connection never waits for a lock (`busy_timeout` 0): a read that would wait is answered
  by a reader thread instead, so the loop never blocks on another process;
- it is opened `query_only`: nothing can write through it.

`recent_us()` gives the last durations for the benchmarks (`bench.transports` reports their p99).
"""

from __future__ import annotations

import collections
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

T = TypeVar("T")

LIMIT_S = 50e-6  # the median inline read must stay under this, or reads go back to a thread
# Reads sent to a thread after a window's median passed the limit: one window at first, so a
# burst of contention (other processes thrashing the caches) costs a few hops, not a thousand;
# doubled after each further slow window (reads that stay slow, e.g. cold after every idle
# spell, are then tried inline ever more rarely), back to one window after a fast one.
BACKOFF_CALLS = 64
BACKOFF_MAX = 4096
WINDOW = 32  # reads per judgement
_RECENT = 4096  # durations kept for reporting


class Missing:
    """The answer of an inline read that did not run (send it to a reader thread)."""


MISSING = Missing()


def _in_snapshot(conn: sqlite3.Connection, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    conn.execute("BEGIN")
    try:
        return fn(conn, *args)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


class InlineReader:
    """A loop-thread connection for bounded point reads, gated by their measured duration."""

    def __init__(self, path: Path, *, read_only: bool = False, limit_s: float = LIMIT_S) -> None:
        self.path = path
        self.read_only = read_only
        self.limit_s = limit_s
        self.median_s = 0.0  # of the last full window
        self.calls = 0
        self.fallbacks = 0  # reads sent to a thread (backing off, or a lock was held)
        self._skip = 0
        self._backoff = BACKOFF_CALLS  # the next slow window's
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._recent: collections.deque[float] = collections.deque(maxlen=_RECENT)
        self._window: list[float] = []

    def _open(self) -> sqlite3.Connection:
        mode = "ro" if self.read_only else "rw"
        conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode={mode}", uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("PRAGMA query_only = 1")
        self._conn = conn
        return conn

    def call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T | Missing:
        """`fn(connection, *args)` in a snapshot on this thread, or `MISSING` when it should run
        on a reader thread instead (backing off, a lock held, no usable connection)."""
        if self._broken:
            return MISSING
        if self._skip:
            self._skip -= 1
            self.fallbacks += 1
            return MISSING
        try:
            conn = self._conn or self._open()
            started = time.thread_time()
            result = _in_snapshot(conn, fn, args)
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise
            self.fallbacks += 1
            return MISSING
        except sqlite3.ProgrammingError:  # another thread than the one that opened it
            self._broken = True
            return MISSING
        self._measure(time.thread_time() - started)
        return result

    def _measure(self, elapsed: float) -> None:
        self._recent.append(elapsed * 1e6)
        self._window.append(elapsed)
        self.calls += 1
        if len(self._window) < WINDOW:
            return
        self.median_s = sorted(self._window)[WINDOW // 2]
        self._window.clear()
        if self.median_s > self.limit_s:
            self._skip = self._backoff
            self._backoff = min(BACKOFF_MAX, self._backoff * 2)
        else:
            self._backoff = BACKOFF_CALLS

    def recent_us(self) -> list[float]:
        """The durations of the latest inline reads, in µs."""
        return list(self._recent)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
