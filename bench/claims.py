"""`resource.claim` throughput through `Runtime.call`, next to a bare aiosqlite floor.

- single client: N claims on distinct files, one after another;
- 10 and 50 concurrent clients (asyncio.gather), each claiming its own distinct files — the
  writers waiting for each other share a transaction (group commit), so `calls per commit` says
  how many claims one COMMIT served;
- the single client's per-call latency (p50, p99);
- a refused claim (conflict + contention row in its own transaction), one after another;
- floor: a bare aiosqlite loop of `BEGIN IMMEDIATE; INSERT; COMMIT` in WAL with
  `synchronous=NORMAL` on the same machine (one commit per row, like one claim per call).

Each claim hashes a small file (the base hash) in a worker thread, checks conflicts and commits
one transaction (resource upsert, claim with fence, counter, event). Files don't exist for most
claims (hash ""), so the figure is dominated by the store, not hashing.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.rows import row

SINGLE = 400
C10 = 10
C10_PER_CLIENT = 40
CONCURRENT_CLIENTS = 50
PER_CLIENT = 8
REFUSED = 200
FLOOR_ROWS = 2000


FLOOR = "floor: aiosqlite BEGIN IMMEDIATE/INSERT/COMMIT"


def _row(metric: str, value: float, unit: str, note: str = "", **extra: str) -> dict[str, Any]:
    return row("claims", metric, value, unit, note, **extra)


async def _floor(path: Path) -> float:
    import aiosqlite

    conn = await aiosqlite.connect(str(path), isolation_level=None)
    try:
        await conn.execute("PRAGMA journal_mode = WAL")
        await conn.execute("PRAGMA synchronous = NORMAL")
        await conn.execute("CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT NOT NULL)")
        started = time.perf_counter()
        for i in range(FLOOR_ROWS):
            await conn.execute("BEGIN IMMEDIATE")
            await conn.execute("INSERT INTO t (id, v) VALUES (?, ?)", (f"row-{i}", "x" * 64))
            await conn.execute("COMMIT")
        return FLOOR_ROWS / (time.perf_counter() - started)
    finally:
        await conn.close()


async def _bench(root: Path) -> list[dict[str, Any]]:
    from roundtable.errors import ToolError
    from roundtable.runtime import Runtime

    (root / "src").mkdir()
    (root / "src" / "hot.py").write_text("def hot():\n    return 1\n")
    before = await _floor(root / "floor-before.db")
    runtime = await Runtime.open(root)
    try:
        task = (await runtime.call("task.create", {"title": "bench", "body_md": "claims"}))["task"]["id"]

        def args(agent: str, path: str) -> dict[str, Any]:
            return {
                "resource_type": "file",
                "path": path,
                "claim_type": "write",
                "task_id": task,
                "agent_id": agent,
            }

        latencies = []
        started = time.perf_counter()
        for i in range(SINGLE):
            t0 = time.perf_counter()
            await runtime.call("resource.claim", args("implementer-1", f"src/single_{i}.py"))
            latencies.append(time.perf_counter() - t0)
        single = SINGLE / (time.perf_counter() - started)
        latencies.sort()

        async def client(n: int, per_client: int, tag: str) -> None:
            for i in range(per_client):
                await runtime.call("resource.claim", args(f"implementer-{n}", f"src/{tag}{n}/f{i}.py"))

        async def clients(count: int, per_client: int, tag: str) -> tuple[float, float]:
            commits = runtime.db.commits
            started = time.perf_counter()
            await asyncio.gather(*(client(n, per_client, tag) for n in range(count)))
            rate = count * per_client / (time.perf_counter() - started)
            return rate, count * per_client / max(1, runtime.db.commits - commits)

        c10, c10_batch = await clients(C10, C10_PER_CLIENT, "d")
        concurrent, c50_batch = await clients(CONCURRENT_CLIENTS, PER_CLIENT, "c")

        await runtime.call("resource.claim", args("implementer-1", "src/hot.py"))
        started = time.perf_counter()
        for _ in range(REFUSED):
            try:
                await runtime.call("resource.claim", args("implementer-2", "src/hot.py"))
            except ToolError:
                pass
        refused = REFUSED / (time.perf_counter() - started)
        async with runtime.db.read() as r:
            active = int(await r.scalar("SELECT count(*) FROM claims WHERE status = 'active'"))
    finally:
        await runtime.close()
    floor = (before + await _floor(root / "floor-after.db")) / 2
    return [
        _row(
            "resource.claim single client",
            single,
            "claims/s",
            f"{SINGLE} distinct files; one call at a time pays a whole commit each (the target is c=10's)",
            floor=FLOOR,
        ),
        _row("resource.claim single client latency p50", latencies[len(latencies) // 2] * 1000, "ms"),
        _row("resource.claim single client latency p99", latencies[int(len(latencies) * 0.99)] * 1000, "ms"),
        _row(
            f"resource.claim {C10} concurrent clients",
            c10,
            "claims/s",
            f"{C10}x{C10_PER_CLIENT} distinct files; {c10_batch:.1f} calls per commit",
            floor=FLOOR,
            target=">= 50%",
        ),
        _row(
            f"resource.claim {CONCURRENT_CLIENTS} concurrent clients",
            concurrent,
            "claims/s",
            f"{CONCURRENT_CLIENTS}x{PER_CLIENT} distinct files; {c50_batch:.1f} calls per commit",
            floor=FLOOR,
        ),
        _row(
            "resource.claim refused (conflict)",
            refused,
            "calls/s",
            "refusal + contention row in its own commit",
            floor=FLOOR,
        ),
        _row(FLOOR, floor, "commits/s", "WAL, synchronous=NORMAL; the mean of a run before and one after"),
        _row("active claims at end", active, "claims", "conflict checks ran against this many"),
    ]


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    with tempfile.TemporaryDirectory(prefix="rt-bench-claims-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        init_project(root)
        return asyncio.run(_bench(root))


if __name__ == "__main__":
    for r in run():
        print(r)
