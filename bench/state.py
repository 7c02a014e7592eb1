"""`table.get_state` with 10,000 tasks and 10,000 claims.

The store is created and migrated by `Database.open`, then filled with plain
`sqlite3.executemany` (10,000 tasks, 10,000 claims on 10,000 file resources, half active and
half released). Measured through `Runtime.call` in-process and through a real owner
subprocess over the legacy socket and Streamable HTTP, where the answer (several MB of JSON)
also has to be encoded and framed. `seed()` is shared with `bench.memory`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.rows import row

TASKS = 10_000
CLAIMS = 10_000
STAMP = "2026-01-15T09:30:12.123456789Z"
FAR = "2099-01-01T00:00:00.000000000Z"


def _row(metric: str, value: float, unit: str, note: str = "", **extra: str) -> dict[str, Any]:
    return row("state", metric, value, unit, note, **extra)


async def _walk(call: Any, args: dict[str, Any]) -> tuple[int, int, int]:
    """Page through the whole table with `call(args)`; (pages, tasks, claims) seen."""
    page = await call(args)
    pages, tasks, claims = 1, len(page["tasks"]), len(page["claims"])
    while page["has_more"]:
        page = await call({**args, "cursor": page["next_cursor"]})
        pages, tasks, claims = pages + 1, tasks + len(page["tasks"]), claims + len(page["claims"])
    return pages, tasks, claims


def make_project(base: Path) -> Path:
    """An `init`-ed project with its database created (schema applied)."""
    from roundtable.config import load_config
    from roundtable.scaffold import init_project
    from roundtable.store.db import Database

    root = base / "p"
    root.mkdir()
    init_project(root)

    async def create() -> None:
        db = await Database.open(load_config(root).sqlite_path(root))
        await db.close()

    asyncio.run(create())
    return root


def db_path(root: Path) -> Path:
    from roundtable.config import load_config

    return load_config(root).sqlite_path(root)


def seed(root: Path, *, tasks: int = 0, claims: int = 0, events: int = 0, runs: int = 10) -> float:
    """Add rows with sqlite3 directly (seconds taken). Ids continue after existing rows."""
    started = time.perf_counter()
    conn = sqlite3.connect(db_path(root))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    conn.executemany(
        "INSERT OR IGNORE INTO runs (id, goal, status, started_at, metadata_json) VALUES (?, 'bench', 'active', ?, '{}')",
        [(f"RUN-bench-{k}", STAMP) for k in range(runs)],
    )
    statuses = ("done",) * 70 + ("in_progress",) * 19 + ("open",) * 10 + ("blocked",)
    conn.executemany(
        "INSERT INTO tasks (id, title, body_md, status, priority, risk, assigned_agent_id, readable_paths_json,"
        " created_at, updated_at) VALUES (?, ?, 'A task body of moderate length.', ?, ?, 'normal', ?, '[\"src\"]', ?, ?)",
        [
            (
                f"T-{i:06d}",
                f"task {i}",
                statuses[i % len(statuses)],
                i % 50 + 1,
                f"implementer-{i % 2 + 1}",
                STAMP,
                STAMP,
            )
            for i in range(tasks)
        ],
    )
    conn.executemany(
        "INSERT INTO resources (id, type, path, metadata_json) VALUES (?, 'file', ?, '{}')",
        [(f"file:src/m{i:06d}.py", f"src/m{i:06d}.py") for i in range(claims)],
    )
    conn.executemany(
        "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status, expires_at, heartbeat_at,"
        " fence, created_at, rationale_md) VALUES (?, ?, ?, ?, 'write', ?, ?, ?, ?, ?, 'bench claim')",
        [
            (
                f"C-{i:06d}",
                f"file:src/m{i:06d}.py",
                f"implementer-{i % 2 + 1}",
                f"T-{i % max(tasks, 1):06d}",
                "active" if i % 2 else "released",
                FAR,
                STAMP,
                i + 1,
                STAMP,
            )
            for i in range(claims)
        ],
    )
    types = ("agent.turn_requested", "task.assigned", "claim.created", "proposal.review_requested", "note")
    batch: list[tuple[str, str, str, str, str]] = []
    for i in range(events):
        batch.append((f"RUN-bench-{i % runs}", types[i % 5], f"implementer-{i % 2 + 1}", f'{{"i":{i}}}', STAMP))
        if len(batch) == 50_000:
            conn.executemany(
                "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)", batch
            )
            batch.clear()
    if batch:
        conn.executemany(
            "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)", batch
        )
    conn.commit()
    conn.close()
    return time.perf_counter() - started


def _timed(samples: list[float]) -> str:
    return f"max {max(samples):.1f} ms"


async def _in_process(root: Path) -> list[dict[str, Any]]:
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.state import STATE_DEFAULT_LIMIT, load_state

    size = f"{TASKS:,} tasks + {CLAIMS:,} claims"
    rows = []
    async with await Runtime.open(root) as rt:
        state = await rt.call("table.get_state")
        assert len(state["tasks"]) == STATE_DEFAULT_LIMIT and state["counts"]["claims"] == CLAIMS
        for label, args, target in (
            ("default view (first page)", {}, "<= 20 ms"),
            ("summary", {"summary": True}, "<= 20 ms"),
            ("one agent's open tasks", {"agent_id": "implementer-1", "status": "open"}, ""),
        ):
            samples, cpu = [], []
            for _ in range(20):
                c0, t0 = time.process_time(), time.perf_counter()
                await rt.call("table.get_state", args)
                samples.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
            rows.append(
                _row(
                    f"get_state {size}, {label}, Runtime.call median",
                    statistics.median(samples),
                    "ms",
                    f"{_timed(samples)}; CPU {statistics.median(cpu):.1f} ms",
                    target=target,
                )
            )

        async def call(args: dict[str, Any]) -> dict[str, Any]:
            return await rt.call("table.get_state", args)

        t0 = time.perf_counter()
        pages, tasks, claims = await _walk(call, {"limit": 1000})
        assert (tasks, claims) == (TASKS, CLAIMS), (tasks, claims)
        rows.append(
            _row(
                f"get_state {size}, whole table page by page (limit 1000)",
                (time.perf_counter() - t0) * 1000,
                "ms",
                f"{pages} pages",
            )
        )
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            async with rt.db.read() as r:
                await load_state(r)
            samples.append((time.perf_counter() - t0) * 1000)
        rows.append(
            _row(
                f"load_state {size} (the whole table at once, run snapshots)",
                statistics.median(samples),
                "ms",
                _timed(samples),
            )
        )
    return rows


async def _over_transports(root: Path) -> list[dict[str, Any]]:
    from bench.ownerproc import HttpClient, OwnerProcess, SocketClient

    rows = []
    owner = OwnerProcess(root).start()
    try:
        for client in (SocketClient(owner.socket_path), HttpClient(owner.url, owner.auth)):
            await client.open()
            await client.call("table.get_state", {})
            samples = []
            for _ in range(10):
                t0 = time.perf_counter()
                state = await client.call("table.get_state", {})
                samples.append((time.perf_counter() - t0) * 1000)
            assert state["counts"]["claims"] == CLAIMS
            rows.append(
                _row(
                    f"get_state {TASKS:,} tasks + {CLAIMS:,} claims, default view over {client.transport} median",
                    statistics.median(samples),
                    "ms",
                    "owner subprocess; includes encoding and the client's decode",
                )
            )
            t0 = time.perf_counter()
            pages, tasks, claims = await _walk(lambda a, c=client: c.call("table.get_state", a), {"limit": 1000})
            assert (tasks, claims) == (TASKS, CLAIMS), (tasks, claims)
            rows.append(
                _row(
                    f"get_state {TASKS:,} tasks + {CLAIMS:,} claims, whole table over {client.transport}",
                    (time.perf_counter() - t0) * 1000,
                    "ms",
                    f"{pages} pages of limit 1000",
                )
            )
            await client.close()
    finally:
        owner.stop()
    return rows


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="rt", dir="/tmp") as tmp:
        root = make_project(Path(tmp))
        seconds = seed(root, tasks=TASKS, claims=CLAIMS)
        rows = [_row(f"seed {TASKS:,} tasks + {CLAIMS:,} claims", seconds, "s", "sqlite3 executemany")]
        rows += asyncio.run(_in_process(root))
        rows += asyncio.run(_over_transports(root))
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<75} {r['value']:>10} {r['unit']:<4} {r['note']}")
