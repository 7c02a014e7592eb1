"""The writer's lock: ordinary writers in arrival order, an urgent writer (the Chair's turn
hand-over) before every ordinary one waiting, and a cancelled waiter never wedges the queue."""

from __future__ import annotations

import asyncio

import pytest

from roundtable.store.db import Database
from tests.store.conftest import until

pytestmark = pytest.mark.anyio


async def _writer(db: Database, name: str, order: list[str], *, urgent: bool = False) -> None:
    async with db.write(tool=name, urgent=urgent) as tx:
        order.append(name)
        await tx.insert("tasks", {"id": f"T-{name}", "title": name, "body_md": "b"})


async def _queued(db: Database, count: int) -> None:
    await until(lambda: db._write_lock.waiting() >= count)


async def test_urgent_writers_go_before_waiting_ordinary_ones(db: Database) -> None:
    order: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with db.write(tool="holder") as tx:
            order.append("holder")
            await tx.insert("tasks", {"id": "T-holder", "title": "h", "body_md": "b"})
            await release.wait()

    tasks = [asyncio.create_task(holder())]
    await until(lambda: bool(order))
    for i in range(3):
        tasks.append(asyncio.create_task(_writer(db, f"ordinary-{i}", order)))
        await _queued(db, i + 1)
    tasks.append(asyncio.create_task(_writer(db, "urgent-0", order, urgent=True)))
    await _queued(db, 4)
    tasks.append(asyncio.create_task(_writer(db, "urgent-1", order, urgent=True)))
    await _queued(db, 5)
    release.set()
    await asyncio.gather(*tasks)
    assert order == ["holder", "urgent-0", "urgent-1", "ordinary-0", "ordinary-1", "ordinary-2"]
    async with db.read() as r:
        assert await r.scalar("SELECT count(*) FROM tasks") == 6
    assert not db._write_lock.locked() and db._write_lock.waiting() == 0


async def test_a_cancelled_waiter_leaves_the_queue_working(db: Database) -> None:
    order: list[str] = []
    release = asyncio.Event()

    async def holder() -> None:
        async with db.write(tool="holder"):
            await release.wait()

    first = asyncio.create_task(holder())
    await asyncio.sleep(0)
    doomed = asyncio.create_task(_writer(db, "doomed", order, urgent=True))
    after = asyncio.create_task(_writer(db, "after", order))
    await _queued(db, 2)
    doomed.cancel()
    release.set()
    await first
    with pytest.raises(asyncio.CancelledError):
        await doomed
    await after
    assert order == ["after"]
    assert not db._write_lock.locked()


async def test_a_waiter_cancelled_as_the_lock_reaches_it_passes_it_on(db: Database) -> None:
    order: list[str] = []
    lock = db._write_lock
    await lock.acquire()
    handed = asyncio.create_task(lock.acquire())
    nxt = asyncio.create_task(_writer(db, "next", order))
    await _queued(db, 2)
    lock.release()  # the lock now belongs to `handed`, which has not run yet
    handed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await handed
    await asyncio.wait_for(nxt, 5)
    assert order == ["next"] and not lock.locked()
