"""Point-read answers kept until the next commit by anyone (`store/pointcache.py`,
`Database.read_point(..., remember=True)`, `task.get` through `Runtime.call`)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from roundtable.runtime import Runtime
from roundtable.store import rows
from roundtable.store.db import Database
from roundtable.store.pointcache import DataVersion, PointCache
from roundtable.store.records import Task

pytestmark = pytest.mark.anyio

READS: list[str] = []  # the task ids `_task` read from the database, in order


def _task(conn: sqlite3.Connection, task_id: str) -> dict[str, Any]:
    READS.append(task_id)
    task = rows.get(conn, Task, task_id)
    return {"task": {"id": task.id, "title": task.title, "tags": [task.title]}}


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    READS.clear()
    database = await Database.open(tmp_path / "rt.db", readers=2)
    async with database.write() as tx:
        await tx.insert("tasks", {"id": "T-1", "title": "one", "body_md": "b"})
        await tx.insert("tasks", {"id": "T-2", "title": "two", "body_md": "b"})
    try:
        yield database
    finally:
        await database.close()


async def test_a_same_read_before_any_commit_is_answered_without_reading(db: Database) -> None:
    first = await db.read_point(_task, "T-1", remember=True)
    again = await db.read_point(_task, "T-1", remember=True)
    other = await db.read_point(_task, "T-2", remember=True)
    assert first == again == {"task": {"id": "T-1", "title": "one", "tags": ["one"]}}
    assert other["task"]["title"] == "two"
    assert READS == ["T-1", "T-2"]
    assert db.point_cache.hits == 1
    await db.read_point(_task, "T-1")  # without `remember`: always read
    assert READS == ["T-1", "T-2", "T-1"]


async def test_a_commit_through_this_database_is_seen_by_the_next_read(db: Database) -> None:
    await db.read_point(_task, "T-1", remember=True)
    async with db.write() as tx:
        await tx.execute("UPDATE tasks SET title = 'changed' WHERE id = 'T-1'")
    assert (await db.read_point(_task, "T-1", remember=True))["task"]["title"] == "changed"
    assert READS == ["T-1", "T-1"]


async def test_a_commit_by_another_connection_is_seen_by_the_next_read(db: Database) -> None:
    await db.read_point(_task, "T-1", remember=True)
    other = sqlite3.connect(db.path)  # as the CLI in direct mode or another process would
    try:
        other.execute("UPDATE tasks SET title = 'elsewhere' WHERE id = 'T-1'")
        other.commit()
    finally:
        other.close()
    assert (await db.read_point(_task, "T-1", remember=True))["task"]["title"] == "elsewhere"


async def test_changing_an_answer_changes_no_one_elses(db: Database) -> None:
    mine = await db.read_point(_task, "T-1", remember=True)
    mine["task"]["title"] = "scribbled"
    mine["task"]["tags"].append("x")
    theirs = await db.read_point(_task, "T-1", remember=True)
    theirs["task"]["tags"].clear()
    assert await db.read_point(_task, "T-1", remember=True) == {"task": {"id": "T-1", "title": "one", "tags": ["one"]}}
    assert READS == ["T-1"]


async def test_answers_are_bounded_in_number_and_size(tmp_path: Path, db: Database) -> None:
    cache = PointCache(DataVersion(db.path), max_entries=2, max_chars=100, max_entry_chars=20)
    try:
        version = cache.version()
        cache.put(version, _task, ("a",), {"text": "x" * 21})  # more than one entry may hold
        assert cache.get(version, _task, ("a",)) is cache.MISSING
        for key in ("b", "c", "d"):
            cache.put(version, _task, (key,), {"text": key})
        assert cache.get(version, _task, ("b",)) is cache.MISSING  # the oldest made room
        assert cache.get(version, _task, ("d",)) == {"text": "d"}
        cache.put(version, _task, (["unhashable"],), {"text": "e"})  # not a key: not kept
        assert cache.get(version, _task, (["unhashable"],)) is cache.MISSING
        assert cache.get(None, _task, ("d",)) is cache.MISSING  # a version that cannot be told
    finally:
        cache.close()


async def test_an_answer_read_across_a_commit_is_not_kept_as_the_older_states(db: Database) -> None:
    cache = db.point_cache
    version = cache.version()
    async with db.write() as tx:  # lands between the question and the answer
        await tx.execute("UPDATE tasks SET title = 'later' WHERE id = 'T-1'")
    cache.put(version, _task, ("T-1",), {"task": "stale?"})
    assert cache.get(cache.version(), _task, ("T-1",)) is cache.MISSING


async def test_task_get_through_the_runtime_follows_every_update(runtime: Runtime) -> None:
    created = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]
    for status in ("in_progress", "done"):
        before = await runtime.call("task.get", {"task_id": created["id"]})
        await runtime.call("task.update_status", {"task_id": created["id"], "status": status})
        after = await runtime.call("task.get", {"task_id": created["id"]})
        assert after["task"]["status"] == status != before["task"]["status"]
    assert runtime.db.point_cache.hits == 1  # the second "before": no commit since the first "after"
    await runtime.call("task.get", {"task_id": created["id"]})
    assert runtime.db.point_cache.hits == 2
