"""A write's COMMIT is queued on the writer's thread before the lock passes on, and answered
after: the next writer goes on meanwhile, commits are announced in commit order, a COMMIT that
fails leaves the connection clean for the writer queued behind it, and a writer cancelled while
its COMMIT is on its way still gets it committed and announced."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from roundtable.errors import StoreError
from roundtable.store.db import Database
from tests.store.conftest import until

pytestmark = pytest.mark.anyio


def _titles(path: Path) -> list[str]:
    """What another connection sees committed."""
    con = sqlite3.connect(path)
    try:
        return [row[0] for row in con.execute("SELECT title FROM tasks ORDER BY title")]
    finally:
        con.close()


async def test_the_next_writer_goes_on_before_the_last_commit_is_answered(db: Database, tmp_path: Path) -> None:
    order: list[str] = []
    sub = db.bus.subscribe()

    async def writer(name: str) -> None:
        async with db.write(tool=name) as tx:
            order.append(f"{name} in")
            await tx.insert("tasks", {"id": f"T-{name}", "title": name, "body_md": "b"})
            await tx.append_event("RUN-1", "task.created", {"task_id": f"T-{name}"})
        order.append(f"{name} answered")

    first = asyncio.create_task(writer("a"))
    await until(lambda: bool(order))
    second = asyncio.create_task(writer("b"))
    await asyncio.gather(first, second)
    # b had the lock (and its statements queued behind a's COMMIT) before a's answer came back.
    assert order.index("b in") < order.index("a answered")
    assert _titles(tmp_path / "rt.db") == ["a", "b"]
    assert [c.tool for c in sub.drain()] == ["a", "b"]  # announced in commit order
    assert db.commits == 2


async def test_a_failed_commit_fails_its_writer_alone(db: Database, tmp_path: Path) -> None:
    async with db.write() as tx:
        await tx.execute("CREATE TABLE parent (id TEXT PRIMARY KEY)")
        await tx.execute("CREATE TABLE child (parent_id TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)")
    sub = db.bus.subscribe()
    order: list[str] = []

    async def orphan() -> None:
        async with db.write(tool="orphan") as tx:
            order.append("orphan in")
            # A deferred foreign key is checked at COMMIT: this COMMIT fails.
            await tx.execute("INSERT INTO child (parent_id) VALUES ('missing')")
            await tx.insert("tasks", {"id": "T-orphan", "title": "orphan", "body_md": "b"})

    async def behind() -> None:
        async with db.write(tool="behind") as tx:
            await tx.insert("tasks", {"id": "T-behind", "title": "behind", "body_md": "b"})

    failing = asyncio.create_task(orphan())
    await until(lambda: bool(order))
    after = asyncio.create_task(behind())
    with pytest.raises(StoreError, match="commit failed: FOREIGN KEY constraint failed; nothing of this call"):
        await failing
    await after
    assert _titles(tmp_path / "rt.db") == ["behind"]
    assert [c.tool for c in sub.drain()] == ["behind"]


async def test_a_writer_cancelled_while_its_commit_is_queued_is_still_committed(db: Database, tmp_path: Path) -> None:
    sub = db.bus.subscribe()
    started: list[str] = []
    cancelled: list[asyncio.Task[None]] = []

    async def first() -> None:
        async with db.write(tool="first") as tx:
            started.append("first")
            await tx.insert("tasks", {"id": "T-first", "title": "first", "body_md": "b"})

    async def second() -> None:
        async with db.write(tool="second") as tx:
            cancelled[0].cancel()  # first's COMMIT is queued and not yet answered
            await tx.insert("tasks", {"id": "T-second", "title": "second", "body_md": "b"})

    task = asyncio.create_task(first())
    cancelled.append(task)
    await until(lambda: bool(started))
    other = asyncio.create_task(second())
    with pytest.raises(asyncio.CancelledError):
        await task
    await other
    assert _titles(tmp_path / "rt.db") == ["first", "second"]
    assert [c.tool for c in sub.drain()] == ["first", "second"]
