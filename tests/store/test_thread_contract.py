"""The aiosqlite internals `roundtable/store/thread.py` relies on, pinned to the installed aiosqlite.

`on_thread` uses `Connection._execute(fn, *args)` (queue `fn(*args)` on the connection's worker
thread, in order with the public calls) and `Connection._conn` (the `sqlite3.Connection`). An
aiosqlite upgrade that renames or changes either fails here; re-check them, then move
`CHECKED_AIOSQLITE` to the new version.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import sqlite3
import threading
from pathlib import Path

import aiosqlite
import pytest

from roundtable.store.thread import CHECKED_AIOSQLITE, on_thread

pytestmark = pytest.mark.anyio


def test_the_installed_aiosqlite_is_the_checked_one() -> None:
    assert importlib.metadata.version("aiosqlite") == CHECKED_AIOSQLITE


def test_the_private_attributes_exist_with_the_shape_used() -> None:
    assert inspect.iscoroutinefunction(aiosqlite.Connection._execute)
    params = list(inspect.signature(aiosqlite.Connection._execute).parameters.values())
    assert [p.kind for p in params[1:]] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,  # fn
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.VAR_KEYWORD,
    ]
    assert isinstance(inspect.getattr_static(aiosqlite.Connection, "_conn"), property)


async def test_on_thread_runs_a_sync_function_of_the_raw_connection_in_queue_order(tmp_path: Path) -> None:
    conn = await aiosqlite.connect(str(tmp_path / "c.db"), isolation_level=None)
    try:
        await conn.execute("CREATE TABLE t (x INTEGER)")
        loop_thread = threading.get_ident()

        def insert_and_count(raw: sqlite3.Connection, value: int, *, times: int) -> tuple[int, bool]:
            assert isinstance(raw, sqlite3.Connection)
            raw.execute("BEGIN")
            raw.executemany("INSERT INTO t VALUES (?)", [(value,)] * times)
            count = raw.execute("SELECT count(*) FROM t").fetchone()[0]
            raw.execute("COMMIT")
            return count, threading.get_ident() != loop_thread

        # Queued behind a public call made first, ahead of one made after: one ordered queue.
        first = conn.execute("INSERT INTO t VALUES (0)")
        counted = on_thread(conn, insert_and_count, 7, times=3)
        await first
        assert await counted == (4, True)
        assert list(await conn.execute_fetchall("SELECT count(*) FROM t")) == [(4,)]

        def fails(raw: sqlite3.Connection) -> None:
            raw.execute("SELECT * FROM missing")

        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            await on_thread(conn, fails)
    finally:
        await conn.close()
    with pytest.raises(ValueError):
        await on_thread(conn, lambda raw: None)
