"""`table.watch` and `table.get_state` on a large store.

Builds a temporary project whose database holds 1,000,000 events (spread over 10 runs) and
10,000 tasks — rows are written with plain `sqlite3.executemany` into a file created and
migrated by `Database.open` — then measures, through `Runtime.call`:

- `table.watch` cursor pages (limit 10 and 200) at random cursors, all runs and one run;
- `table.watch` snapshot mode (newest 10 events of one run);
- `table.watch` with `wait_ms`: time from an event's commit (another task) to the poll's return;
- `table.get_state` with 10,000 tasks.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

EVENTS = 1_000_000
RUNS = 10
TASKS = 10_000


def _row(benchmark: str, metric: str, value: float, unit: str, note: str = "") -> dict[str, Any]:
    return {"benchmark": benchmark, "metric": metric, "value": round(value, 3), "unit": unit, "note": note}


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def _populate(db_path: Path) -> float:
    started = time.perf_counter()
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    stamp = "2026-01-15T09:30:12.123456789Z"
    conn.executemany(
        "INSERT INTO runs (id, goal, status, started_at, metadata_json) VALUES (?, 'bench', 'active', ?, '{}')",
        [(f"RUN-bench-{k}", stamp) for k in range(RUNS)],
    )
    types = ("agent.note", "task.assigned", "claim.created", "proposal.review_requested", "note")
    batch: list[tuple[str, str, str, str, str]] = []
    for i in range(EVENTS):
        payload = f'{{"i":{i}}}'
        batch.append((f"RUN-bench-{i % RUNS}", types[i % len(types)], f"implementer-{i % 3 + 1}", payload, stamp))
        if len(batch) == 50_000:
            conn.executemany(
                "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)", batch
            )
            batch.clear()
    if batch:
        conn.executemany(
            "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)", batch
        )
    # A plausible mix: mostly finished work, 1% blocked (every watch page lists the blocked tasks).
    statuses = ("done",) * 70 + ("in_progress",) * 19 + ("open",) * 10 + ("blocked",)
    conn.executemany(
        "INSERT INTO tasks (id, title, body_md, status, priority, risk, readable_paths_json, created_at, updated_at)"
        " VALUES (?, ?, 'body', ?, ?, 'normal', '[\"src\"]', ?, ?)",
        [(f"T-{i:06d}", f"task {i}", statuses[i % len(statuses)], i % 50 + 1, stamp, stamp) for i in range(TASKS)],
    )
    conn.commit()
    conn.close()
    return time.perf_counter() - started


async def _write_later(runtime: Any, committed_at: list[float]) -> None:
    await asyncio.sleep(0.05)
    async with runtime.db.write() as tx:
        await tx.append_event("RUN-bench-1", "bench.wake", {})
    committed_at.append(time.perf_counter())


async def _measure(root: Path) -> list[dict[str, Any]]:
    from roundtable.runtime import Runtime

    rows: list[dict[str, Any]] = []
    rng = random.Random(7)
    async with await Runtime.open(root) as runtime:
        await runtime.call("table.watch", {"after_event_id": 0})  # warm the reader pool
        for limit in (10, 200):
            for run_filter in ("", "RUN-bench-3"):
                samples = []
                cpu0 = time.process_time()
                for _ in range(200):
                    cursor = rng.randrange(0, EVENTS - 1000)
                    args: dict[str, Any] = {"after_event_id": cursor, "limit": limit}
                    if run_filter:
                        args["run_id"] = run_filter
                    t0 = time.perf_counter()
                    page = await runtime.call("table.watch", args)
                    samples.append((time.perf_counter() - t0) * 1000)
                    assert len(page["events"]) == limit
                cpu_ms = (time.process_time() - cpu0) * 1000 / 200
                median, p95 = _stats(samples)
                scope = "one run" if run_filter else "all runs"
                rows.append(
                    _row("watch", f"cursor page limit={limit} ({scope}) CPU per call", cpu_ms, "ms", "all threads")
                )
                rows.append(
                    _row("watch", f"cursor page limit={limit} ({scope}) median", median, "ms", f"p95 {p95:.2f} ms")
                )
        samples = []
        for _ in range(100):
            t0 = time.perf_counter()
            await runtime.call("table.watch", {"run_id": "RUN-bench-5"})
            samples.append((time.perf_counter() - t0) * 1000)
        median, p95 = _stats(samples)
        rows.append(_row("watch", "snapshot page (newest 10, one run) median", median, "ms", f"p95 {p95:.2f} ms"))

        # An agent's start-up read and its news page (no run, no types: what concerns it), on the
        # whole store: reviewer-1 acts in none of these events, so the watch looks at all of them.
        from roundtable.tools.context import Caller

        agent = Caller("agent", "http", agent_id="reviewer-1")
        for name, args in (("start-up read", {}), ("news after a cursor", {"after_event_id": EVENTS - 1000})):
            samples = []
            for _ in range(5):
                t0 = time.perf_counter()
                await runtime.call("table.watch", args, agent)
                samples.append((time.perf_counter() - t0) * 1000)
            median, p95 = _stats(samples)
            rows.append(_row("watch", f"agent's {name} (what concerns it) median", median, "ms", f"p95 {p95:.1f} ms"))

        # Long poll: how soon after a commit does a waiting watch return?
        latencies = []
        for _ in range(20):
            async with runtime.db.read() as r:
                last = int(await r.scalar("SELECT max(id) FROM events"))
            committed_at: list[float] = []
            writer = asyncio.create_task(_write_later(runtime, committed_at))
            page = await runtime.call("table.watch", {"run_id": "RUN-bench-1", "after_event_id": last, "wait_ms": 5000})
            returned = time.perf_counter()
            await writer
            assert page["events"]
            latencies.append((returned - committed_at[0]) * 1000)
        median, p95 = _stats(latencies)
        rows.append(_row("watch", "wait_ms wake-up after commit median", median, "ms", f"p95 {p95:.2f} ms"))

        # One turn cycle on a run holding 100,000 events: request, Chair tick, start, complete.
        from roundtable import chair

        await chair.sync_agents(runtime)
        t0 = time.perf_counter()
        first = await chair.tick(runtime, "RUN-bench-2")
        rows.append(
            _row(
                "turns",
                f"first Chair tick (assigns {len(first.assigned):,} open tasks)",
                (time.perf_counter() - t0) * 1000,
                "ms",
                "one transaction per 200 tasks, a savepoint per task",
            )
        )
        request_ms, tick_ms = [], []
        for _ in range(20):
            t0 = time.perf_counter()
            req = await runtime.call(
                "agent.turn_request", {"run_id": "RUN-bench-2", "agent_id": "implementer-1", "reason_md": "bench"}
            )
            t1 = time.perf_counter()
            await chair.tick(runtime, "RUN-bench-2")
            t2 = time.perf_counter()
            args = {"run_id": "RUN-bench-2", "agent_id": "implementer-1", "request_event_id": req["request_event_id"]}
            await runtime.call("agent.turn_start", args)
            await runtime.call("agent.turn_complete", args)
            request_ms.append((t1 - t0) * 1000)
            tick_ms.append((t2 - t1) * 1000)
        median, p95 = _stats(request_ms)
        rows.append(_row("turns", "agent.turn_request (run of 100k events) median", median, "ms", f"p95 {p95:.2f} ms"))
        median, p95 = _stats(tick_ms)
        rows.append(_row("turns", "Chair tick (10k tasks, 100k-event run) median", median, "ms", f"p95 {p95:.2f} ms"))

        samples = []
        for _ in range(10):
            t0 = time.perf_counter()
            state = await runtime.call("table.get_state")
            samples.append((time.perf_counter() - t0) * 1000)
        assert state["counts"]["tasks"] == TASKS
        median, p95 = _stats(samples)
        rows.append(
            _row("state", f"table.get_state default view, {TASKS:,} tasks median", median, "ms", f"p95 {p95:.1f} ms")
        )
    return rows


async def _create_schema(root: Path) -> Path:
    from roundtable.config import load_config
    from roundtable.store.db import Database

    path = load_config(root).sqlite_path(root)
    db = await Database.open(path)
    await db.close()
    return path


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    with tempfile.TemporaryDirectory(prefix="roundtable-bench-watch-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        init_project(root)
        db_path = asyncio.run(_create_schema(root))
        seconds = _populate(db_path)
        rows = [_row("watch", f"generate {EVENTS:,} events + {TASKS:,} tasks", seconds, "s", "sqlite3 executemany")]
        rows += asyncio.run(_measure(root))
    return rows


if __name__ == "__main__":
    for row in run():
        print(f"{row['benchmark']:6} {row['metric']:55} {row['value']:>10} {row['unit']:3} {row['note']}")
