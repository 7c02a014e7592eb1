"""A second process writing through `roundtable mcp call --direct` (its own connection to
the database, no owner involved) while the owner is under write load from socket and HTTP
clients: SQLite's busy timeout absorbs the contention, so no client sees an error, every
direct call succeeds, and every acknowledged write is there exactly once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bench.ownerproc import HttpClient, OwnerProcess, SocketClient, direct_task_create
from roundtable.runtime import Runtime

pytestmark = pytest.mark.anyio

SECONDS = 2.0


async def _direct(root: Path, title: str) -> tuple[int, str]:
    code, out, err = await direct_task_create(root, title, direct=True)
    return code, (out + err).decode(errors="replace")


async def test_direct_mode_writer_next_to_a_loaded_owner(project: Path) -> None:
    owner = OwnerProcess(project).start()
    acked: list[str] = []
    errors: list[str] = []
    try:
        clients = [SocketClient(owner.socket_path) for _ in range(4)] + [
            HttpClient(owner.url, owner.auth) for _ in range(4)
        ]
        for client in clients:
            await client.open()
        stop = time.monotonic() + SECONDS  # from the moment every client is connected

        async def load(k: int, client: SocketClient | HttpClient) -> None:
            n = 0
            while time.monotonic() < stop:
                n += 1
                title = f"load {k} {n}"
                try:
                    await client.call("task.create", {"title": title, "body_md": "x"})
                    acked.append(title)
                    await client.call("task.list", {})
                except Exception as exc:
                    errors.append(f"{client.transport}: {exc}")

        async def direct_writer(k: int) -> None:
            n = 0
            while time.monotonic() < stop:
                n += 1
                title = f"direct {k} {n}"
                code, text = await _direct(project, title)
                if code == 0:
                    acked.append(title)
                else:
                    errors.append(f"direct: {text.strip()[:200]}")

        await asyncio.gather(*(load(k, c) for k, c in enumerate(clients)), *(direct_writer(k) for k in range(2)))
        for client in clients:
            await client.close()
    finally:
        owner.stop()
    assert errors == []
    assert any(t.startswith("direct") for t in acked) and any(t.startswith("load") for t in acked)
    async with await Runtime.open(project) as rt, rt.db.read() as r:
        rows = [
            str(row[0])
            for row in await r.fetchall("SELECT title FROM tasks WHERE title LIKE 'load %' OR title LIKE 'direct %'")
        ]
    assert sorted(rows) == sorted(acked)
