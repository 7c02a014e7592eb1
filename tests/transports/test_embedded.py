"""The embedded-uvicorn helper both HTTP servers use: start, listening, failures, stop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from roundtable.server.embedded import Embedded, EmbeddedStartError

pytestmark = pytest.mark.anyio


async def _hello(request: Request) -> Response:
    return PlainTextResponse("hello")


async def _forever(request: Request) -> Response:
    async def body() -> AsyncIterator[bytes]:
        yield b"start\n"
        await asyncio.sleep(3600)

    return StreamingResponse(body(), media_type="text/plain")


def _bound() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    return sock


def _config(app: Any, **kwargs: Any) -> uvicorn.Config:
    return uvicorn.Config(app, lifespan="on", log_level="critical", access_log=False, **kwargs)


APP = Starlette(routes=[Route("/", _hello), Route("/forever", _forever)])


async def test_start_serves_at_once_and_stop_closes() -> None:
    sock = _bound()
    port = sock.getsockname()[1]
    server = Embedded(_config(APP, timeout_graceful_shutdown=1), name="test-embedded")
    await server.start([sock], timeout=10)
    assert server.task is not None and not server.task.done()
    async with httpx2.AsyncClient() as http:
        assert (await http.get(f"http://127.0.0.1:{port}/")).text == "hello"  # listening on return
    await server.stop(5)
    assert server.task.done()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    await server.stop(5)  # idempotent


async def test_a_failing_application_start_is_an_error_not_an_exit() -> None:
    @contextlib.asynccontextmanager
    async def broken(app: Any) -> AsyncIterator[None]:
        raise ValueError("no database")
        yield

    sock = _bound()
    server = Embedded(_config(Starlette(lifespan=broken)), name="test-broken")
    with pytest.raises(EmbeddedStartError) as info:
        await server.start([sock], timeout=10)
    assert (info.value.stage, info.value.reason) == ("serve", "RuntimeError")
    assert sock.fileno() == -1  # closed: nothing keeps the port


async def test_a_key_pair_that_does_not_load_fails_before_serving(tmp_path: Path) -> None:
    (tmp_path / "cert.pem").write_text("not a certificate\n")
    (tmp_path / "key.pem").write_text("not a key\n")
    sock = _bound()
    config = _config(APP, ssl_certfile=str(tmp_path / "cert.pem"), ssl_keyfile=str(tmp_path / "key.pem"))
    server = Embedded(config, name="test-tls")
    with pytest.raises(EmbeddedStartError) as info:
        await server.start([sock])
    assert info.value.stage == "load" and "not a" not in str(info.value)  # the type, never the text
    assert server.task is None and sock.fileno() == -1


async def test_stop_is_bounded_by_its_timeout_with_a_request_that_never_ends() -> None:
    sock = _bound()
    port = sock.getsockname()[1]
    server = Embedded(_config(APP, timeout_graceful_shutdown=30), name="test-stuck")
    await server.start([sock], timeout=10)
    async with httpx2.AsyncClient(timeout=None) as http, http.stream("GET", f"http://127.0.0.1:{port}/forever") as r:
        assert await r.aiter_bytes().__anext__() == b"start\n"
        started = time.monotonic()
        await server.stop(0.5)
        assert time.monotonic() - started < 5  # not uvicorn's 30 s grace
    assert server.task is not None and server.task.done()
