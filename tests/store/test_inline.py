"""Bounded point reads on the event loop's thread (`store/inline.py`, `Database.read_point`):
answered there while measured fast, on a reader's thread otherwise, never writing."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.errors import NotFound
from roundtable.store import rows
from roundtable.store.db import Database
from roundtable.store.inline import BACKOFF_CALLS, WINDOW
from roundtable.store.records import Task

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "rt.db", readers=2)
    async with database.write() as tx:
        await tx.insert("tasks", {"id": "T-1", "title": "one", "body_md": "b"})
    try:
        yield database
    finally:
        await database.close()


def _title(conn: sqlite3.Connection, task_id: str) -> tuple[str, int]:
    return rows.get(conn, Task, task_id).title, threading.get_ident()


async def test_a_point_read_runs_on_the_loop_thread_and_sees_the_latest_commit(db: Database) -> None:
    title, thread = await db.read_point(_title, "T-1")
    assert (title, thread) == ("one", threading.get_ident())
    async with db.write() as tx:
        await tx.execute("UPDATE tasks SET title = 'two' WHERE id = 'T-1'")
    assert (await db.read_point(_title, "T-1"))[0] == "two"  # a new snapshot every read
    with pytest.raises(NotFound):
        await db.read_point(_title, "T-missing")
    assert db.inline.calls >= 2 and db.inline.recent_us()


async def test_reads_measured_slower_than_the_limit_go_back_to_a_reader_thread(db: Database) -> None:
    db.inline.limit_s = 0.0  # every inline read is "too slow"
    for _ in range(WINDOW):  # measured; the window's median closes the gate
        _, thread = await db.read_point(_title, "T-1")
        assert thread == threading.get_ident()
    title, thread = await db.read_point(_title, "T-1")
    assert title == "one" and thread != threading.get_ident()
    assert db.inline.fallbacks == 1 and db.inline._skip == BACKOFF_CALLS - 1


async def test_reads_that_stay_slow_are_tried_inline_ever_more_rarely_and_fast_ones_reset(db: Database) -> None:
    db.inline.limit_s = 0.0
    pauses = []
    for _ in range(3):  # a slow window, then the pause it earns
        for _ in range(WINDOW):
            await db.read_point(_title, "T-1")
        pauses.append(db.inline._skip)
        for _ in range(db.inline._skip):
            await db.read_point(_title, "T-1")
    assert pauses == [BACKOFF_CALLS, 2 * BACKOFF_CALLS, 4 * BACKOFF_CALLS]
    db.inline.limit_s = 10.0  # fast again: a good window restores the first pause
    for _ in range(WINDOW):
        await db.read_point(_title, "T-1")
    db.inline.limit_s = 0.0
    for _ in range(WINDOW):
        await db.read_point(_title, "T-1")
    assert db.inline._skip == BACKOFF_CALLS


async def test_the_inline_connection_cannot_write(db: Database) -> None:
    def write(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE tasks SET title = 'x'")

    with pytest.raises(sqlite3.OperationalError, match=r"readonly|read-only|query_only"):
        await db.read_point(write)
    assert (await db.read_point(_title, "T-1"))[0] == "one"
