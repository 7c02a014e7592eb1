"""Gateway benchmark: what the owner's gateway adds to a streamed model answer.

A stand-in upstream (a raw asyncio HTTP server on an ephemeral loopback port, on a thread and
event loop of its own) answers every `POST /v1/messages` with a streamed Anthropic message: the
head and `message_start` at once, then 20 content deltas and the closing events, chunked. The
same request is made `N` times directly (httpx2 over TCP) and `N` times through the gateway
(httpx2 over the session's Unix socket, the token swapped for the operator's key, the answer
metered and its usage recorded in the project's database — with no budget set, summed and
written at most every `WRITE_INTERVAL_S`), interleaved in rounds so load on the machine falls on
both alike.

Rows: first byte (request sent → first body chunk) and total (→ end of stream), p50 and p99,
each way; the gateway's first-byte overhead at p50 (target under 5 ms) and p99; and the owner's
CPU per request: the process's CPU time over the gateway's requests minus over the direct ones,
divided by N (the client and the stand-in upstream run in both).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.rows import row

N = 300
ROUND = 25
DELTAS = 20
BENCH = "gateway"
BODY = json.dumps(
    {"model": "claude-bench", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
).encode()


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


_START = _sse(
    "message_start",
    {
        "type": "message_start",
        "message": {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "claude-bench",
            "content": [],
            "usage": {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 0},
        },
    },
)
_DELTA = _sse(
    "content_block_delta",
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "word " * 8}},
)
_END = _sse(
    "message_delta",
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 160}},
) + _sse("message_stop", {"type": "message_stop"})


async def _upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One keep-alive connection of the stand-in: every request gets the streamed message."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                + _chunk(_START)
            )
            await writer.drain()
            for _ in range(DELTAS):
                writer.write(_chunk(_DELTA))
                await writer.drain()
            writer.write(_chunk(_END) + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


class _Upstream:
    """The stand-in on its own thread and loop (so the gateway's loop does only the gateway's work)."""

    def __init__(self) -> None:
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._main, name="bench-upstream", daemon=True)

    def _main(self) -> None:
        self._loop = asyncio.new_event_loop()
        server = self._loop.run_until_complete(asyncio.start_server(_upstream, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    def start(self) -> _Upstream:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


async def _one(http: Any, url: str, headers: dict[str, str]) -> tuple[float, float]:
    """(first byte, total) seconds of one streamed request."""
    started = time.perf_counter()
    first = 0.0
    async with http.stream("POST", url, content=BODY, headers=headers) as answer:
        async for chunk in answer.aiter_raw():
            if not first and chunk:
                first = time.perf_counter() - started
    return first, time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


async def _run(root: Path, socket_dir: Path, upstream: _Upstream) -> list[dict[str, Any]]:
    import httpx2

    from roundtable import clock
    from roundtable.gateway import Gateway
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.agents import sync_agents
    from roundtable.services.coordination.runs import create_run
    from roundtable.services.sessions import capabilities
    from roundtable.services.sessions import records as sessions

    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench-operator"
    runtime = await Runtime.open(root)
    base = f"http://127.0.0.1:{upstream.port}"
    gateway = Gateway(runtime, upstreams={"anthropic": base})
    await gateway.start()
    try:
        await sync_agents(runtime)
        run = await create_run(runtime, "bench")
        task = (
            await runtime.call(
                "task.create",
                {"title": "t", "body_md": "b", "assigned_agent_id": "implementer-1", "readable_paths": ["src"]},
            )
        )["task"]
        session_id = clock.new_id("S")
        async with runtime.db.write() as tx:
            await sessions.register(tx, sessions.SessionDraft(session_id, "implementer-1", run.id, "claude", str(root)))
            await capabilities.issue(
                tx,
                session_id=session_id,
                agent_id="implementer-1",
                run_id=run.id,
                role="implementer",
                task_id=task["id"],
            )
        grant = await gateway.open_session(session_id, adapter="claude", socket_path=socket_dir / "g.sock")
        direct = httpx2.AsyncClient(base_url=base, timeout=30)
        through = httpx2.AsyncClient(
            transport=httpx2.AsyncHTTPTransport(uds=str(grant.socket_path)), base_url="http://gateway", timeout=30
        )
        headers = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
        ways = {
            "direct": (direct, "/v1/messages", {**headers, "x-api-key": "sk-ant-bench-operator"}),
            "gateway": (through, "/anthropic/v1/messages", {**headers, "x-api-key": grant.token}),
        }
        firsts: dict[str, list[float]] = {"direct": [], "gateway": []}
        totals: dict[str, list[float]] = {"direct": [], "gateway": []}
        cpu = {"direct": 0.0, "gateway": 0.0}
        for http, url, h in ways.values():  # warm both connections
            for _ in range(5):
                await _one(http, url, h)
        for _ in range(N // ROUND):
            for way, (http, url, h) in ways.items():
                before = time.process_time()
                for _ in range(ROUND):
                    first, total = await _one(http, url, h)
                    firsts[way].append(first)
                    totals[way].append(total)
                cpu[way] += time.process_time() - before
        await direct.aclose()
        await through.aclose()
        await gateway.flushed(session_id)
        async with runtime.db.read() as r:
            measured = await r.scalar(
                "SELECT input_tokens + output_tokens FROM session_usage WHERE session_id = ?", (session_id,)
            )
    finally:
        await gateway.aclose()
        await runtime.close()
    count = len(firsts["gateway"])
    note = f"{count} streamed answers each way, {DELTAS + 3} events; interleaved in rounds of {ROUND}"
    rows = []
    for way in ("direct", "gateway"):
        rows += [
            row(BENCH, f"first byte p50 ({way})", _pct(firsts[way], 0.5), "ms", note if way == "direct" else ""),
            row(BENCH, f"first byte p99 ({way})", _pct(firsts[way], 0.99), "ms"),
            row(BENCH, f"total p50 ({way})", _pct(totals[way], 0.5), "ms"),
            row(BENCH, f"total p99 ({way})", _pct(totals[way], 0.99), "ms"),
        ]
    overhead_50 = _pct(firsts["gateway"], 0.5) - _pct(firsts["direct"], 0.5)
    overhead_99 = _pct(firsts["gateway"], 0.99) - _pct(firsts["direct"], 0.99)
    total_50 = _pct(totals["gateway"], 0.5) - _pct(totals["direct"], 0.5)
    per_request = (cpu["gateway"] - cpu["direct"]) / count * 1000
    expected = (count + 5) * (120 + 160)
    rows += [
        row(BENCH, "first byte overhead p50", overhead_50, "ms", "gateway − direct", target="<= 5 ms"),
        row(BENCH, "first byte overhead p99", overhead_99, "ms", "gateway − direct"),
        row(BENCH, "total overhead p50", total_50, "ms", "gateway − direct; usage recorded per answer"),
        row(
            BENCH,
            "owner CPU per request",
            per_request,
            "ms",
            f"process CPU over the gateway's requests − over the direct ones, ÷ {count}; recorded usage "
            f"{'matches' if measured == expected else f'is {measured}, not {expected}'}",
        ),
    ]
    return rows


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    tmp = Path(tempfile.mkdtemp(prefix="rt-bench-gw-", dir="/tmp"))
    root = tmp / "p"
    root.mkdir()
    init_project(root)
    upstream = _Upstream().start()
    saved = os.environ.get("ANTHROPIC_API_KEY")
    try:
        return asyncio.run(_run(root, tmp, upstream))
    finally:
        upstream.stop()
        if saved is None:
            os.environ.pop("ANTHROPIC_API_KEY", None)
        else:
            os.environ["ANTHROPIC_API_KEY"] = saved
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    for r in run():
        print(r)
