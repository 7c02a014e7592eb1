"""Group commit: writers that wait for each other share one transaction, yet each keeps its own
outcome — a refusal leaves nothing while its neighbours commit, a failed COMMIT fails them all and
publishes nothing, events stay in commit order, and a lone writer commits at once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from roundtable.errors import StoreError, ToolError
from roundtable.store import group
from roundtable.store.db import Database, Tx

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def patient_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writers here are held on purpose; the age bound is tested on its own."""
    monkeypatch.setattr(group, "MAX_AGE_S", 60.0)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "rt.db")
    try:
        yield database
    finally:
        await database.close()


async def _until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until `condition` holds (bounded: a stuck test fails, not hangs)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


class Refused(Exception):
    pass


async def _task(db: Database, name: str, *, fail: bool = False, log: list[str] | None = None) -> None:
    async with db.write(tool=name) as tx:
        await tx.insert("tasks", {"id": f"T-{name}", "title": name, "body_md": "b"})
        await tx.append_event("", "task.created", {"task_id": f"T-{name}"}, task_id=f"T-{name}")
        if log is not None:
            log.append(name)
        if fail:
            raise Refused(name)


Writer = Callable[[], Awaitable[object]]


async def _grouped(db: Database, writers: list[Writer], log: list[str]) -> list[object]:
    """Run `writers` queued behind a holder, so that they join the holder's transaction; returns
    their outcomes (a result or the exception), the holder's last."""
    release = asyncio.Event()

    async def holder() -> None:
        async with db.write(tool="holder") as tx:
            await tx.insert("tasks", {"id": "T-holder", "title": "holder", "body_md": "b"})
            await release.wait()
        log.append("holder committed")

    first = asyncio.create_task(holder())
    await _until(db._write_lock.locked)
    tasks = [asyncio.ensure_future(w()) for w in writers]
    await _until(lambda: db._write_lock.waiting() >= len(writers))
    release.set()
    return await asyncio.gather(*tasks, first, return_exceptions=True)


def _writer(db: Database, name: str) -> Writer:
    return lambda: _task(db, name)


def _job(conn: sqlite3.Connection, tx: Tx, name: str, fail: bool) -> str:
    conn.execute("INSERT INTO tasks (id, title, body_md) VALUES (?, ?, 'b')", (f"T-{name}", name))
    tx.emit(conn, "", "task.created", {"task_id": f"T-{name}"}, task_id=f"T-{name}")
    if fail:
        raise Refused(name)
    return name


def _run(db: Database, name: str, *, fail: bool = False) -> Writer:
    return lambda: db.write_run(_job, name, fail, tool=name)


async def _ids(db: Database) -> set[str]:
    async with db.read() as r:
        return {str(row[0]) for row in await r.fetchall("SELECT id FROM tasks")}


async def test_a_refused_writer_leaves_nothing_while_its_neighbours_commit(db: Database) -> None:
    log: list[str] = []
    with db.bus.subscribe() as sub:
        commits = db.commits
        outcomes = await _grouped(
            db,
            [
                lambda: _task(db, "a", log=log),
                lambda: _task(db, "refused", fail=True, log=log),
                lambda: _task(db, "b", log=log),
            ],
            log,
        )
        changes = sub.drain()
    assert [type(o).__name__ for o in outcomes] == ["NoneType", "Refused", "NoneType", "NoneType"]
    assert await _ids(db) == {"T-holder", "T-a", "T-b"}
    # One transaction: the holder was answered only after the last writer's work ran.
    assert log == ["a", "refused", "b", "holder committed"]
    assert db.commits == commits + 1
    published = [e["task_id"] for c in changes for e in c.events]
    assert published == ["T-a", "T-b"]
    async with db.read() as r:
        stored = [str(row[0]) for row in await r.fetchall("SELECT task_id FROM events ORDER BY id")]
    assert stored == ["T-a", "T-b"]


async def test_a_failed_commit_fails_every_writer_and_publishes_nothing(db: Database) -> None:
    async with db.write(tool="setup") as tx:  # a deferred foreign key is checked at COMMIT
        await tx.execute("CREATE TABLE parent (id TEXT PRIMARY KEY)")
        await tx.execute("CREATE TABLE child (parent_id TEXT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")

    async def dangling() -> None:
        async with db.write(tool="dangling") as tx:
            await tx.execute("INSERT INTO child (parent_id) VALUES ('nobody')")

    log: list[str] = []
    with db.bus.subscribe() as sub:
        outcomes = await _grouped(db, [lambda: _task(db, "a"), dangling, lambda: _task(db, "b")], log)
        assert sub.drain() == []
    assert all(isinstance(o, StoreError) for o in outcomes), outcomes
    assert "commit failed" in str(outcomes[0]) and "nothing of this call was written" in str(outcomes[0])
    assert await _ids(db) == set()
    async with db.read() as r:
        assert await r.scalar("SELECT count(*) FROM events") == 0
        assert await r.scalar("SELECT count(*) FROM child") == 0
    await _task(db, "after")  # the writer is usable again
    assert await _ids(db) == {"T-after"}


async def test_a_transaction_ended_under_its_writers_fails_them_all(db: Database) -> None:
    async def ender() -> None:  # as SQLite does on some errors (a full disk), and the writer went on
        async with db.write(tool="ender") as tx:
            await tx.insert("tasks", {"id": "T-ender", "title": "e", "body_md": "b"})
            await tx.execute("ROLLBACK")

    log: list[str] = []
    with db.bus.subscribe() as sub:
        outcomes = await _grouped(db, [lambda: _task(db, "a"), ender, lambda: _task(db, "b")], log)
        changes = sub.drain()
    # The holder and `a` were in the lost transaction; `b` began a new one after it.
    assert [type(o).__name__ for o in outcomes] == ["StoreError", "StoreError", "NoneType", "StoreError"]
    assert all("rolled back" in str(o) for o in outcomes if o is not None)
    assert await _ids(db) == {"T-b"}
    assert [e["task_id"] for c in changes for e in c.events] == ["T-b"]


async def test_a_full_disk_under_one_writer_fails_its_batch_and_publishes_nothing(db: Database) -> None:
    async with db.write(tool="setup") as tx:
        await tx.execute("CREATE TABLE blobs (data BLOB)")
    pages = await db._writer.execute_fetchall("PRAGMA page_count")
    await db._writer.execute(f"PRAGMA max_page_count = {int(next(iter(pages))[0]) + 8}")

    async def huge() -> None:
        async with db.write(tool="huge") as tx:
            await tx.execute("INSERT INTO blobs (data) VALUES (zeroblob(1000000))")

    log: list[str] = []
    with db.bus.subscribe() as sub:
        outcomes = await _grouped(db, [lambda: _task(db, "a"), huge, lambda: _task(db, "b")], log)
        changes = sub.drain()
    # SQLite rolls the whole transaction back on a full disk: the holder and `a` are told so
    # (nothing of theirs was written); `b` began a new transaction after it.
    a, full, b, holder = outcomes
    assert "full" in str(full), full
    for lost in (holder, a):
        assert isinstance(lost, StoreError) and "rolled back" in str(lost) and "retry" in str(lost), lost
    assert b is None
    assert await _ids(db) == {"T-b"}
    assert [e["task_id"] for c in changes for e in c.events] == ["T-b"]
    async with db.read() as r:
        assert await r.scalar("SELECT count(*) FROM blobs") == 0


async def test_concurrent_writers_publish_gap_free_events_in_commit_order(db: Database) -> None:
    with db.bus.subscribe(maxsize=1000) as sub:
        outcomes = await asyncio.gather(
            *(_task(db, f"w{i}", fail=i % 7 == 3) for i in range(60)), return_exceptions=True
        )
        changes = sub.drain()
    refused = {f"T-w{i}" for i in range(60) if i % 7 == 3}
    assert sum(isinstance(o, Refused) for o in outcomes) == len(refused)
    published = [(e["id"], e["task_id"]) for c in changes for e in c.events]
    ids = [event_id for event_id, _ in published]
    assert ids == list(range(ids[0], ids[0] + len(ids))), "event ids gap-free and increasing"
    assert {task for _, task in published} == {f"T-w{i}" for i in range(60)} - refused
    async with db.read() as r:
        stored = [(int(row[0]), str(row[1])) for row in await r.fetchall("SELECT id, task_id FROM events ORDER BY id")]
    assert stored == published
    assert db.commits < 60, "waiting writers shared transactions"


async def test_a_lone_writer_commits_at_once(db: Database) -> None:
    commits = db.commits
    await _task(db, "alone")
    assert db.commits == commits + 1
    assert await _ids(db) == {"T-alone"}
    assert not db._write_lock.locked()


async def test_a_batch_is_bounded(db: Database) -> None:
    log: list[str] = []
    count = group.MAX_MEMBERS + 8
    commits = db.commits
    outcomes = await _grouped(db, [_writer(db, f"w{i}") for i in range(count)], log)
    assert all(o is None for o in outcomes)
    assert len(await _ids(db)) == count + 1
    assert db.commits - commits >= 2, "a full batch commits and the rest start another"


async def test_an_old_batch_commits_before_taking_more(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group, "MAX_AGE_S", 0.0)
    log: list[str] = []
    commits = db.commits
    outcomes = await _grouped(db, [_writer(db, f"w{i}") for i in range(3)], log)
    assert all(o is None for o in outcomes)
    assert db.commits - commits == 4, "each writer committed on its own"
    assert len(await _ids(db)) == 4


async def test_a_writer_cancelled_waiting_for_its_commit_is_still_committed(db: Database) -> None:
    go = asyncio.Event()
    started = asyncio.Event()
    release = asyncio.Event()

    async def first_writer() -> None:
        async with db.write(tool="first") as tx:
            await tx.insert("tasks", {"id": "T-first", "title": "f", "body_md": "b"})
            await go.wait()

    async def slow() -> None:
        async with db.write(tool="slow") as tx:
            await tx.insert("tasks", {"id": "T-slow", "title": "s", "body_md": "b"})
            started.set()
            await release.wait()

    first = asyncio.create_task(first_writer())
    await _until(db._write_lock.locked)
    second = asyncio.create_task(slow())
    await _until(lambda: db._write_lock.waiting() >= 1)
    go.set()
    await started.wait()  # `first` handed its transaction to `slow` and waits for the commit
    first.cancel()
    await asyncio.sleep(0)
    assert not first.done()  # it still waits for the commit of its work
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await first
    await second
    assert await _ids(db) == {"T-first", "T-slow"}
    assert not db._write_lock.locked()


async def test_a_batch_left_open_by_a_cancelled_successor_is_committed(db: Database) -> None:
    loop = asyncio.get_running_loop()
    doomed: asyncio.Task[None] | None = None

    async def holder() -> None:
        async with db.write(tool="holder") as tx:
            await tx.insert("tasks", {"id": "T-holder", "title": "h", "body_md": "b"})
            await _until(lambda: db._write_lock.waiting() >= 1)
            assert doomed is not None
            loop.call_soon(doomed.cancel)  # runs before `doomed` wakes up holding the lock

    first = asyncio.create_task(holder())
    await _until(db._write_lock.locked)
    doomed = asyncio.create_task(_task(db, "doomed"))
    await asyncio.wait_for(first, 5)
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert await _ids(db) == {"T-holder"}
    await _until(lambda: not db._write_lock.locked())


async def test_two_claims_of_one_path_in_one_batch_exactly_one_wins(tmp_path: Path) -> None:
    from roundtable.runtime import Runtime
    from roundtable.scaffold import init_project_async

    root = tmp_path / "p"
    root.mkdir()
    await init_project_async(root)
    async with await Runtime.open(root) as rt:
        task = (await rt.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
        db = rt.db

        def claim(agent: str, path: str) -> Writer:
            args = {"resource_type": "file", "path": path, "claim_type": "write", "task_id": task, "agent_id": agent}
            return lambda: rt.call("resource.claim", args)

        log: list[str] = []
        commits = db.commits
        outcomes = await _grouped(
            db,
            [claim("agent-a", "src/hot.py"), claim("agent-b", "src/hot.py"), claim("agent-c", "src/other.py")],
            log,
        )
        won = [o for o in outcomes[:2] if isinstance(o, dict)]
        lost = [o for o in outcomes[:2] if isinstance(o, ToolError)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        assert "claim conflict" in str(lost[0])
        assert isinstance(outcomes[2], dict)
        assert db.commits - commits <= 2  # the grants shared the holder's; the contention row its own
        async with db.read() as r:
            fences = [int(row[0]) for row in await r.fetchall("SELECT fence FROM claims ORDER BY fence")]
            contentions = await r.scalar("SELECT count(*) FROM claim_contentions")
        assert fences == list(range(fences[0], fences[0] + 2)), "fences gap-free"
        assert contentions == 1


async def test_queued_write_jobs_share_one_round_trip_and_keep_their_own_outcomes(db: Database) -> None:
    log: list[str] = []
    commits = db.commits
    with db.bus.subscribe() as sub:
        outcomes = await _grouped(
            db, [_run(db, "a"), _run(db, "refused", fail=True), _run(db, "b"), _run(db, "c")], log
        )
        changes = sub.drain()
    assert outcomes[:4] == ["a", outcomes[1], "b", "c"] and isinstance(outcomes[1], Refused)
    assert db.commits == commits + 1
    assert await _ids(db) == {"T-holder", "T-a", "T-b", "T-c"}
    assert [e["task_id"] for c in changes for e in c.events] == ["T-a", "T-b", "T-c"]
    ids = [e["id"] for c in changes for e in c.events]
    assert ids == list(range(ids[0], ids[0] + 3))


async def test_a_failed_commit_fails_every_write_job(db: Database) -> None:
    async with db.write(tool="setup") as tx:
        await tx.execute("CREATE TABLE parent (id TEXT PRIMARY KEY)")
        await tx.execute("CREATE TABLE child (parent_id TEXT REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)")

    def dangling(conn: sqlite3.Connection, tx: Tx) -> None:
        conn.execute("INSERT INTO child (parent_id) VALUES ('nobody')")

    log: list[str] = []
    with db.bus.subscribe() as sub:
        outcomes = await _grouped(db, [_run(db, "a"), lambda: db.write_run(dangling), _run(db, "b")], log)
        assert sub.drain() == []
    assert all(isinstance(o, StoreError) and "commit failed" in str(o) for o in outcomes), outcomes
    assert await _ids(db) == set()


async def test_a_lone_write_job_commits_at_once_and_jobs_mix_with_writers(db: Database) -> None:
    commits = db.commits
    assert await db.write_run(_job, "alone", False) == "alone"
    assert db.commits == commits + 1
    outcomes = await asyncio.gather(
        *(_run(db, f"j{i}", fail=i == 5)() if i % 2 else _task(db, f"w{i}") for i in range(20)),
        return_exceptions=True,
    )
    assert sum(isinstance(o, Refused) for o in outcomes) == 1
    assert await _ids(db) == {"T-alone"} | {f"T-{'j' if i % 2 else 'w'}{i}" for i in range(20) if i != 5}
    assert not db._write_lock.locked()
