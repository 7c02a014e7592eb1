"""A webhook receiver for tests: a real HTTP/1.1 server on an ephemeral loopback port that records
every POST (path and JSON body), answers 200 — or, when `hang` is set, reads the request and
never answers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Received:
    path: str
    body: Any
    at: float


@dataclass
class Listener:
    hang: bool = False
    status: int = 200
    received: list[Received] = field(default_factory=list)
    connections: int = 0
    _server: asyncio.Server | None = None
    _held: list[asyncio.StreamWriter] = field(default_factory=list)

    async def __aenter__(self) -> Listener:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._held:
            writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                _method, path, _version = line.decode().split(" ", 2)
                length = 0
                while True:
                    header = await reader.readline()
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = header.decode().partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                raw = await reader.readexactly(length) if length else b""
                self.received.append(Received(path, json.loads(raw or b"null"), time.monotonic()))
                if self.hang:
                    self._held.append(writer)
                    await asyncio.Event().wait()  # never answers
                writer.write(
                    f"HTTP/1.1 {self.status} X\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{{}}".encode()
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return
        finally:
            if not self.hang:
                writer.close()

    async def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.received)} webhook POST(s) after {timeout}s, wanted {count}")
            await asyncio.sleep(0.02)
        return self.received
