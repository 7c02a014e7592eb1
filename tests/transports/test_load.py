"""Load: a real owner holds up under 20,000 idle connections and 10,000 `initialize`s while a
socket call and an HTTP call still answer within a second.

Marked `load` and skipped unless selected (`pytest -m load tests/transports/test_load.py -s`):
it takes about a minute of both cores and 20,000 file descriptors, too much for every `make test`.
The holders are child processes (each raises its soft fd limit to the hard one) so the test
process itself needs few descriptors; the figures it prints are the ones in the README.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path

import httpx2
import pytest

from roundtable import credentials
from tests.support.owners import OwnerChild, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.load]
IDLE = 20_000
INITIALIZES = 10_000
HOLDERS = 4
HOLDER = r"""
import asyncio, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port, count = int(sys.argv[1]), int(sys.argv[2])
held, failed = [], 0
async def one(sem):
    global failed
    async with sem:
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
            w.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Slow: ")
            held.append(w)
        except Exception:
            failed += 1
async def main():
    sem = asyncio.Semaphore(256)
    await asyncio.gather(*(one(sem) for _ in range(count)))
    print(f"held {len(held)} failed {failed}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
asyncio.run(main())
"""


def rss_mib(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) / 1024 if match else 0.0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Probe:
    """One legacy-socket call and one HTTP `tools/call`, each timed."""

    def __init__(self, sock: str, url: str, token: str | None) -> None:
        self.sock, self.url = sock, url
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.http = httpx2.AsyncClient(headers=headers, timeout=10)
        self.socket_times: list[float] = []
        self.http_times: list[float] = []
        self.phase = "start"
        self.slow: list[tuple[str, str, float]] = []

    async def open(self) -> None:
        return None

    async def socket_call(self) -> None:
        started = time.monotonic()
        reader, writer = await asyncio.open_unix_connection(self.sock)
        writer.write(json.dumps({"tool": "table.get_state", "args": {}}).encode() + b"\n")
        line = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        assert json.loads(line)["ok"] is True
        self._note("socket", time.monotonic() - started, self.socket_times)

    async def http_call(self) -> None:
        """A 2026-07-28 request: self-contained, so no session of ours can be evicted by the flood
        (which, without per-agent credentials, runs as the same principal)."""
        started = time.monotonic()
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "table_get_state", "_meta": meta}}
        headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "table_get_state"}
        reply = await self.http.post(self.url, json=body, headers=headers)
        assert '"structuredContent"' in reply.text, reply.text[:300]
        self._note("http", time.monotonic() - started, self.http_times)

    def _note(self, what: str, took: float, into: list[float]) -> None:
        into.append(took)
        if took > 0.5:
            self.slow.append((self.phase, what, round(took, 3)))

    async def both(self) -> None:
        await self.socket_call()
        await self.http_call()

    def summary(self) -> dict[str, float]:
        def med(xs: list[float]) -> float:
            return round(sorted(xs)[len(xs) // 2], 4)

        return {
            "socket median s": med(self.socket_times),
            "socket worst s": round(max(self.socket_times), 3),
            "http median s": med(self.http_times),
            "http worst s": round(max(self.http_times), 3),
            "probes": len(self.http_times),
            "slow probes": self.slow,  # type: ignore[dict-item]
        }


FLOOD = r"""
import asyncio, json, sys
port, total, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
    "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}}}).encode()
auth = f"Authorization: Bearer {token}\r\n".encode() if token != "-" else b""
request = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: application/json, text/event-stream\r\n"
    b"Content-Type: application/json\r\nConnection: close\r\n%sContent-Length: %d\r\n\r\n%s"
    % (port, auth, len(body), body))
counts = {"ok": 0, "other": 0}
remaining = [total]
async def worker():
    while remaining[0] > 0:
        remaining[0] -= 1
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            status = await asyncio.wait_for(reader.readline(), 30)
            await asyncio.wait_for(reader.read(), 30)
            writer.close()
            counts["ok" if status.startswith(b"HTTP/1.1 200") else "other"] += 1
        except (OSError, asyncio.TimeoutError):
            counts["other"] += 1
async def main():
    await asyncio.gather(*(worker() for _ in range(16)))
    print(f"ok {counts['ok']} other {counts['other']}", flush=True)
asyncio.run(main())
"""


async def test_owner_survives_idle_connections_and_initialize_flood(project: Path, sockdir: Path) -> None:
    config = project / ".roundtable" / "config.yaml"
    sock = sockdir / "rt.sock"
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"socket_path: .*", f"socket_path: {sock}", text), encoding="utf-8")
    port = free_port()
    owner = await OwnerChild(project, port).start()
    holders: list[asyncio.subprocess.Process] = []
    probe: Probe | None = None
    try:
        probe = Probe(str(sock), owner.url, credentials.read_credential(project))
        await probe.open()
        await probe.both()
        rss_start = rss_mib(owner.pid)
        fds_start = fds(owner.pid)

        for _ in range(HOLDERS):
            holders.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    HOLDER,
                    str(port),
                    str(IDLE // HOLDERS),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
            )
        probe.phase = "connect"
        started = time.monotonic()
        waiting = [asyncio.ensure_future(h.stdout.readline()) for h in holders if h.stdout is not None]
        peak_fds = 0
        while not all(w.done() for w in waiting):
            await probe.both()
            peak_fds = max(peak_fds, fds(owner.pid))
            await asyncio.sleep(0.2)
        lines = [w.result().decode() for w in waiting]
        held = sum(int(line.split()[1]) for line in lines)
        connect_seconds = time.monotonic() - started
        for _ in range(5):
            await probe.both()
            peak_fds = max(peak_fds, fds(owner.pid))
        rss_idle = rss_mib(owner.pid)

        token = credentials.read_credential(project) or "-"
        flooder = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FLOOD, str(port), str(INITIALIZES), token, stdout=asyncio.subprocess.PIPE
        )
        assert flooder.stdout is not None
        flood = asyncio.ensure_future(flooder.stdout.readline())
        probe.phase = "initialize"
        flood_started = time.monotonic()
        while not flood.done():
            await probe.both()
            await asyncio.sleep(0.2)
        await flooder.wait()
        _ok, ok_text, _other, other_text = flood.result().decode().split()
        ok, other = int(ok_text), int(other_text)
        flood_seconds = time.monotonic() - flood_started
        await probe.both()
        rss_end = rss_mib(owner.pid)
        log_bytes = sum(len(line) for line in owner.output)
        report = {
            "idle connections held by clients": held,
            "holder lines": lines,
            "connect phase s": round(connect_seconds, 1),
            "owner fds start/peak": (fds_start, peak_fds),
            "initialize ok/other": (ok, other),
            "initialize phase s": round(flood_seconds, 1),
            **probe.summary(),
            "owner RSS MiB start/after idle/after initialize": (round(rss_start), round(rss_idle), round(rss_end)),
            "owner log bytes": log_bytes,
        }
        print("\nLOAD REPORT " + json.dumps(report))
        assert held >= IDLE * 0.95
        assert ok + other == INITIALIZES and ok >= INITIALIZES * 0.95
        # Within a second: every probe on a quiet machine; on a shared 2-core CI box a rare probe
        # waits for the CPU, so the bound is on the 90th percentile, with the worst under 2 s.
        for times in (probe.socket_times, probe.http_times):
            assert sorted(times)[int(len(times) * 0.9)] < 1.0 and max(times) < 2.0, report
        assert peak_fds < 1024 + 256 + 64, report
        assert rss_end - rss_start < 150, report
        assert log_bytes < 64 * 1024, report
    finally:
        for holder in holders:
            if holder.stdin is not None:
                holder.stdin.close()
            try:
                await asyncio.wait_for(holder.wait(), 10)
            except TimeoutError:
                holder.kill()
                await holder.wait()
        if probe is not None:
            await probe.http.aclose()
        await owner.stop()
