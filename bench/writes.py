"""Write path: `task.create` commits per second through `Runtime.call`, next to the floor.

- single client: N creates one after another;
- the single client's per-call latency (p50, p99);
- 10 and 50 concurrent clients (asyncio.gather) sharing one runtime, as the owner serves them:
  writers waiting for each other share a transaction (group commit; `calls per commit`);
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
C10 = 10
C10_PER_CLIENT = 60
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


async def _measure(root: Path) -> dict[str, float]:
    from roundtable.runtime import Runtime

    out: dict[str, float] = {}
    async with await Runtime.open(root) as rt:
        await rt.call("task.create", {"title": "warm", "body_md": "up"})
        latencies = []
        c0, started = time.process_time(), time.perf_counter()
        for i in range(SINGLE):
            t0 = time.perf_counter()
            await rt.call("task.create", {"title": f"single {i}", "body_md": "work"})
            latencies.append(time.perf_counter() - t0)
        out["single"] = SINGLE / (time.perf_counter() - started)
        out["cpu_ms"] = (time.process_time() - c0) * 1000 / SINGLE
        latencies.sort()
        out["p50_ms"] = latencies[len(latencies) // 2] * 1000
        out["p99_ms"] = latencies[int(len(latencies) * 0.99)] * 1000

        async def client(k: int, per_client: int, tag: str) -> None:
            for i in range(per_client):
                await rt.call("task.create", {"title": f"{tag}{k} {i}", "body_md": "work"})

        for name, count, per_client, tag in (("c10", C10, C10_PER_CLIENT, "d"), ("c50", CLIENTS, PER_CLIENT, "c")):
            commits = rt.db.commits
            started = time.perf_counter()
            await asyncio.gather(*(client(k, per_client, tag) for k in range(count)))
            out[name] = count * per_client / (time.perf_counter() - started)
            out[f"{name}_batch"] = count * per_client / max(1, rt.db.commits - commits)
            async with rt.db.read() as r:
                found = int(await r.scalar("SELECT count(*) FROM tasks WHERE title LIKE ?", (f"{tag}%",)))
            assert found == count * per_client, found
    return out


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    with tempfile.TemporaryDirectory(prefix="rt-bench-writes-") as tmp:
        root = Path(tmp) / "p"
        root.mkdir()
        init_project(root)
        before = asyncio.run(_floor(Path(tmp) / "floor-before.db"))
        m = asyncio.run(_measure(root))
        floor = (before + asyncio.run(_floor(Path(tmp) / "floor-after.db"))) / 2
    return [
        _row(FLOOR, floor, "commits/s", "WAL, synchronous=NORMAL; the mean of a run before and one after"),
        _row(
            "task.create single client",
            m["single"],
            "commits/s",
            f"{m['cpu_ms']:.2f} ms CPU per call",
            floor=FLOOR,
            target=">= 50%",
        ),
        _row("task.create single client latency p50", m["p50_ms"], "ms"),
        _row("task.create single client latency p99", m["p99_ms"], "ms"),
        _row(
            f"task.create {C10} concurrent clients",
            m["c10"],
            "commits/s",
            f"{m['c10_batch']:.1f} calls per commit (group commit)",
            floor=FLOOR,
            target=">= 70%",
        ),
        _row(
            f"task.create {CLIENTS} concurrent clients",
            m["c50"],
            "commits/s",
            f"{m['c50_batch']:.1f} calls per commit (group commit)",
            floor=FLOOR,
            target=">= 50%",
        ),
    ]


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<55} {r['value']:>10} {r['unit']:<10} {r['note']}")
