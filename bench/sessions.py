"""Session benchmarks: the per-call capability checks and a tools/call through a session socket.

- `check_call`: the full per-call re-resolution (capability, session, run, agent, task, matrix,
  identity) for one allowed call, straight against SQLite (no HTTP);
- `session tools/call`: one `task.get` from the SDK client over the per-session Unix socket
  (Streamable HTTP, stateful) including the checks and the dispatch.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

N_CHECKS = 400
N_CALLS = 150


def _row(metric: str, values: list[float], note: str = "") -> list[dict[str, Any]]:
    values = sorted(values)
    p50 = statistics.median(values) * 1000
    p95 = values[int(len(values) * 0.95) - 1] * 1000
    return [
        {"benchmark": "sessions", "metric": f"{metric} p50", "value": p50, "unit": "ms", "note": note},
        {"benchmark": "sessions", "metric": f"{metric} p95", "value": p95, "unit": "ms", "note": ""},
    ]


async def _run() -> list[dict[str, Any]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from roundtable import clock
    from roundtable.runtime import Runtime
    from roundtable.server.sessions import SessionEndpoint
    from roundtable.services.coordination.agents import sync_agents
    from roundtable.services.coordination.runs import create_run
    from roundtable.services.sessions import capabilities
    from roundtable.services.sessions import records as sessions

    tmp, root = _TMP
    rows: list[dict[str, Any]] = []
    runtime = await Runtime.open(root)
    try:
        await sync_agents(runtime)
        run = await create_run(runtime, "bench")
        task = (
            await runtime.call(
                "task.create",
                {"title": "t", "body_md": "b", "assigned_agent_id": "implementer-1", "readable_paths": ["src"]},
            )
        )["task"]
        async with runtime.db.write() as tx:
            sid = clock.new_id("S")
            await sessions.register(tx, sessions.SessionDraft(sid, "implementer-1", run.id, "scripted", str(root)))
            token, cap = await capabilities.issue(
                tx, session_id=sid, agent_id="implementer-1", run_id=run.id, role="implementer", task_id=task["id"]
            )
        props = frozenset({"task_id"})
        times = []
        for _ in range(N_CHECKS):
            t0 = time.perf_counter()
            async with runtime.db.read() as r:
                await capabilities.check_call(r, root, cap.id, "task.get", {}, props)
            times.append(time.perf_counter() - t0)
        rows += _row("check_call (all per-call checks)", times, "one aiosqlite snapshot read (joined)")
        sock = tmp / "s.sock"
        endpoint = SessionEndpoint(runtime, cap.id, sock)
        await endpoint.start()
        try:
            async with httpx2.AsyncClient(
                transport=httpx2.AsyncHTTPTransport(uds=str(sock)), headers={"Authorization": f"Bearer {token}"}
            ) as http:
                async with Client(streamable_http_client("http://localhost/mcp", http_client=http), mode="legacy") as c:
                    await c.session.call_tool("task_get", {})
                    times = []
                    for _ in range(N_CALLS):
                        t0 = time.perf_counter()
                        await c.session.call_tool("task_get", {})
                        times.append(time.perf_counter() - t0)
            rows += _row("session tools/call task.get (SDK client, UDS)", times, "includes checks + dispatch")
        finally:
            await endpoint.close()
    finally:
        await runtime.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


_TMP: tuple[Path, Path] = (Path(), Path())


def run() -> list[dict[str, Any]]:
    global _TMP
    from roundtable.scaffold import init_project

    tmp = Path(tempfile.mkdtemp(prefix="rt-bench-"))
    root = tmp / "p"
    root.mkdir()
    init_project(root)  # runs its own event loop
    _TMP = (tmp, root)
    return asyncio.run(_run())


if __name__ == "__main__":
    for row in run():
        print(row)
