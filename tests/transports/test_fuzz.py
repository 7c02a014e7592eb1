"""Fuzzing the socket framing and the HTTP endpoint: the server answers or closes cleanly,
keeps serving other clients, and the database is unchanged.

The owner runs on its own loop in a background thread so hypothesis can drive it with plain
blocking clients.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable.owner import Owner
from roundtable.scaffold import init_project
from tests.helpers import stored_auth

from .conftest import make_registry

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class Background:
    """An owner on a private event loop in a daemon thread."""

    def __init__(self, root: Path, sock: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.owner = Owner(root, http_address="127.0.0.1:0", socket_path=sock, chair=False)
        self._stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(30)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        async with self.owner:
            self.owner.runtime.registry = make_registry()
            self.ready.set()
            await self._stop.wait()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def events(self) -> int:
        async def count() -> int:
            async with self.owner.runtime.db.read() as r:
                return int(await r.scalar("SELECT COUNT(*) FROM events"))

        return int(self.run(count()))

    def close(self) -> None:
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(30)


@pytest.fixture(scope="module")
def bg() -> Iterator[Background]:
    tmp = Path(tempfile.mkdtemp(prefix="rtf", dir="/tmp"))
    root = tmp / "p"
    root.mkdir()
    init_project(root)
    server = Background(root, tmp / "s.sock")
    try:
        yield server
    finally:
        server.close()
        shutil.rmtree(tmp, ignore_errors=True)


def send_raw(path: Path, data: bytes, *, eof: bool = True) -> bytes:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(15)
    try:
        s.connect(str(path))
        try:
            s.sendall(data)
            if eof:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        out = bytearray()
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:
            pass
        return bytes(out)
    finally:
        s.close()


def still_serving(bg: Background) -> None:
    got = send_raw(bg.owner.socket_path, b'{"tool":"test.echo","args":{"n":1}}\n')
    assert json.loads(got)["result"]["args"] == {"n": 1}


def check_reply(data: bytes) -> None:
    """Nothing, or exactly one JSON line with `ok` false (writes never succeed in these tests)."""
    if not data:
        return
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    body = json.loads(data)
    assert set(body) <= {"ok", "result", "error"} and isinstance(body["ok"], bool)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@FUZZ
@given(data=st.binary(max_size=2048), eof=st.booleans())
def test_socket_random_bytes(bg: Background, data: bytes, eof: bool) -> None:
    before = bg.events()
    # Without EOF the line must end somewhere, or the read deadline would make this slow.
    payload = data if eof else data + b"\n"
    check_reply(send_raw(bg.owner.socket_path, payload, eof=eof))
    assert bg.events() == before


@FUZZ
@given(envelope=st.dictionaries(st.sampled_from(["tool", "TOOL", "args", "Args", "x"]), json_values, max_size=4))
def test_socket_random_envelopes(bg: Background, envelope: dict[str, Any]) -> None:
    before = bg.events()
    line = json.dumps(envelope).encode()
    if b"test.write" in line or b"test_write" in line:
        return
    check_reply(send_raw(bg.owner.socket_path, line + b"\n"))
    assert bg.events() == before


@pytest.mark.parametrize(
    "payload",
    [
        b"[" * 100_000 + b"]" * 100_000 + b"\n",
        b'{"tool":"test.echo","args":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}\n",
        b"\xff\xfe\xfd\n",
        b'{"tool":"test.echo"}' + b" " * 3 + b"garbage\n",
        b"x" * (2 * 1024 * 1024),
    ],
)
def test_socket_hostile_inputs(bg: Background, payload: bytes) -> None:
    before = bg.events()
    check_reply(send_raw(bg.owner.socket_path, payload))
    still_serving(bg)
    assert bg.events() == before


def test_socket_half_open_connections_do_not_block_others(bg: Background) -> None:
    idle = []
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(bg.owner.socket_path))
        s.sendall(b'{"tool":')
        idle.append(s)
    try:
        still_serving(bg)
    finally:
        for s in idle:
            s.close()


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@settings(FUZZ, max_examples=40)
@given(
    body=st.one_of(
        st.binary(max_size=1024),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.fixed_dictionaries(
            {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": json_values, "method": st.text(max_size=20)},
            optional={"params": json_values},
        ).map(lambda v: json.dumps(v).encode()),
    ),
    content_type=st.sampled_from(["application/json", "text/plain", "", "application/json; charset=utf-8"]),
    origin=st.sampled_from([None, "http://evil.example", "null"]),
)
def test_http_bad_bodies(bg: Background, body: bytes, content_type: str, origin: str | None) -> None:
    before = bg.events()
    headers = {**HEADERS, **stored_auth(bg.owner.root), "content-type": content_type}
    if origin:
        headers["origin"] = origin
    with httpx2.Client(timeout=15) as http:
        resp = http.post(bg.owner.http_url, content=body, headers=headers)
        assert resp.status_code < 500 or resp.status_code == 503
        assert "Traceback" not in resp.text
        assert http.get(bg.owner.http_url.replace("/mcp", "/healthz")).status_code == 200
    assert bg.events() == before


def test_http_bad_host_oversized_and_still_serving(bg: Background) -> None:
    with httpx2.Client(timeout=15, headers={**HEADERS, **stored_auth(bg.owner.root)}) as http:
        assert http.post(bg.owner.http_url, content=b"{}", headers={"host": "evil.example:80"}).status_code == 421
        huge = b"[" + b"1," * (3 * 1024 * 1024) + b"1]"
        assert http.post(bg.owner.http_url, content=huge).status_code == 413
    still_serving(bg)
