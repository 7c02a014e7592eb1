"""Write path: `task.create` commits per second through `Runtime.call`, next to the floor.

- single client: N creates one after another;
- 50 concurrent clients (asyncio.gather) sharing one runtime, as the owner serves them;
- floor: a bare aiosqlite loop of `BEGIN IMMEDIATE; INSERT; COMMIT` into a table shaped like
  `tasks` plus one event row, in WAL with `synchronous=NORMAL` (our pragmas), one commit per
  row — what a tool call cannot beat.

(`resource.claim` has its own figures in bench/claims.py.)
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.rows import row

SINGLE = 600
CLIENTS = 50
PER_CLIENT = 12
FLOOR_ROWS = 2000


FLOOR = "floor: aiosqlite BEGIN IMMEDIATE/2 INSERTs/COMMIT"


def _row(metric: str, value: float, unit: str, note: str = "", **extra: str) -> dict[str, Any]:
    return row("writes", metric, value, unit, note, **extra)


async def _floor(path: Path) -> float:
    import aiosqlite

    conn = await aiosqlite.connect(str(path), isolation_level=None)
    for pragma in ("PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL"):
        await conn.execute(pragma)
    await conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, title TEXT, body TEXT, created_at TEXT)")
    await conn.execute("CREATE TABLE e (id INTEGER PRIMARY KEY, type TEXT, payload TEXT)")
    started = time.perf_counter()
    for i in range(FLOOR_ROWS):
        await conn.execute("BEGIN IMMEDIATE")
        await conn.execute("INSERT INTO t VALUES (?, 'title', 'body', '2026')", (f"T-{i}",))
        await conn.execute("INSERT INTO e (type, payload) VALUES ('task.created', '{}')")
        await conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    await conn.close()
    return FLOOR_ROWS / elapsed


async def _measure(root: Path) -> tuple[float, float, float]:
    from roundtable.runtime import Runtime

    async with await Runtime.open(root) as rt:
        await rt.call("task.create", {"title": "warm", "body_md": "up"})
        c0, started = time.process_time(), time.perf_counter()
        for i in range(SINGLE):
            await rt.call("task.create", {"title": f"single {i}", "body_md": "work"})
        single = SINGLE / (time.perf_counter() - started)
        cpu_ms = (time.process_time() - c0) * 1000 / SINGLE

        async def client(k: int) -> None:
            for i in range(PER_CLIENT):
                await rt.call("task.create", {"title": f"c{k} {i}", "body_md": "work"})

        started = time.perf_counter()
        await asyncio.gather(*(client(k) for k in range(CLIENTS)))
        concurrent = CLIENTS * PER_CLIENT / (time.perf_counter() - started)
        async with rt.db.read() as r:
            count = int(await r.scalar("SELECT count(*) FROM tasks WHERE title LIKE 'c%'"))
        assert count == CLIENTS * PER_CLIENT, count
    return single, concurrent, cpu_ms


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    with tempfile.TemporaryDirectory(prefix="rt-bench-writes-") as tmp:
        root = Path(tmp) / "p"
        root.mkdir()
        init_project(root)
        floor = asyncio.run(_floor(Path(tmp) / "floor.db"))
        single, concurrent, cpu_ms = asyncio.run(_measure(root))
    return [
        _row(FLOOR, floor, "commits/s", "WAL, synchronous=NORMAL"),
        _row(
            "task.create single client",
            single,
            "commits/s",
            f"{cpu_ms:.2f} ms CPU per call",
            floor=FLOOR,
            target=">= 50%",
        ),
        _row(
            f"task.create {CLIENTS} concurrent clients",
            concurrent,
            "commits/s",
            "one writer lock, so concurrency adds queueing, not commits",
            floor=FLOOR,
            target=">= 50%",
        ),
    ]


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<55} {r['value']:>10} {r['unit']:<10} {r['note']}")
