"""The handshake: `initialize` + `tools/list` over Streamable HTTP with the MCP SDK client.

What every agent pays before its first call: a fresh SDK `ClientSession` (its own HTTP client
with the agent's bearer credential) initialises, lists the tools and closes, `HANDSHAKES` times
in a row, against the real owner (a subprocess, `bench.floors.owner_echo`) and against a bare
SDK server with one tool (`bench.floors.mcp_echo`) as the floor. Rows: wall time per handshake
(median and max), the server's CPU per handshake (from /proc/<pid>/stat), the ratio to the
floor, the size of the owner's `tools/list` answer, and the owner's loop lag over the module.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.looplag import rows_from_file
from bench.rows import row
from bench.transports import _cpu, _free_port, _spawn, _spawn_ready
from roundtable.credentials import read_credential

HANDSHAKES = 50
FLOOR = "floor MCP SDK echo handshake"


async def _handshake(url: str, headers: dict[str, str]) -> int:
    """One initialize + tools/list on a fresh session; returns the tools/list answer's size."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        return len(listed.model_dump_json(by_alias=True, exclude_none=True))


async def _series(url: str, headers: dict[str, str], pid: int) -> tuple[list[float], float, int]:
    """(wall ms per handshake, server CPU µs per handshake, tools/list bytes), after one warm-up."""
    size = await _handshake(url, headers)
    walls: list[float] = []
    before = _cpu(pid)
    for _ in range(HANDSHAKES):
        started = time.perf_counter()
        await _handshake(url, headers)
        walls.append((time.perf_counter() - started) * 1000)
    return walls, (_cpu(pid) - before) / HANDSHAKES * 1e6, size


async def _measure(root: Path, tmp: Path) -> list[dict[str, Any]]:
    port, floor_port = _free_port(), _free_port()
    lag_file = tmp / "owner-lag.json"
    owner, _ready = _spawn_ready(
        "-m", "bench.floors.owner_echo", str(root), str(port), str(tmp / "owner.sock"), str(lag_file)
    )
    floor = _spawn("-m", "bench.floors.mcp_echo", str(floor_port))
    auth = {"Authorization": f"Bearer {read_credential(root, agent_id='implementer-1')}"}
    try:
        floor_walls, floor_cpu, floor_size = await _series(f"http://127.0.0.1:{floor_port}/mcp", {}, floor.pid)
        walls, cpu, size = await _series(f"http://127.0.0.1:{port}/mcp", auth, owner.pid)
    finally:
        for proc in (owner, floor):
            proc.terminate()
            proc.wait(10)
    note = f"median of {HANDSHAKES}; SDK ClientSession, fresh HTTP client each"
    return [
        row("handshake", f"{FLOOR} wall", statistics.median(floor_walls), "ms", f"{note}; max {max(floor_walls):.1f}"),
        row("handshake", f"{FLOOR} server CPU", floor_cpu, "µs", f"one tool; tools/list {floor_size} bytes"),
        row(
            "handshake",
            "owner handshake wall",
            statistics.median(walls),
            "ms",
            f"{note}; max {max(walls):.1f}",
            floor=f"{FLOOR} wall",
        ),
        row(
            "handshake",
            "owner handshake server CPU",
            cpu,
            "µs",
            "per initialize + tools/list",
            floor=f"{FLOOR} server CPU",
        ),
        row("handshake", "owner tools/list size", size, "bytes", "as implementer-1 sees it"),
        *rows_from_file("handshake", lag_file, "owner"),
    ]


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    tmp = Path(tempfile.mkdtemp(prefix="rtb", dir="/tmp"))
    try:
        root = tmp / "p"
        root.mkdir()
        init_project(root)
        return asyncio.run(_measure(root, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
