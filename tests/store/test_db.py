"""The store: migrations, pragmas, transactions, the change bus and the record classes."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

import pytest

from roundtable.errors import StoreError
from roundtable.store.db import Database
from roundtable.store.records import ALL_RECORDS, Task
from roundtable.store.schema import SCHEMA_VERSION, TABLES

pytestmark = pytest.mark.anyio


def _schema(path: Path) -> list[tuple[str, str]]:
    con = sqlite3.connect(path)
    try:
        return sorted(con.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
    finally:
        con.close()


async def test_migration_is_idempotent_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "rt.db"
    db = await Database.open(path)
    await db.close()
    first = _schema(path)
    db = await Database.open(path)
    await db.close()
    assert _schema(path) == first
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert set(TABLES) <= tables


async def test_database_file_is_private_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "rt.db"
    db = await Database.open(path)
    try:
        assert os.stat(path).st_mode & 0o777 == 0o600
        async with db.read() as r:
            assert (await r.scalar("PRAGMA journal_mode")) == "wal"
            assert (await r.scalar("PRAGMA foreign_keys")) == 1
            assert (await r.scalar("PRAGMA busy_timeout")) == 5000
            assert (await r.scalar("PRAGMA synchronous")) == 1
    finally:
        await db.close()


async def test_newer_schema_refuses_to_open(tmp_path: Path) -> None:
    path = tmp_path / "rt.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(StoreError, match="newer than this roundtable supports"):
        await Database.open(path)


async def test_failed_transaction_rolls_back_and_publishes_nothing(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "rt.db")
    sub = db.bus.subscribe()
    try:
        with pytest.raises(RuntimeError):
            async with db.write() as tx:
                await tx.insert("tasks", {"id": "T-1", "title": "t", "body_md": "b"})
                await tx.append_event("RUN-1", "task.created", {"task_id": "T-1"})
                raise RuntimeError("boom")
        async with db.read() as r:
            assert await r.scalar("SELECT count(*) FROM tasks") == 0
            assert await r.scalar("SELECT count(*) FROM events") == 0
        assert sub.drain() == []
        async with db.write(tool="task.create") as tx:
            await tx.insert("tasks", {"id": "T-2", "title": "t", "body_md": "b"})
            event = await tx.append_event("RUN-1", "task.created", {"task_id": "T-2"})
        change = await sub.get(1)
        assert change is not None and change.tool == "task.create"
        assert [e["id"] for e in change.events] == [event.id]
    finally:
        await db.close()


async def test_records_match_schema_and_null_becomes_zero(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "rt.db")
    try:
        async with db.read() as r:
            for cls in ALL_RECORDS:
                columns = [row[1] for row in await r.fetchall(f"PRAGMA table_info({cls.table})")]
                assert [f.name for f in dataclasses.fields(cls)] == columns, cls.table
        async with db.write() as tx:
            await tx.insert("tasks", {"id": "T-1", "title": "t", "body_md": "b"})
        async with db.read() as r:
            task = await r.one(Task, "SELECT * FROM tasks")
        assert task is not None
        assert task.assigned_agent_id == ""
        assert task.to_dict()["priority"] == 100
    finally:
        await db.close()


async def test_cancelled_writer_never_leaves_a_transaction_open(tmp_path: Path) -> None:
    import asyncio

    db = await Database.open(tmp_path / "rt.db")
    try:

        async def slow_write() -> None:
            async with db.write() as tx:
                await tx.insert("tasks", {"id": "T-slow", "title": "t", "body_md": "b"})
                await asyncio.sleep(10)

        for delay in (0, 0.0001, 0.001, 0.01):
            task = asyncio.create_task(slow_write())
            await asyncio.sleep(delay)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        async with db.write() as tx:
            assert await tx.execute("UPDATE tasks SET title = 'x' WHERE id = 'none'") == 0
            await tx.insert("tasks", {"id": "T-ok", "title": "t", "body_md": "b"})
        async with db.read() as r:
            assert [row[0] for row in await r.fetchall("SELECT id FROM tasks")] == ["T-ok"]
    finally:
        await db.close()


async def test_cancelled_reads_never_poison_the_pool(tmp_path: Path) -> None:
    import asyncio

    db = await Database.open(tmp_path / "rt.db", readers=1)
    try:

        async def slow_read() -> None:
            async with db.read() as r:
                await r.scalar("SELECT count(*) FROM tasks")
                await asyncio.sleep(10)

        for delay in (0, 0.0001, 0.001, 0.01):
            task = asyncio.create_task(slow_read())
            await asyncio.sleep(delay)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        async with db.read() as r:
            assert await r.scalar("SELECT count(*) FROM tasks") == 0
    finally:
        await db.close()


async def test_readers_never_create_a_missing_database(tmp_path: Path) -> None:
    path = tmp_path / "rt.db"
    db = await Database.open(path)
    try:
        path.rename(tmp_path / "moved.db")
        with pytest.raises(StoreError):
            async with db.read() as r:
                await r.scalar("SELECT 1")
        assert not path.exists()
    finally:
        await db.close()


async def test_reads_see_one_snapshot_across_queries(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "rt.db")
    try:
        async with db.read() as r:
            first = await r.scalar("SELECT count(*) FROM tasks")
            async with db.write() as tx:
                await tx.insert("tasks", {"id": "T-new", "title": "t", "body_md": "b"})
            assert await r.scalar("SELECT count(*) FROM tasks") == first == 0
        async with db.read() as r:
            assert await r.scalar("SELECT count(*) FROM tasks") == 1
    finally:
        await db.close()
