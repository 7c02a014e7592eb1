"""Sync functions of the connection on its own thread: `Reader.run` inside the read's snapshot,
`Tx.run`/`Tx.emit` inside the write transaction (published only after the commit)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.errors import NotFound
from roundtable.store.db import Database
from roundtable.store.records import Task

pytestmark = pytest.mark.anyio


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "rt.db", readers=2)
    async with database.write() as tx:
        for i in range(3):
            await tx.insert("tasks", {"id": f"T-{i}", "title": f"t{i}", "body_md": "b"})
    try:
        yield database
    finally:
        await database.close()


async def test_a_read_runs_a_sync_function_on_the_readers_thread_in_its_snapshot(db: Database) -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def ids(conn: sqlite3.Connection) -> list[str]:
        seen.append(threading.get_ident())
        assert conn.in_transaction  # the read's snapshot is open around the function
        return [row[0] for row in conn.execute("SELECT id FROM tasks ORDER BY id")]

    async with db.read() as r:
        assert await r.run(ids) == ["T-0", "T-1", "T-2"]
        assert await r.scalar("SELECT count(*) FROM tasks") == 3
    assert seen and seen[0] != loop_thread
    await asyncio.gather(*db._pending)  # the snapshots end without being waited for
    assert not any(conn.in_transaction for conn in db._all_readers)


async def test_errors_come_back_as_they_are(db: Database) -> None:
    def boom(conn: sqlite3.Connection) -> None:
        raise NotFound("task", "T-missing")

    with pytest.raises(NotFound, match="T-missing"):
        async with db.read() as r:
            await r.run(boom)
    with pytest.raises(NotFound, match="T-missing"):
        async with db.read() as r:
            await r.get(Task, "T-missing")
    await asyncio.gather(*db._pending)  # the snapshots end without being waited for
    assert not any(conn.in_transaction for conn in db._all_readers)


async def test_tx_run_and_emit_commit_together_and_publish_after_commit(db: Database) -> None:
    version = db.bus.version

    def create(conn, tx):  # type: ignore[no-untyped-def]
        conn.execute("INSERT INTO tasks (id, title, body_md) VALUES ('T-9', 'nine', 'b')")
        return tx.emit(conn, "RUN-1", "task.created", {"task_id": "T-9"}, task_id="T-9")

    async with db.write(tool="test") as tx:
        event = await tx.run(create, tx)
        assert event.id > 0 and db.bus.version == version  # nothing published before the commit
    assert db.bus.version > version
    async with db.read() as r:
        assert await r.scalar("SELECT type FROM events WHERE id = ?", (event.id,)) == "task.created"

    with pytest.raises(RuntimeError, match="boom"):
        async with db.write(tool="test") as tx:

            def fail(conn, tx):  # type: ignore[no-untyped-def]
                tx.emit(conn, "RUN-1", "task.created", {"task_id": "T-10"})
                conn.execute("INSERT INTO tasks (id, title, body_md) VALUES ('T-10', 'ten', 'b')")
                raise RuntimeError("boom")

            await tx.run(fail, tx)
    async with db.read() as r:
        assert await r.scalar("SELECT count(*) FROM tasks WHERE id = 'T-10'") == 0
        assert await r.scalar("SELECT count(*) FROM events WHERE task_id = 'T-10'") == 0
