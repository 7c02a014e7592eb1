"""The aiosqlite internals `roundtable/store/thread.py` relies on, pinned to the installed aiosqlite.

`submit` (and `on_thread` through it) puts `(future, function)` on `Connection._tx`, the worker
thread's queue, as `Connection._execute` does, after checking `Connection._running`, and passes
`Connection._conn` (the `sqlite3.Connection`) to the function. An aiosqlite upgrade that renames
or changes any of them fails here; re-check them, then move `CHECKED_AIOSQLITE` to the new version.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import queue
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
    assert isinstance(inspect.getattr_static(aiosqlite.Connection, "_conn"), property)
    # `_execute` is what `submit` mirrors: it queues `(future, function)` on `_tx` after the check.
    source = inspect.getsource(aiosqlite.Connection._execute)
    assert "if not self._running or not self._connection" in source
    assert "self._tx.put_nowait((future, function))" in source


async def test_the_worker_queue_and_running_flag_are_what_submit_uses(tmp_path: Path) -> None:
    conn = await aiosqlite.connect(str(tmp_path / "q.db"), isolation_level=None)
    try:
        assert conn._running is True
        assert isinstance(conn._tx, queue.SimpleQueue)
    finally:
        await conn.close()
    assert conn._running is False


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
