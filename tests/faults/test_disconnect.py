"""Clients that go away mid-response: on the legacy socket (close before reading, read a little
then reset the connection) and on Streamable HTTP (a streamed reply abandoned after a few
bytes; a request whose body never completes). The owner keeps serving everyone else, and a
write sent by a vanishing client is committed exactly once or not at all."""

from __future__ import annotations

import asyncio
import shutil
import socket
import struct
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from bench.ownerproc import HttpClient, SocketClient
from roundtable.owner import Owner
from tests.helpers import stored_auth

pytestmark = pytest.mark.anyio

TASKS = 3000


@pytest.fixture
async def owner(project: Path) -> AsyncIterator[Owner]:
    sockdir = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    try:
        async with Owner(project, http_address="127.0.0.1:0", socket_path=sockdir / "rt.sock", chair=False) as o:
            async with o.runtime.db.write() as tx:
                for i in range(TASKS):  # a task list of about a megabyte
                    await tx.execute(
                        "INSERT INTO tasks (id, title, body_md) VALUES (?, ?, ?)", (f"T-{i:05d}", f"t{i}", "b" * 200)
                    )
            yield o
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


async def _healthy(o: Owner) -> None:
    sock, http = SocketClient(o.socket_path or ""), HttpClient(o.http_url, stored_auth(o.root))
    await http.open()
    try:
        for client in (sock, http):
            out = await client.call("task.get", {"task_id": "T-00007"})
            assert out["task"]["title"] == "t7"
    finally:
        await http.close()


async def _connections_done(o: Owner, timeout: float = 20.0) -> None:
    """Wait until the socket server has finished with every connection (answered, or dropped).
    Call it after a later connection was answered: connections are accepted in order, so every
    earlier one is then counted."""
    deadline = asyncio.get_running_loop().time() + timeout
    while o.socket._connections:
        assert asyncio.get_running_loop().time() < deadline, f"{o.socket._connections} connection(s) still open"
        await asyncio.sleep(0.01)


async def _socket_abandon(path: str, mode: str) -> None:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b'{"tool":"task.list","args":{}}\n')
    await writer.drain()
    if mode == "read-some":
        await reader.read(100)
    if mode in ("read-some", "reset"):
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


async def test_socket_clients_that_vanish(owner: Owner) -> None:
    path = str(owner.socket_path)
    for _ in range(2):
        await asyncio.gather(*(_socket_abandon(path, m) for m in ("close", "read-some", "reset") * 3), _healthy(owner))
    await _healthy(owner)
    await _connections_done(owner)
    await _healthy(owner)


async def test_socket_write_from_a_vanishing_client_is_committed_at_most_once(owner: Owner) -> None:
    _reader, writer = await asyncio.open_unix_connection(str(owner.socket_path))
    writer.write(b'{"tool":"task.create","args":{"title":"ghost","body_md":"b"}}\n')
    await writer.drain()
    writer.close()
    await _healthy(owner)
    await _connections_done(owner)  # the server is done with it: the call ran whole, or not at all
    async with owner.runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM tasks WHERE title = 'ghost'") in (0, 1)


async def test_http_clients_that_vanish(owner: Owner) -> None:
    client = HttpClient(owner.http_url, stored_auth(owner.root))
    await client.open()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "task_list", "arguments": {}}}
    try:
        for _ in range(5):
            async with client.http.stream("POST", owner.http_url, json=body, headers=client._headers()) as resp:
                async for _chunk in resp.aiter_bytes(64):
                    break  # abandon the reply after the first bytes
        # A request whose body never arrives in full, then the connection drops.
        host, port = owner.http_address.rsplit(":", 1)
        for _ in range(5):
            _r, w = await asyncio.open_connection(host, int(port))
            w.write(
                b"POST /mcp HTTP/1.1\r\nHost: " + owner.http_address.encode() + b"\r\n"
                b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                b'Content-Length: 5000\r\n\r\n{"jsonrpc":'
            )
            await w.drain()
            w.close()
        # The abandoning session itself still works, and so does everyone else.
        out = await client.call("task.get", {"task_id": "T-00001"})
        assert out["task"]["title"] == "t1"
    finally:
        await client.close()
    await _healthy(owner)
    async with httpx2.AsyncClient() as h:
        health = await h.get(owner.http_url.replace("/mcp", "/healthz"))
        assert health.status_code == 200
