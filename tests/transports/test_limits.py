"""HTTP limits before (and after) authentication: header and body deadlines, the connection cap
with eviction of idle connections, sessions per principal with LRU eviction and idle reaping,
and rate-limited logging. Real owners, raw sockets and httpx2."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from roundtable import credentials
from roundtable.owner import Owner
from roundtable.server import http as http_module
from roundtable.server.http import HttpLimits, RateLimitFilter
from tests.helpers import eventually

from .conftest import make_registry

pytestmark = pytest.mark.anyio
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def auth(root: Path) -> dict[str, str]:
    """The project's credential when the owner made one (authentication on by default)."""
    token = credentials.read_credential(root)
    return {"authorization": f"Bearer {token}"} if token else {}


@pytest.fixture
async def limited(project: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Owner]:
    limits = HttpLimits(
        max_connections=16,
        header_timeout=0.5,
        body_timeout=0.5,
        sessions_per_principal=3,
        session_idle_timeout=60.0,
    )
    monkeypatch.setattr(http_module, "DEFAULT_LIMITS", limits)
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as o:
        o.runtime.registry = make_registry()
        yield o


async def _open(owner: Owner, payload: bytes = b"") -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = owner.http_address.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    if payload:
        writer.write(payload)
        await writer.drain()
    return reader, writer


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> float:
    started = time.monotonic()
    await asyncio.wait_for(reader.read(), seconds)  # b"" (or a short answer) then EOF
    return time.monotonic() - started


async def test_slow_headers_are_cut_off(limited: Owner) -> None:
    reader, writer = await _open(limited, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    started = time.monotonic()
    closed_after = None
    for _ in range(30):  # a byte every 100 ms must not extend the deadline
        writer.write(b"a")
        try:
            if await asyncio.wait_for(reader.read(1), 0.1) == b"":
                closed_after = time.monotonic() - started
                break
        except TimeoutError:
            continue
    assert closed_after is not None and closed_after < 2.0
    assert limited.http.stats()["header_timeouts"] >= 1
    writer.close()


async def test_silent_connection_is_closed(limited: Owner) -> None:
    reader, writer = await _open(limited)
    assert await _closed_within(reader, 3.0) < 2.0
    writer.close()


async def test_slow_body_is_cut_off(limited: Owner) -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    reader, writer = await _open(limited, head + b'{"jsonrpc":')
    assert await _closed_within(reader, 3.0) < 2.5
    writer.close()


async def test_connection_cap_evicts_idle_connections(limited: Owner) -> None:
    held = [await _open(limited, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(60)]
    async with httpx2.AsyncClient(timeout=5) as client:
        started = time.monotonic()
        health = await client.get(limited.http_url.replace("/mcp", "/healthz"))
        assert health.status_code == 200 and time.monotonic() - started < 1.0
    stats = limited.http.stats()
    assert stats["max_connections"] == 16
    assert stats["peak"] <= 16 and stats["live"] <= 16
    assert stats["evicted"] >= 44
    for _reader, writer in held:
        writer.close()


async def test_connection_cap_refuses_when_every_connection_is_busy(limited: Owner) -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    busy = [await _open(limited, head) for _ in range(16)]  # each mid-body: in progress, never evicted

    async def all_in_progress() -> bool:
        return limited.http.stats()["in_progress"] == 16

    await eventually(all_in_progress, timeout=5, what="16 requests in progress")
    reader, writer = await _open(limited)
    answer = await asyncio.wait_for(reader.read(), 3)
    assert answer.startswith(b"HTTP/1.1 503 ") and b"too many open connections" in answer
    assert limited.http.stats()["refused"] >= 1
    for _r, w in [*busy, (reader, writer)]:
        w.close()


async def test_sessions_per_principal_evict_the_least_recently_used(limited: Owner) -> None:
    url = limited.http_url
    async with httpx2.AsyncClient(headers={**HEADERS, **auth(limited.root)}, timeout=10) as client:
        ids = []
        for _ in range(5):
            resp = await client.post(url, json=INIT)
            assert resp.status_code == 200
            ids.append(resp.headers["mcp-session-id"])
        assert limited.http.sessions is not None
        assert limited.http.stats()["sessions"] == 3 and limited.http.sessions.evicted == 2
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        legacy = {"mcp-protocol-version": "2025-11-25"}
        assert (await client.post(url, json=ping, headers={**legacy, "mcp-session-id": ids[0]})).status_code == 404
        assert (await client.post(url, json=ping, headers={**legacy, "mcp-session-id": ids[4]})).status_code == 200


async def test_sessions_all_busy_refuse_a_new_one(limited: Owner) -> None:
    url = limited.http_url
    async with httpx2.AsyncClient(headers={**HEADERS, **auth(limited.root)}, timeout=10) as client:
        streams = []
        for _ in range(3):
            resp = await client.post(url, json=INIT)
            sid = resp.headers["mcp-session-id"]
            h = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=h)
            get = client.stream("GET", url, headers={**h, "accept": "text/event-stream"})
            resp = await get.__aenter__()
            assert resp.status_code == 200
            streams.append(get)
        refused = await client.post(url, json=INIT)
        assert refused.status_code == 503 and "too many open MCP sessions" in refused.text
        for get in streams:
            await get.__aexit__(None, None, None)


async def test_idle_sessions_are_reaped(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_module, "DEFAULT_LIMITS", HttpLimits(session_idle_timeout=0.3))
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        async with httpx2.AsyncClient(headers={**HEADERS, **auth(project)}, timeout=10) as client:
            sid = (await client.post(owner.http_url, json=INIT)).headers["mcp-session-id"]
            assert owner.http.stats()["sessions"] == 1
            for _ in range(40):
                if owner.http.stats()["sessions"] == 0:
                    break
                await asyncio.sleep(0.05)
            assert owner.http.stats()["sessions"] == 0
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            h = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
            assert (await client.post(owner.http_url, json=ping, headers=h)).status_code == 404


def test_rate_limit_filter_writes_one_line_per_kind_per_interval() -> None:
    now = [0.0]
    flt = RateLimitFilter(interval=10.0, clock=lambda: now[0])
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(flt)
    logger = logging.getLogger("roundtable.test.flood")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(5000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                logger.exception("socket.accept() out of system resource (%d)", i)
            logger.warning("Invalid HTTP request received.")
        assert out.getvalue().count("socket.accept()") == 1
        assert out.getvalue().count("Invalid HTTP request received.") == 1
        assert out.getvalue().count("Traceback") == 1
        now[0] = 11.0
        logger.warning("Invalid HTTP request received.")
        assert "Invalid HTTP request received. (4999 more like this in the last 11 s)" in out.getvalue()
        assert len(out.getvalue()) < 2000
    finally:
        logger.removeHandler(handler)


async def test_a_session_belongs_to_the_principal_that_opened_it(limited: Owner) -> None:
    from tests.helpers import auth_headers

    agent = await auth_headers(limited.runtime, agent_id="implementer-1")
    project = await auth_headers(limited.runtime)
    url = limited.http_url
    async with httpx2.AsyncClient(headers=HEADERS, timeout=10) as client:
        sid = (await client.post(url, json=INIT, headers=agent)).headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        h = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        stolen = await client.post(url, json=ping, headers={**h, **project})
        assert stolen.status_code == 404 and "Session not found" in stolen.text
        assert (await client.post(url, json=ping, headers={**h, **agent})).status_code == 200
        # Each principal has its own quota: three sessions of the project credential evict none of the agent's.
        for _ in range(3):
            assert (await client.post(url, json=INIT, headers=project)).status_code == 200
        assert (await client.post(url, json=ping, headers={**h, **agent})).status_code == 200


def test_rate_limit_filter_judges_a_record_once() -> None:
    """On a logger and on its handler (as the owner installs it) a record passes or fails once."""
    flt = RateLimitFilter(interval=10.0)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(flt)
    logger = logging.getLogger("roundtable.test.twice")
    logger.addFilter(flt)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for _ in range(100):
            logger.warning("same thing")
        assert out.getvalue().count("same thing") == 1
    finally:
        logger.removeHandler(handler)
        logger.removeFilter(flt)
