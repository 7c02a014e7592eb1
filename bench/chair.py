"""The Chair: wake-up latency of the turn queue, and tick cost with 100 active runs.

1. A real `ChairLoop` runs on the runtime's loop with a 30 s period, so only its bus wake-up
   can explain a fast reaction. Ten implementers keep the queue full; each round the scheduled
   agent starts and completes its turn through `Runtime.call`, and we time from the moment
   `agent.turn_complete` has committed to the moment the next `agent.turn_scheduled` is
   published on the change bus. Target < 50 ms.
2. 100 active runs, each with queued turns (one scheduled), active claims and a pending
   proposal, plus 500 tasks: the duration of `ChairLoop.tick_all()` (every run) once the
   first, busy cycle has assigned and announced everything, and one `chair.tick()` for one run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.rows import row

ROUNDS = 60
IMPLEMENTERS = 10
RUNS = 100
TASKS = 500
PATCH = "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n line\n+more\n"


def _row(metric: str, value: float, unit: str, note: str = "", target: str = "") -> dict[str, Any]:
    return row("chair", metric, value, unit, note, target=target)


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _project(tmp: Path) -> Path:
    from roundtable.scaffold import init_project

    root = tmp / "p"
    root.mkdir()
    init_project(root)
    cfg = root / ".roundtable" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("implementers:\n    count: 2", f"implementers:\n    count: {IMPLEMENTERS}"))
    return root


async def _wake_latency(root: Path) -> list[dict[str, Any]]:
    from roundtable import chair
    from roundtable.runtime import Runtime
    from roundtable.services.coordination import runs

    async with await Runtime.open(root) as rt:
        await chair.sync_agents(rt)
        run_id = (await runs.create_run(rt, "bench")).id
        agents = [f"implementer-{i}" for i in range(1, IMPLEMENTERS + 1)]
        sub = rt.bus.subscribe(maxsize=10_000)
        loop = chair.ChairLoop(rt, interval=30.0)
        for agent in agents:
            await rt.call("agent.turn_request", {"run_id": run_id, "agent_id": agent, "reason_md": "go"})
        task = asyncio.create_task(loop.run())
        samples: list[float] = []
        try:

            async def next_scheduled() -> tuple[dict[str, Any], float]:
                while True:
                    change = await sub.get(10)
                    if change is None:
                        raise RuntimeError("no agent.turn_scheduled within 10 s")
                    for event in change.events:
                        if event.get("type") == "agent.turn_scheduled":
                            return event, time.perf_counter()

            event, _ = await next_scheduled()
            for _ in range(ROUNDS):
                payload = json.loads(str(event.get("payload_json") or "{}"))
                agent, request = str(payload["agent_id"]), int(payload["request_event_id"])
                args = {"run_id": run_id, "agent_id": agent, "request_event_id": request}
                await rt.call("agent.turn_start", args)
                sub.drain()
                await rt.call("agent.turn_complete", args)
                committed = time.perf_counter()
                event, seen = await next_scheduled()
                samples.append((seen - committed) * 1000)
                await rt.call("agent.turn_request", {"run_id": run_id, "agent_id": agent, "reason_md": "again"})
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            sub.close()
    p50 = statistics.median(samples)
    return [
        _row(
            "turn_complete committed -> next turn_scheduled p50",
            p50,
            "ms",
            "idle; tick period 30 s, so the bus wake-up does it",
            target="< 50 ms",
        ),
        _row("turn_complete committed -> next turn_scheduled p99", _pct(samples, 0.99), "ms", f"{ROUNDS} rounds"),
    ]


async def _seed_runs(rt: Any, root: Path) -> list[str]:
    from roundtable import clock
    from roundtable.services.coordination import runs

    run_ids = [(await runs.create_run(rt, f"bench {i}")).id for i in range(RUNS)]
    for i in range(TASKS):
        await rt.call("task.create", {"title": f"task {i}", "body_md": "work", "task_id": f"T-bench-{i:04d}"})
    sha = hashlib.sha256(PATCH.encode()).hexdigest()
    patch_dir = root / ".roundtable" / "patches"
    patch_dir.mkdir(parents=True, exist_ok=True)
    (patch_dir / f"{sha}.diff").write_text(PATCH)
    for n, run_id in enumerate(run_ids):
        for k in range(4):
            agent = f"implementer-{(n + k) % IMPLEMENTERS + 1}"
            await rt.call("agent.turn_request", {"run_id": run_id, "agent_id": agent, "reason_md": "queued"})
        for k in range(2):
            await rt.call(
                "resource.claim",
                {
                    "resource_type": "file",
                    "claim_type": "write",
                    "task_id": f"T-bench-{n * 5 + k:04d}",
                    "path": f"src/run{n}/file{k}.py",
                    "agent_id": f"implementer-{k + 1}",
                    "run_id": run_id,
                    "ttl_seconds": 3600,
                },
            )
        async with rt.db.write() as tx:
            await tx.insert(
                "proposals",
                {
                    "id": f"P-bench-{n:03d}",
                    "task_id": f"T-bench-{n * 5:04d}",
                    "agent_id": "implementer-1",
                    "title": "bench",
                    "summary_md": "s",
                    "patch_path": f".roundtable/patches/{sha}.diff",
                    "status": "pending",
                    "risk": "normal",
                    "current_revision": sha,
                    "revision_number": 1,
                    "created_at": clock.now(),
                },
            )
    return run_ids


async def _tick_cost(root: Path) -> list[dict[str, Any]]:
    from roundtable import chair
    from roundtable.runtime import Runtime

    async with await Runtime.open(root) as rt:
        await chair.sync_agents(rt)
        run_ids = await _seed_runs(rt, root)
        loop = chair.ChairLoop(rt, interval=30.0)
        t0 = time.perf_counter()
        first = await loop.tick_all()
        busy = (time.perf_counter() - t0) * 1000
        assert len(first) == RUNS
        errors = [e for r in first for e in r.errors]
        cycles = []
        for _ in range(5):
            t0 = time.perf_counter()
            await loop.tick_all()
            cycles.append((time.perf_counter() - t0) * 1000)
        # The loop's own period: nothing was committed since the last full cycle.
        await loop.cycle()
        idle = []
        for _ in range(20):
            t0 = time.perf_counter()
            await loop.cycle()
            idle.append((time.perf_counter() - t0) * 1000)
        await loop.close()
        singles = []
        for run_id in run_ids[:30]:
            t0 = time.perf_counter()
            await chair.tick(rt, run_id)
            singles.append((time.perf_counter() - t0) * 1000)
    cycle = statistics.median(cycles)
    return [
        _row(
            f"first cycle, {RUNS} runs (assigns {TASKS} tasks, requests {RUNS} reviews, schedules)",
            busy,
            "ms",
            f"{len(errors)} item errors" if errors else "",
        ),
        _row(f"full cycle over {RUNS} active runs median", cycle, "ms", f"{cycle / RUNS:.2f} ms per run"),
        _row(
            f"steady loop cycle over {RUNS} idle runs median",
            statistics.median(idle),
            "ms",
            "nothing committed since the last cycle",
            target="<= 20 ms",
        ),
        _row("one run's tick (100 active runs in the store) median", statistics.median(singles), "ms", ""),
    ]


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rt-bench-chair-") as tmp:
        rows += asyncio.run(_wake_latency(_project(_mk(Path(tmp), "a"))))
        rows += asyncio.run(_tick_cost(_project(_mk(Path(tmp), "b"))))
    return rows


def _mk(base: Path, name: str) -> Path:
    path = base / name
    path.mkdir()
    return path


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<80} {r['value']:>10} {r['unit']:<4} {r['note']}")
