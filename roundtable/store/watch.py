"""Noticing commits by anyone — this process's writer, the CLI, another owner — in one place.

SQLite's `PRAGMA data_version` returns a number that changes, on one connection, whenever any
*other* connection has committed to the database since that connection last asked. One dedicated
read-only connection asking it is therefore a cheap (one round trip, no table read) and complete
"has anything changed?" signal.

`publish_external_commits` is the one place that asks: started by `Database.watch_commits`, it
polls on an interval and publishes a `Change(external=True)` on the change bus when a commit
happened that this process did not announce itself — so the console, `table.watch` long polls
and the Chair learn of other processes' writes from the same bus as of their own.

`DataVersion` asks the same question synchronously, on the calling thread (`Database.data_version`,
used by the HTTP credential cache to know that nothing changed).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import aiosqlite

from roundtable.bus import Change, ChangeBus
from roundtable.errors import StoreError


class DataVersion:
    """SQLite's `PRAGMA data_version` of one read-only connection, opened on first use on the
    calling thread: a number that changes whenever another connection committed since it last
    asked. None when it cannot be told (then nothing may be taken as unchanged)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None

    def current(self) -> int | None:
        try:
            conn = self._conn or self._open()
            row = conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:  # busy, gone, or used from another thread than the one that opened it
            return None
        return int(row[0]) if row is not None else None

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 0")
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()


class CommitWatch:
    """`await changed()` is True the first time and whenever a commit happened since the last call.
    `asked` counts the answers (the first is the baseline), so a caller can tell that the watch
    has looked since a moment it cares about."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.asked = 0
        self._conn: aiosqlite.Connection | None = None
        self._last: int | None = None

    async def changed(self) -> bool:
        if self._conn is None:
            try:
                self._conn = await aiosqlite.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True)
            except sqlite3.Error as exc:
                raise StoreError(f"open database {self.path}: {exc}") from None
        async with self._conn.execute("PRAGMA data_version") as cursor:
            row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        changed = version != self._last
        self._last = version
        self.asked += 1
        return changed

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()


async def publish_external_commits(
    watch: CommitWatch,
    bus: ChangeBus,
    interval: float,
    problem: Callable[[], str] = lambda: "",
    committing: Callable[[], bool] = lambda: False,
) -> None:
    """Poll `watch` every `interval` seconds until cancelled; publish `Change(external=True)` when
    the database changed and no in-process commit was announced meanwhile (an in-process commit
    already woke every subscriber, and they re-read the database anyway) — and when `problem()`
    (the database file removed or replaced, see `Database.file_problem`) appears or clears, so
    readers notice a database that is no longer there. A change seen while `committing()` (this
    process's own COMMIT is in flight, its announcement not yet made) is left to that announcement."""
    # The bus's version is read before each question and again after its answer: a commit of
    # ours announced while the question is on the connection's thread (the question may have
    # seen it) counts as announced, now and at the next poll, or its change would be published
    # a second time as another process's.
    seen = bus.version
    await watch.changed()  # the baseline
    trouble = problem()
    try:
        while True:
            await asyncio.sleep(interval)
            asked_at = bus.version
            changed = await watch.changed()
            now = problem()
            ours = asked_at != seen or bus.version != asked_at or committing()
            seen, trouble, before = asked_at, now, trouble
            if (changed and not ours) or now != before:
                bus.publish(Change(external=True))
                seen += 1  # that publish is no commit of ours
    finally:
        await watch.close()
