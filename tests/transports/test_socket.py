"""The legacy socket: every framing rule of the seed, the hardening list, start-up and drain."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from roundtable.errors import RoundtableError
from roundtable.owner import Owner
from roundtable.server.socket import SocketError, SocketServer, decode_request, peer_uid
from roundtable.server.socket_client import SocketClientError, call_socket
from tests.helpers import eventually

from .conftest import event_count, make_registry, raw_socket


def _true(predicate: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return predicate()

    return check


pytestmark = pytest.mark.anyio


def reply(data: bytes) -> dict:
    assert data.endswith(b"\n") and data.count(b"\n") == 1, data
    return json.loads(data)


async def test_newline_terminated_call(owner: Owner) -> None:
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.echo","args":{"text":"hi"}}\nignored'))
    assert got == {
        "ok": True,
        "result": {"args": {"text": "hi"}, "kind": "operator", "transport": "socket", "agent_id": ""},
    }


async def test_eof_terminated_request_and_whitespace_trimmed(owner: Owner) -> None:
    # A leading newline ends the first line, which is then empty: no reply at all.
    assert await raw_socket(owner.socket_path, b' \t\r\n{"tool":"test_echo"} \t', eof=True) == b""
    data = await raw_socket(owner.socket_path, b' \t{"tool":"test_echo"} \t\r', eof=True)
    assert reply(data)["result"]["args"] == {}


async def test_empty_line_closes_without_reply(owner: Owner) -> None:
    assert await raw_socket(owner.socket_path, b"   \r\n") == b""
    assert await raw_socket(owner.socket_path, b"", eof=True) == b""


async def test_only_first_line_is_used(owner: Owner) -> None:
    data = await raw_socket(
        owner.socket_path, b'{"tool":"test.write","args":{"n":1}}\n{"tool":"test.write","args":{"n":2}}\n'
    )
    assert reply(data) == {"ok": True, "result": {"n": 1}}
    assert await event_count(owner) == 1


async def test_trailing_data_is_an_error(owner: Owner) -> None:
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.write","args":{"n":1}} {}\n'))
    assert got["ok"] is False and "invalid request" in got["error"]
    assert await event_count(owner) == 0


async def test_null_request_and_null_args(owner: Owner) -> None:
    assert reply(await raw_socket(owner.socket_path, b"null\n")) == {"ok": False, "error": "tool not implemented: "}
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.echo","args":null}\n'))
    assert got["result"]["args"] == {}
    got = reply(await raw_socket(owner.socket_path, b'{"tool":null}\n'))
    assert got == {"ok": False, "error": "tool not implemented: "}


async def test_keys_case_insensitive_last_wins_unknown_ignored(owner: Owner) -> None:
    line = b'{"TOOL":"test.fail","Tool":"test.echo","ARGS":{"n":1},"extra":[1,2]}\n'
    got = reply(await raw_socket(owner.socket_path, line))
    assert got["ok"] is True and got["result"]["args"] == {"n": 1}
    assert decode_request(b'{"tool":"a","TOOL":"b","tool":"c"}') == ("c", {})


@pytest.mark.parametrize(
    "line",
    [
        b'{"tool":5}',
        b'{"tool":"test.echo","args":[1]}',
        b'{"tool":"test.echo","args":"x"}',
        b"[1,2]",
        b"7",
        b"{",
        b"\xff\xfe",
    ],
)
async def test_bad_envelopes_are_errors(owner: Owner, line: bytes) -> None:
    got = reply(await raw_socket(owner.socket_path, line + b"\n"))
    assert got["ok"] is False and got["error"].startswith("invalid request")


async def test_empty_result_and_errors_are_omitted_fields(owner: Owner) -> None:
    assert await raw_socket(owner.socket_path, b'{"tool":"test.empty"}\n') == b'{"ok":true}\n'
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.fail"}\n'))
    assert got == {"ok": False, "error": "refused: the thing is not allowed"}


async def test_exception_text_never_reaches_the_client(owner: Owner) -> None:
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.crash"}\n'))
    assert got["ok"] is False
    assert "secret" not in got["error"] and "internal error" in got["error"]


async def test_schema_validated_integers_exact_fractions_refused(owner: Owner) -> None:
    big = 2**60 + 1
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.echo","args":{"n":%d}}\n' % big))
    assert got["result"]["args"]["n"] == big
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.write","args":{"n":1.5}}\n'))
    assert got["ok"] is False and "n" in got["error"]
    got = reply(await raw_socket(owner.socket_path, b'{"tool":"test.echo","args":{"bogus":1}}\n'))
    assert "unknown argument bogus" in got["error"]
    assert await event_count(owner) == 0


async def test_request_too_large(project: Path, sockdir: Path) -> None:
    async with Owner(project, http=False, chair=False, socket_path=sockdir / "s.sock") as o:
        o.runtime.registry = make_registry()
        o.socket.max_request_bytes = 1000
        got = reply(
            await raw_socket(o.socket_path, b'{"tool":"test.echo","args":{"text":"' + b"x" * 300_000 + b'"}}\n')
        )
        assert got == {"ok": False, "error": "request too large"}
        # Exactly at the limit is fine.
        body = b'{"tool":"test.echo","args":{"text":"' + b"y" * 900 + b'"}}'
        assert reply(await raw_socket(o.socket_path, body + b"\n"))["ok"] is True


async def test_half_open_connection_hits_read_deadline_others_served(project: Path, sockdir: Path) -> None:
    async with Owner(project, http=False, chair=False, socket_path=sockdir / "s.sock") as o:
        o.runtime.registry = make_registry()
        o.socket.read_timeout = 0.3
        reader, writer = await asyncio.open_unix_connection(str(o.socket_path))
        writer.write(b'{"tool":"test.echo"')  # never finished
        await writer.drain()
        got = reply(await raw_socket(o.socket_path, b'{"tool":"test.echo"}\n'))
        assert got["ok"] is True
        assert await asyncio.wait_for(reader.read(), 3.0) == b""  # closed by the deadline, no reply
        writer.close()


async def test_connection_bound(project: Path, sockdir: Path) -> None:
    async with Owner(project, http=False, chair=False, socket_path=sockdir / "s.sock") as o:
        o.runtime.registry = make_registry()
        o.socket.max_connections = 2
        held = [await asyncio.open_unix_connection(str(o.socket_path)) for _ in range(2)]
        await eventually(_true(lambda: o.socket.connections == 2), what="both connections accepted")
        got = reply(await raw_socket(o.socket_path, b'{"tool":"test.echo"}\n'))
        assert got["ok"] is False and "too many connections" in got["error"]
        for _r, w in held:
            w.close()
        await eventually(_true(lambda: o.socket.connections == 0), what="the held connections closed")
        assert reply(await raw_socket(o.socket_path, b'{"tool":"test.echo"}\n'))["ok"] is True


async def test_permissions_and_peer_uid(owner: Owner) -> None:
    path = owner.socket_path
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(path.parent).st_mode) == 0o700
    a, b = socket.socketpair(socket.AF_UNIX)
    try:
        assert peer_uid(a) == os.geteuid()
    finally:
        a.close()
        b.close()


async def test_existing_directory_is_tightened(project: Path, sockdir: Path) -> None:
    d = sockdir / "loose"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    async with Owner(project, http=False, chair=False, socket_path=d / "s.sock"):
        assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700


async def test_a_shared_sticky_directory_is_left_alone(project: Path, sockdir: Path) -> None:
    """A socket straight in a /tmp-like directory (1777) must not tighten it: as root that
    would lock every other user out of /tmp. The socket itself is 0600."""
    shared = sockdir / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    async with Owner(project, http=False, chair=False, socket_path=shared / "s.sock"):
        assert stat.S_IMODE(os.lstat(shared).st_mode) == 0o1777
        assert stat.S_IMODE(os.lstat(shared / "s.sock").st_mode) == 0o600


async def test_start_refuses_non_socket_and_live_socket_removes_stale(project: Path, sockdir: Path, runtime) -> None:  # type: ignore[no-untyped-def]
    plain = sockdir / "plain"
    plain.write_text("precious")
    with pytest.raises(SocketError, match="refusing to replace non-socket"):
        await SocketServer(runtime, plain).start()
    assert plain.read_text() == "precious"

    stale = sockdir / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))
    s.close()  # bound, never listening: a stale socket file
    server = SocketServer(runtime, stale)
    await server.start()
    try:
        live = SocketServer(runtime, stale)
        with pytest.raises(SocketError, match="already active"):
            await live.start()
        assert stale.exists()
    finally:
        await server.close()
    assert not stale.exists()


async def test_drain_finishes_inflight_call(owner: Owner) -> None:
    reader, writer = await asyncio.open_unix_connection(str(owner.socket_path))
    writer.write(b'{"tool":"test.slow","args":{"seconds":0.3}}\n')
    await writer.drain()
    await eventually(_true(lambda: owner.socket.calls_in_flight == 1), what="the slow call in flight")
    idle_reader, idle_writer = await asyncio.open_unix_connection(str(owner.socket_path))
    await eventually(_true(lambda: owner.socket.connections == 2), what="the idle connection accepted")
    path = owner.socket_path
    await owner.socket.close()
    assert reply(await asyncio.wait_for(reader.read(), 3.0)) == {"ok": True, "result": {"slept": True}}
    assert await asyncio.wait_for(idle_reader.read(), 3.0) == b""  # idle connection dropped
    assert not path.exists()
    writer.close()
    idle_writer.close()


async def test_call_socket_client(owner: Owner, sockdir: Path) -> None:
    got = await asyncio.to_thread(call_socket, owner.socket_path, "test.echo", {"text": "é"})
    assert got == {
        "ok": True,
        "result": {"args": {"text": "é"}, "kind": "operator", "transport": "socket", "agent_id": ""},
    }
    with pytest.raises(SocketClientError, match="no owner is running"):
        call_socket(sockdir / "nothing.sock", "test.echo", {})
    dead = sockdir / "dead.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(dead))
    s.close()
    with pytest.raises(RoundtableError, match="no owner is listening"):
        call_socket(dead, "test.echo", None)
