"""CLI writes beside a running owner: `roundtable mcp call` without a flag goes through the
owner's socket when one listens, so many concurrent CLI writers next to an owner busy with its
own clients' writes all succeed (or fail with one line, never a traceback); a direct-mode write
that cannot get the write lock in its bounded time is refused in one line saying what to do."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from pathlib import Path

import pytest

from bench.ownerproc import OwnerProcess, SocketClient, direct_task_create
from roundtable.errors import RoundtableError
from roundtable.runtime import Runtime

pytestmark = pytest.mark.anyio

CLI_WRITERS = 12


async def test_concurrent_cli_writes_beside_a_busy_owner(project: Path) -> None:
    owner = OwnerProcess(project).start()
    acked: list[str] = []
    failures: list[str] = []
    cli_done = asyncio.Event()
    try:
        clients = [SocketClient(owner.socket_path) for _ in range(4)]

        async def load(k: int, client: SocketClient) -> None:
            n = 0
            while not cli_done.is_set():
                n += 1
                title = f"load {k} {n}"
                await client.call("task.create", {"title": title, "body_md": "x"})
                acked.append(title)

        async def cli(k: int) -> None:
            title = f"cli {k}"
            code, _out, err = await direct_task_create(project, title)
            text = err.decode(errors="replace").strip()
            if code == 0:
                acked.append(title)
            else:
                failures.append(text)
            assert "Traceback" not in text and len(text.splitlines()) <= 1, text

        loaders = [asyncio.create_task(load(k, c)) for k, c in enumerate(clients)]
        try:
            await asyncio.gather(*(cli(k) for k in range(CLI_WRITERS)))
        finally:
            cli_done.set()
            await asyncio.gather(*loaders)
    finally:
        owner.stop()
    assert failures == []
    assert sum(t.startswith("cli ") for t in acked) == CLI_WRITERS
    assert any(t.startswith("load ") for t in acked)
    async with await Runtime.open(project) as rt, rt.db.read() as r:
        rows = await r.fetchall("SELECT title FROM tasks WHERE title LIKE 'cli %'")
    assert sorted(str(row[0]) for row in rows) == sorted(f"cli {k}" for k in range(CLI_WRITERS))


async def test_cli_without_an_owner_opens_the_database_itself(project: Path) -> None:
    code, _out, err = await direct_task_create(project, "alone")
    assert code == 0, err.decode()
    async with await Runtime.open(project) as rt, rt.db.read() as r:
        row = await r.fetchone("SELECT COUNT(*) FROM tasks WHERE title = 'alone'")
    assert row is not None and row[0] == 1


async def test_a_write_lock_held_too_long_is_one_line(project: Path, caplog: pytest.LogCaptureFixture) -> None:
    rt = await Runtime.open(project, busy_timeout_ms=200)
    holder = sqlite3.connect(rt.config.sqlite_path(project), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with caplog.at_level(logging.WARNING), pytest.raises(RoundtableError) as info:
            await rt.call("task.create", {"title": "blocked", "body_md": "x"})
        waited = time.monotonic() - started
        holder.execute("ROLLBACK")
        message = str(info.value)
        assert "database is busy" in message and "0.2 s" in message and "retry" in message
        assert "\n" not in message
        assert waited >= 0.15
        assert not [rec for rec in caplog.records if rec.exc_info], "a busy database is not an internal error"
        async with rt.db.read() as r:
            row = await r.fetchone("SELECT COUNT(*) FROM tasks WHERE title = 'blocked'")
        assert row is not None and row[0] == 0
        # With the lock free again the same call goes through.
        await rt.call("task.create", {"title": "after", "body_md": "x"})
    finally:
        holder.close()
        await rt.close()
