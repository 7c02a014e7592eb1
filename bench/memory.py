"""Resident memory (VmRSS) of a real owner process at growing store sizes.

`roundtable mcp serve` runs as a subprocess on a seeded project; after it is ready and after a
few representative reads (`table.get_state`, `table.watch` pages) we read /proc/PID/status.
Sizes: an empty project; 10,000 tasks + 10,000 claims; the same plus 1,000,000 events. The
reads matter: a `get_state` answer at 10k+10k is several MB of JSON while it is built.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.rows import row
from bench.state import CLAIMS, TASKS, make_project, seed

EVENTS = 1_000_000


def _row(metric: str, value: float, unit: str, note: str = "", target: str = "") -> dict[str, Any]:
    return row("memory", metric, round(value, 1), unit, note, target=target)


async def _measure(root: Path, label: str, reads: bool) -> list[dict[str, Any]]:
    from bench.ownerproc import OwnerProcess, SocketClient

    owner = OwnerProcess(root).start()
    try:
        idle = owner.rss_kib()
        peak = idle
        if reads:
            client = SocketClient(owner.socket_path)
            for _ in range(3):
                await client.call("table.get_state", {})
                peak = max(peak, owner.rss_kib())
            # The whole table once, page by page (what a client reading everything costs).
            page = await client.call("table.get_state", {"limit": 1000})
            while page["has_more"]:
                page = await client.call("table.get_state", {"limit": 1000, "cursor": page["next_cursor"]})
                peak = max(peak, owner.rss_kib())
            for cursor in (0, 500_000, 999_000):
                await client.call("table.watch", {"after_event_id": cursor, "limit": 200})
            for _ in range(20):
                await client.call("task.list", {})
            await asyncio.sleep(0.2)
        after = owner.rss_kib()
        peak = max(peak, after)
    finally:
        owner.stop()
    rows = [_row(f"owner RSS, {label}, idle after start", idle / 1024, "MiB", "")]
    if reads:
        rows.append(
            _row(
                f"owner RSS, {label}, after get_state x3 + every page + watch + task.list",
                after / 1024,
                "MiB",
                f"peak seen {peak / 1024:.0f} MiB",
                target="<= 120 MiB" if "events" in label else "",
            )
        )
    return rows


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rt", dir="/tmp") as tmp:
        root = make_project(Path(tmp))
        rows += asyncio.run(_measure(root, "empty project", reads=True))
        seed(root, tasks=TASKS, claims=CLAIMS)
        rows += asyncio.run(_measure(root, f"{TASKS // 1000}k tasks + {CLAIMS // 1000}k claims", reads=True))
        t0 = time.perf_counter()
        seed(root, events=EVENTS)
        rows.append(_row(f"seed {EVENTS:,} events", time.perf_counter() - t0, "s", "sqlite3 executemany"))
        rows += asyncio.run(_measure(root, f"10k+10k and {EVENTS // 1_000_000}M events", reads=True))
    return rows


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<75} {r['value']:>10} {r['unit']:<4} {r['note']}")
