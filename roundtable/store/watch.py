"""Noticing commits by anyone — this process's writer, the CLI, another owner — in one place.

SQLite's `PRAGMA data_version` returns a number that changes, on one connection, whenever any
*other* connection has committed to the database since that connection last asked. One dedicated
read-only connection asking it is therefore a cheap (one round trip, no table read) and complete
"has anything changed?" signal: the Chair uses it to skip cycles in which nothing happened.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

import aiosqlite

from roundtable.errors import StoreError


class CommitWatch:
    """`await changed()` is True the first time and whenever a commit happened since the last call."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
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
        return changed

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()
