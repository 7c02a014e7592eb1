"""The store's one commit watch: another process's commit reaches this process's change bus as a
`Change(external=True)`; this process's own commits are announced once, by the writer, not twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundtable.bus import Change
from roundtable.store.db import Database
from tests.helpers import eventually

pytestmark = pytest.mark.anyio


async def _insert_task(db: Database, task_id: str) -> None:
    async with db.write(tool="test") as tx:
        await tx.insert("tasks", {"id": task_id, "title": "t", "body_md": "b"})


async def _polled(db: Database, times: int = 1) -> None:
    """Wait until the watch has asked `times` more times than now (the first answer is its baseline)."""
    target = db.commit_polls + times

    async def done() -> bool:
        return db.commit_polls >= target

    await eventually(done, timeout=5, what=f"{times} poll(s) of the commit watch")


async def test_another_connections_commit_is_published_as_external(tmp_path: Path) -> None:
    path = tmp_path / "rt.db"
    ours = await Database.open(path)
    theirs = await Database.open(path)  # another process's writer, with its own bus
    try:
        ours.watch_commits(interval=0.02)
        ours.watch_commits(interval=0.02)  # idempotent: one watch
        with ours.bus.subscribe() as sub:
            await _polled(ours)  # the baseline is taken
            await _insert_task(theirs, "T-theirs")
            change = await sub.get(timeout=5)
        assert change == Change(external=True)
    finally:
        await theirs.close()
        await ours.close()


async def test_another_processs_commits_one_after_another_are_each_published(tmp_path: Path) -> None:
    """The watch's own announcement is no commit of ours: the next external commit is published too."""
    path = tmp_path / "rt.db"
    ours = await Database.open(path)
    theirs = await Database.open(path)
    try:
        with ours.bus.subscribe() as sub:
            ours.watch_commits(interval=0.02)
            await _polled(ours)  # the baseline is taken
            for n in range(3):
                await _insert_task(theirs, f"T-{n}")
                assert await sub.get(timeout=5) == Change(external=True)
    finally:
        await theirs.close()
        await ours.close()


async def test_own_commits_are_not_announced_twice(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "rt.db")
    try:
        db.watch_commits(interval=0.02)
        await _polled(db)  # the baseline
        with db.bus.subscribe() as sub:
            await _insert_task(db, "T-1")
            await _polled(db, 3)  # several polls after the commit: none may announce it again
            changes = sub.drain()
        assert [c.external for c in changes] == [False]
        assert changes[0].tool == "test"
    finally:
        await db.close()


async def test_close_stops_the_watch(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "rt.db")
    db.watch_commits(interval=0.02)
    await _polled(db)  # running
    await db.close()
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "roundtable-commit-watch" and not t.done()]


async def test_a_database_file_that_disappears_and_returns_is_announced(tmp_path: Path) -> None:
    path = tmp_path / "rt.db"
    db = await Database.open(path)
    try:
        db.watch_commits(interval=0.02)
        await _polled(db)
        with db.bus.subscribe() as sub:
            path.rename(tmp_path / "moved.db")
            gone = await sub.get(timeout=5)
            (tmp_path / "moved.db").rename(path)
            back = await sub.get(timeout=5)
        assert gone == back == Change(external=True)
        assert db.file_problem() == ""
    finally:
        await db.close()
