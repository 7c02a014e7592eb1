"""`Database.read_call`: a read handler in one hop on a reader's thread, one snapshot, and the
fallback to the event loop for a handler that needs it; `Tx.run`/`Tx.emit` on the writer's thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.errors import NotFound
from roundtable.store.db import Database, Reader
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


async def test_a_plain_read_handler_runs_on_the_readers_thread_in_one_snapshot(db: Database) -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    async def handler(r: Reader) -> list[str]:
        seen.append(threading.get_ident())
        first = [t.id for t in await r.all(Task, "SELECT * FROM tasks ORDER BY id")]
        second = await r.scalar("SELECT count(*) FROM tasks")
        assert second == len(first)
        return first

    assert await db.read_call(handler) == ["T-0", "T-1", "T-2"]
    assert seen and seen[0] != loop_thread
    # The snapshot was closed in the same hop: no pooled reader is left inside a transaction.
    assert not any(conn._conn.in_transaction for conn in db._all_readers)


async def test_errors_come_back_as_they_are(db: Database) -> None:
    async def handler(r: Reader) -> Task:
        return await r.get(Task, "T-missing")

    with pytest.raises(NotFound, match="T-missing"):
        await db.read_call(handler)
    assert not any(conn._conn.in_transaction for conn in db._all_readers)


async def test_a_handler_that_needs_the_event_loop_runs_again_on_it(db: Database) -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    async def suspends(r: Reader) -> int:
        threads.append(threading.get_ident())
        await asyncio.sleep(0.001)  # a real suspension: only the event loop can finish this
        return int(await r.scalar("SELECT count(*) FROM tasks"))

    assert await db.read_call(suspends) == 3
    assert threads[0] != loop_thread and threads[-1] == loop_thread and len(threads) == 2

    async def uses_aiosqlite(r: Reader) -> int:
        rows = await r.conn.execute_fetchall("SELECT count(*) FROM tasks")
        return int(next(iter(rows))[0])

    assert await db.read_call(uses_aiosqlite) == 3

    async def looks_for_the_loop(r: Reader) -> int:
        count = await asyncio.to_thread(lambda: 3)
        return count + int(await r.scalar("SELECT count(*) FROM tasks"))

    assert await db.read_call(looks_for_the_loop) == 6


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
