"""Commit → `notifications/resources/updated` latency for a subscriber of the turn queue.

A real owner (HTTP, no Chair) and a subscriber of `roundtable://turns/{run_id}`; then turn
cycles (request → schedule → start → complete, each its own commit, as the agent and the Chair
write them). For every commit the time from the end of the write transaction (the change is
published on the bus as the commit returns) to the arrival of the update that names the event
(`_meta["roundtable/events"]`) is recorded, on three paths:

- **HTTP**: a minimal raw client (httpx2) holding the session's GET stream;
- **stdio bridge**: `roundtable mcp stdio` as a child, the update read from its stdout (the
  bridge relays the GET stream);
- **session socket**: a capability session's endpoint (Streamable HTTP over its Unix socket).

The subscriber shares the owner's process (the HTTP and socket readers) or the machine (the
bridge), so the figures include their CPU. Target: p50 ≤ 50 ms.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from bench.rows import row

CYCLES = 60  # turn cycles per path (4 commits each)
AGENT = "implementer-1"
TARGET = "<= 50 ms"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Arrivals:
    """Event id → time its update arrived (perf_counter), with a wait."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.event = asyncio.Event()

    def take(self, message: dict[str, Any]) -> None:
        if message.get("method") != "notifications/resources/updated":
            return
        now = time.perf_counter()
        for item in ((message.get("params") or {}).get("_meta") or {}).get("roundtable/events", []):
            if isinstance(item.get("id"), int):
                self.at.setdefault(item["id"], now)
        self.event.set()

    async def wait(self, event_id: int, timeout: float = 5.0) -> float | None:
        deadline = time.perf_counter() + timeout
        while event_id not in self.at:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return None
            self.event.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.event.wait(), remaining)
        return self.at[event_id]


async def _cycles(runtime: Any, run_id: str, arrivals: Arrivals) -> tuple[list[float], list[float], int]:
    """Run the turn cycles; (every commit's latency, the `agent.turn_scheduled` ones, misses)."""
    from roundtable.services.coordination import turns

    every: list[float] = []
    scheduled: list[float] = []
    missed = 0

    async def commit(step: Callable[[Any], Any]) -> tuple[int, float]:
        async with runtime.db.write() as tx:
            await step(tx)
            event_id = int(await tx.scalar("SELECT MAX(id) FROM events"))
        return event_id, time.perf_counter()

    current = {"request": 0}

    async def request(tx: Any) -> None:
        asked = turns.TurnRequestArgs(run_id=run_id, agent_id=AGENT, reason_md="bench")
        current["request"] = int((await turns.request_turn(tx, asked))["request_event_id"])

    async def schedule(tx: Any) -> None:
        await turns.schedule_next(tx, run_id)

    async def start(tx: Any) -> None:
        await turns.start_turn(tx, run_id, AGENT, current["request"])

    async def complete(tx: Any) -> None:
        await turns.complete_turn(
            tx, turns.TurnArgs(run_id=run_id, agent_id=AGENT, request_event_id=current["request"])
        )

    steps: list[tuple[str, Callable[[Any], Any]]] = [
        ("requested", request),
        ("scheduled", schedule),
        ("started", start),
        ("completed", complete),
    ]
    for _ in range(CYCLES):
        for name, step in steps:
            event_id, committed = await commit(step)
            arrived = await arrivals.wait(event_id)
            if arrived is None:
                missed += 1
                continue
            every.append(arrived - committed)
            if name == "scheduled":
                scheduled.append(arrived - committed)
    return every, scheduled, missed


def _rows(path: str, every: list[float], scheduled: list[float], missed: int, note: str) -> list[dict[str, Any]]:
    if not every:
        return [row("notify", f"{path}: commit → update", "no update arrived", "", note)]
    ordered = sorted(every)
    p50 = statistics.median(ordered) * 1000
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000
    sched = statistics.median(scheduled) * 1000 if scheduled else float("nan")
    out = [
        row("notify", f"{path}: commit → update p50", p50, "ms", note, target=TARGET),
        row("notify", f"{path}: commit → update p95", p95, "ms", f"{len(every)} commits, {missed} missed"),
        row("notify", f"{path}: turn scheduled → update p50", sched, "ms", "the 'your turn' push", target=TARGET),
    ]
    return out


# --- subscribers ------------------------------------------------------------------------------


def _sse_messages(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            with contextlib.suppress(ValueError):
                out.append(json.loads(line[5:]))
    return out


@contextlib.asynccontextmanager
async def http_subscriber(
    url: str, headers: dict[str, str], uri: str, arrivals: Arrivals, **client: Any
) -> AsyncIterator[None]:
    """Initialize, subscribe to `uri` and hold the GET stream (raw httpx2: no SDK client CPU)."""
    import httpx2

    async with httpx2.AsyncClient(
        headers={**HEADERS, **headers}, timeout=httpx2.Timeout(30.0, read=None), **client
    ) as http:
        resp = await http.post(url, json=INIT)
        sid = resp.headers["mcp-session-id"]
        session = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        ready = asyncio.Event()

        async def listen() -> None:
            async with http.stream("GET", url, headers={**session, "accept": "text/event-stream"}) as stream:
                ready.set()
                buffer = ""
                async for chunk in stream.aiter_text():
                    buffer = (buffer + chunk).replace("\r\n", "\n")
                    while "\n\n" in buffer:
                        block, buffer = buffer.split("\n\n", 1)
                        for message in _sse_messages(block):
                            arrivals.take(message)

        task = asyncio.create_task(listen())
        await asyncio.wait_for(ready.wait(), 10)
        sub = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}
        assert "result" in _sse_messages((await http.post(url, json=sub, headers=session)).text)[0]
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            with contextlib.suppress(Exception):
                await http.delete(url, headers=session)


@contextlib.asynccontextmanager
async def bridge_subscriber(root: Path, url: str, token: str, uri: str, arrivals: Arrivals) -> AsyncIterator[None]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "mcp",
        "stdio",
        "--root",
        str(root),
        "--url",
        url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "ROUNDTABLE_MCP_TOKEN": token},
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: dict[int, asyncio.Future[dict[str, Any]]] = {}

    async def pump() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            message = json.loads(line)
            if isinstance(message.get("id"), int) and message["id"] in answers:
                answers.pop(message["id"]).set_result(message)
            arrivals.take(message)

    async def ask(message: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        answers[message["id"]] = future
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        await proc.stdin.drain()
        return await asyncio.wait_for(future, 30)

    task = asyncio.create_task(pump())
    try:
        await ask(INIT)
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        await asyncio.sleep(0.3)  # the bridge opens its GET stream after `initialized`
        got = await ask({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}})
        assert "result" in got, got
        yield
    finally:
        with contextlib.suppress(Exception):
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 10)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


# --- the benchmark ----------------------------------------------------------------------------


async def _run(tmp: Path, root: Path) -> list[dict[str, Any]]:
    import httpx2

    from roundtable import clock
    from roundtable.owner import Owner
    from roundtable.server.sessions import SessionEndpoint
    from roundtable.services.coordination.runs import create_run
    from roundtable.services.sessions import capabilities, tokens
    from roundtable.services.sessions import records as sessions

    rows: list[dict[str, Any]] = []
    async with Owner(root, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        rt = owner.runtime
        run = await create_run(rt, "bench notify")
        uri = f"roundtable://turns/{run.id}"
        await tokens.ensure_credential(rt.db, rt.root, tokens.TokenArgs(principal=tokens.AGENT, agent_id=AGENT))
        from roundtable import credentials

        token = credentials.read_credential(rt.root, agent_id=AGENT)
        headers = {"Authorization": f"Bearer {token}"}

        arrivals = Arrivals()
        async with http_subscriber(owner.http_url, headers, uri, arrivals):
            rows += _rows("HTTP", *await _cycles(rt, run.id, arrivals), "raw client on the GET stream, same process")

        arrivals = Arrivals()
        async with bridge_subscriber(root, owner.http_url, token, uri, arrivals):
            rows += _rows("stdio bridge", *await _cycles(rt, run.id, arrivals), "bridge child relaying the GET stream")

        task = await rt.call(
            "task.create", {"title": "t", "body_md": "b", "assigned_agent_id": AGENT, "readable_paths": ["src"]}
        )
        async with rt.db.write() as tx:
            sid = clock.new_id("S")
            await sessions.register(tx, sessions.SessionDraft(sid, AGENT, run.id, "scripted", str(root)))
            cap_token, cap = await capabilities.issue(
                tx, session_id=sid, agent_id=AGENT, run_id=run.id, role="implementer", task_id=task["task"]["id"]
            )
        sock = tmp / "s.sock"
        endpoint = SessionEndpoint(rt, cap.id, sock)
        await endpoint.start()
        try:
            arrivals = Arrivals()
            transport = httpx2.AsyncHTTPTransport(uds=str(sock))
            async with http_subscriber(
                "http://localhost/mcp", {"Authorization": f"Bearer {cap_token}"}, uri, arrivals, transport=transport
            ):
                rows += _rows("session socket", *await _cycles(rt, run.id, arrivals), "capability session, UDS")
        finally:
            await endpoint.close()
    return rows


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    tmp = Path(tempfile.mkdtemp(prefix="rt-bench-notify-"))
    root = tmp / "p"
    root.mkdir()
    init_project(root)
    try:
        return asyncio.run(_run(tmp, root))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    for r in run():
        print(r)
