"""Start-up costs a user feels (medians of several runs):

- `roundtable --help` wall time, next to the bare interpreter;
- `roundtable mcp stdio` spawn → first `tools/list` answered, against a running owner (target
  ≤ 250 ms: a harness spawns one bridge per agent and waits for it);
- `roundtable mcp stdio` spawn → exit with no owner (it must fail in about a second with one line,
  not hang until the harness's own connect timeout).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BRIDGE = [sys.executable, "-m", "roundtable", "mcp", "stdio"]
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def _wall(argv: list[str], runs: int = 7) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def bridge_to_tools_list(root: Path, url: str, runs: int = 9) -> tuple[float, float]:
    """Medians (ms) of spawn → `initialize` answered and spawn → first `tools/list` answered."""
    inits, lists = [], []
    msgs = [
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    payload = b"".join(json.dumps(m).encode() + b"\n" for m in msgs)
    for _ in range(runs):
        t = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *BRIDGE, "--root", str(root), "--url", url, stdin=-1, stdout=-1, stderr=-1, limit=1 << 24
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(payload)
        first = await asyncio.wait_for(proc.stdout.readline(), 30)
        inits.append((time.perf_counter() - t) * 1000)
        second = await asyncio.wait_for(proc.stdout.readline(), 30)
        lists.append((time.perf_counter() - t) * 1000)
        assert json.loads(first)["id"] == 0 and "tools" in json.loads(second)["result"], (first, second)
        proc.stdin.close()
        await proc.wait()
    return statistics.median(inits), statistics.median(lists)


async def bridge_no_owner(root: Path, port: int, runs: int = 7) -> float:
    """Median (ms) of spawn → exit 1 when nothing listens at the owner's address."""
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *BRIDGE, "--root", str(root), "--url", f"http://127.0.0.1:{port}/mcp", stdin=-1, stdout=-1, stderr=-1
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        await asyncio.wait_for(proc.communicate(), 30)
        samples.append((time.perf_counter() - t) * 1000)
        assert proc.returncode == 1
    return statistics.median(samples)


def _bridge_rows() -> list[dict[str, Any]]:
    from bench.ownerproc import OwnerProcess, free_port
    from roundtable.scaffold import init_project

    tmp = Path(tempfile.mkdtemp(prefix="rtb", dir="/tmp"))
    try:
        root = tmp / "p"
        root.mkdir()
        init_project(root)
        no_owner = asyncio.run(bridge_no_owner(root, free_port()))
        with OwnerProcess(root) as owner:
            init_ms, list_ms = asyncio.run(bridge_to_tools_list(root, owner.url))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [
        {
            "benchmark": "startup",
            "metric": "mcp stdio spawn -> initialize answered",
            "value": round(init_ms, 1),
            "unit": "ms",
            "note": "median of 9",
        },
        {
            "benchmark": "startup",
            "metric": "mcp stdio spawn -> first tools/list answered",
            "value": round(list_ms, 1),
            "unit": "ms",
            "note": "median of 9; target <= 250 ms",
        },
        {
            "benchmark": "startup",
            "metric": "mcp stdio spawn -> exit 1, no owner",
            "value": round(no_owner, 1),
            "unit": "ms",
            "note": "median of 7; one stderr line, the pending initialize answered; target about 1 s",
        },
    ]


def run() -> list[dict[str, object]]:
    python_floor = _wall([sys.executable, "-c", "pass"])
    help_ms = _wall([sys.executable, "-m", "roundtable", "--help"])
    return [
        {"benchmark": "startup", "metric": "python -c pass (floor)", "value": python_floor, "unit": "ms", "note": ""},
        {
            "benchmark": "startup",
            "metric": "roundtable --help",
            "value": help_ms,
            "unit": "ms",
            "note": f"{help_ms / python_floor:.1f}x the bare interpreter",
        },
        *_bridge_rows(),
    ]


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<50} {r['value']:>10} {r['unit']:<4} {r['note']}")
