"""Transport benchmark: latency (p50/p99), throughput and server CPU per call, side by side.

Servers run as subprocesses (so their CPU time comes from their own accounting in
/proc/<pid>/stat): the real owner with an echo tool (legacy socket, Streamable HTTP in both
protocol eras, and the stdio bridge in front of it), a bare asyncio socket echo server and a
bare MCP SDK echo server as floors. Clients: raw asyncio for the socket, a lean httpx2 JSON-RPC
client for handshake-era HTTP (so the client does not dominate), the SDK's own `Client` for
the 2026-07-28 era, and one bridge process with concurrent requests for stdio. The bridge's
start-up (spawn → first `tools/list`, spawn → exit with no owner) is in `bench/startup.py`.

Run: `.venv/bin/python -m bench.transports` (prints a table) or `run()` for rows.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2

from bench.looplag import rows_from_file
from bench.rows import row as bench_row
from roundtable.credentials import read_credential

CONCURRENCY = (1, 10, 50)
DURATION = 1.5  # seconds of load per cell
# A target's cells (the floor, the owner's echo, the owner's tool) are measured in turns, this
# many rounds of ROUND seconds each after one warm-up, and each metric is the median of its
# rounds: two servers on two shared cores drift by ±20 % over seconds, and a ratio of cells
# measured seconds apart measured the drift as much as the servers.
ROUNDS = 3
ROUND = 1.0
TICK = os.sysconf("SC_CLK_TCK")
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
SOCKET_FLOOR = "floor asyncio socket echo"
HTTP_FLOOR = "floor MCP SDK echo, HTTP 2025-11-25"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(*argv: str) -> subprocess.Popen[str]:
    return _spawn_ready(*argv)[0]


def _spawn_ready(*argv: str) -> tuple[subprocess.Popen[str], str]:
    """Start a server script and wait for its `ready ...` line; returns it with the line."""
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "ready" not in line:
        proc.kill()
        raise RuntimeError(f"{argv} did not start")
    return proc, line.strip()


async def _load(
    call: Callable[[int], Awaitable[None]], clients: int, workers: list[Any] | None = None, seconds: float = 0.0
) -> dict[str, float]:
    """Run `clients` loops of `call(worker)` for `seconds` (DURATION); latency in ms."""
    latencies: list[float] = []
    stop = time.perf_counter() + (seconds or DURATION)

    async def loop(worker: int) -> None:
        while time.perf_counter() < stop:
            t = time.perf_counter()
            await call(worker)
            latencies.append((time.perf_counter() - t) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(loop(i) for i in range(clients)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "calls": len(latencies),
        "p50": statistics.median(latencies),
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "rate": len(latencies) / elapsed,
    }


# --- clients --------------------------------------------------------------------------------


def socket_client(path: str, tool: str, args: dict[str, Any] | None = None) -> Callable[[int], Awaitable[None]]:
    line = json.dumps({"tool": tool, "args": {"n": 1} if args is None else args}).encode() + b"\n"

    async def call(worker: int) -> None:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(line)
        reply = await reader.readline()
        writer.close()
        assert reply.startswith(b'{"ok":true'), reply

    return call


class LegacyHttp:
    """A lean handshake-era client: one session per worker, SSE replies parsed by hand."""

    def __init__(
        self, url: str, tool: str, workers: int, args: dict[str, Any] | None = None, auth: dict[str, str] | None = None
    ) -> None:
        self.url, self.tool, self.n = url, tool, workers
        self.args = {"n": 1} if args is None else args
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        transport = httpx2.AsyncHTTPTransport(
            socket_options=nodelay, verify=False, limits=httpx2.Limits(max_connections=workers + 5)
        )
        self.http = httpx2.AsyncClient(headers={**HEADERS, **(auth or {})}, transport=transport)
        self.sessions: list[str] = []
        self.ids = itertools.count(1)

    async def open(self) -> None:
        for _ in range(self.n):
            resp = await self.http.post(self.url, json=INIT)
            sid = resp.headers["mcp-session-id"]
            h = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            await self.http.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
            self.sessions.append(sid)

    async def call(self, worker: int) -> None:
        await self._call(worker, self.tool, self.args)

    def calling(self, tool: str, args: dict[str, Any]) -> Callable[[int], Awaitable[None]]:
        """Calls of another tool over the same sessions."""
        return lambda worker: self._call(worker, tool, args)

    async def _call(self, worker: int, tool: str, args: dict[str, Any]) -> None:
        h = {"mcp-session-id": self.sessions[worker], "mcp-protocol-version": "2025-11-25"}
        body = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        resp = await self.http.post(self.url, json=body, headers=h)
        assert '"isError":false' in resp.text or '"structuredContent"' in resp.text, resp.text[:200]

    async def close(self) -> None:
        for sid in self.sessions:
            await self.http.delete(self.url, headers={"mcp-session-id": sid})
        await self.http.aclose()


class Bridge:
    """One `roundtable mcp stdio` process; concurrent requests matched by id."""

    def __init__(self, root: str, url: str, tool: str) -> None:
        self.argv = [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", root, "--url", url]
        self.tool = tool
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

    async def open(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(*self.argv, stdin=-1, stdout=-1, limit=1 << 24)
        self.reader = asyncio.create_task(self._read())
        await self.request("initialize", dict(INIT["params"]))  # type: ignore[call-overload]
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            fut = self.waiting.pop(msg.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(self.ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await fut

    async def call(self, worker: int) -> None:
        reply = await self.request("tools/call", {"name": self.tool, "arguments": {"n": 1}})
        assert "result" in reply, reply

    async def close(self) -> float:
        cpu = _cpu(self.proc.pid)
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await self.proc.wait()
        self.reader.cancel()
        return cpu


async def _sdk_cell(url: str, tool: str, clients: int, pid: int, auth: dict[str, str]) -> dict[str, float]:
    from contextlib import AsyncExitStack

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    def transport() -> Any:
        # The SDK client takes a URL or a transport; the owner's endpoint needs the credential.
        http = httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(30.0, read=300.0))
        return streamable_http_client(url, http_client=http)

    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(transport())) for _ in range(clients)]

        async def call(worker: int) -> None:
            r = await sessions[worker].session.call_tool(tool, {"n": 1})
            assert not r.is_error

        before = _cpu(pid)
        stats = await _load(call, clients)
        stats["cpu_us"] = (_cpu(pid) - before) / stats["calls"] * 1e6
    return stats


async def _cell(pid: int, call: Callable[[int], Awaitable[None]], clients: int) -> dict[str, float]:
    await _load(call, clients)  # warm-up (sessions, caches); same duration keeps it simple
    before = _cpu(pid)
    stats = await _load(call, clients)
    stats["cpu_us"] = (_cpu(pid) - before) / stats["calls"] * 1e6
    return stats


async def _in_turns(arms: list[tuple[int, Callable[[int], Awaitable[None]]]], clients: int) -> list[dict[str, float]]:
    """Each (server pid, call) arm warmed up, then measured in turns for ROUNDS rounds of ROUND
    seconds; per arm, the median of each metric over its rounds (`calls` is their sum)."""
    for _, call in arms:
        await _load(call, clients, seconds=ROUND)
    rounds: list[list[dict[str, float]]] = [[] for _ in arms]
    for _ in range(ROUNDS):
        for (pid, call), kept in zip(arms, rounds, strict=True):
            before = _cpu(pid)
            stats = await _load(call, clients, seconds=ROUND)
            stats["cpu_us"] = (_cpu(pid) - before) / stats["calls"] * 1e6
            kept.append(stats)
    return [
        {
            key: sum(r[key] for r in kept) if key == "calls" else statistics.median(r[key] for r in kept)
            for key in kept[0]
        }
        for kept in rounds
    ]


async def _measure(root: Path, tmp: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def row(name: str, clients: int, s: dict[str, float], note: str = "", floor: str = "", target: str = "") -> None:
        for metric, unit, value in (
            ("p50", "ms", s["p50"]),
            ("p99", "ms", s["p99"]),
            ("throughput", "calls/s", s["rate"]),
            ("server CPU/call", "µs", s["cpu_us"]),
        ):
            cpu = metric == "server CPU/call"
            rows.append(
                bench_row(
                    "transports",
                    f"{name} c={clients} {metric}",
                    value,
                    unit,
                    note,
                    floor=f"{floor} c={clients} {metric}" if floor else "",
                    target=target if cpu else "",
                )
            )

    port, floor_port = _free_port(), _free_port()
    sock, floor_sock = str(tmp / "owner.sock"), str(tmp / "floor.sock")
    lag_file = tmp / "owner-lag.json"
    owner, ready = _spawn_ready("-m", "bench.floors.owner_echo", str(root), str(port), sock, str(lag_file))
    task_get = {"task_id": ready.split()[1]}
    # The owner's endpoint is authenticated by default (the floor is a bare SDK server).
    token = read_credential(root, agent_id="implementer-1")
    owner_auth = {"Authorization": f"Bearer {token}"}
    floor_socket = _spawn("-m", "bench.floors.socket_echo", floor_sock)
    floor_mcp = _spawn("-m", "bench.floors.mcp_echo", str(floor_port))
    url, floor_url = f"http://127.0.0.1:{port}/mcp", f"http://127.0.0.1:{floor_port}/mcp"
    try:
        for c in CONCURRENCY:
            floor_cell, echo_cell, get_cell = await _in_turns(
                [
                    (floor_socket.pid, socket_client(floor_sock, "bench.echo")),
                    (owner.pid, socket_client(sock, "bench.echo")),
                    (owner.pid, socket_client(sock, "task.get", task_get)),
                ],
                c,
            )
            row("floor asyncio socket echo", c, floor_cell)
            row("socket (owner)", c, echo_cell, floor=SOCKET_FLOOR)
            row("socket (owner) task.get", c, get_cell, floor=SOCKET_FLOOR)
            floor_client = LegacyHttp(floor_url, "bench_echo", c)
            client = LegacyHttp(url, "bench_echo", c, auth=owner_auth)
            await floor_client.open()
            await client.open()
            floor_cell, echo_cell, get_cell = await _in_turns(
                [
                    (floor_mcp.pid, floor_client.call),
                    (owner.pid, client.call),
                    (owner.pid, client.calling("task_get", task_get)),
                ],
                c,
            )
            await floor_client.close()
            await client.close()
            note = "lean httpx2 client, stateful SSE"
            row(HTTP_FLOOR, c, floor_cell, note)
            row("HTTP 2025-11-25 (owner)", c, echo_cell, note, floor=HTTP_FLOOR)
            row("HTTP 2025-11-25 (owner) task.get", c, get_cell, note, floor=HTTP_FLOOR)
            bridge = Bridge(str(root), url, "bench_echo")
            await bridge.open()
            stats = await _cell(owner.pid, bridge.call, c)
            bridge_cpu = await bridge.close()
            row("stdio bridge -> owner", c, stats, f"one bridge process; its own CPU {bridge_cpu:.2f}s in total")
            if c <= 10:
                row(
                    "HTTP 2026-07-28 (owner, SDK Client)",
                    c,
                    await _sdk_cell(url, "bench_echo", c, owner.pid, owner_auth),
                    "SDK client auto mode",
                )
    finally:
        for proc in (owner, floor_socket, floor_mcp):
            proc.terminate()
            proc.wait(10)
    return [*rows, *rows_from_file("transports", lag_file, "owner")]


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


if __name__ == "__main__":
    for r in run():
        print(f"{r['metric']:<58} {r['value']:>10} {r['unit']:<8} {r['note']}")
