"""HTTP/1.1 on one accepted connection of a session's socket, with h11 doing the parsing.

The gateway serves its own small HTTP/1.1 rather than an ASGI server because it must take a
connection over after `CONNECT` (a tunnel relays bytes, not requests) and pass a streamed answer
on chunk by chunk without an application framework between: h11 parses and frames, this module
moves the bytes. A request's head is bounded (`MAX_HEAD`) and its body read whole up to a bound
(`MAX_BODY`, a retried model request is sent again), an idle connection is closed after
`IDLE_TIMEOUT`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import h11

MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
READ_SIZE = 64 * 1024
IDLE_TIMEOUT = 600.0


class PeerGone(Exception):
    """The client closed the connection or broke the protocol."""


class TooLarge(Exception):
    """The request's body is larger than `MAX_BODY`."""


@dataclass
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]  # names lower-cased
    body: bytes

    def header(self, name: str) -> str:
        for key, value in self.headers:
            if key == name:
                return value
        return ""


class Peer:
    """One client connection: read requests, write answers (whole or streamed)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)

    async def _event(self, timeout: float | None = IDLE_TIMEOUT) -> h11.Event | type[h11.PAUSED]:
        while True:
            try:
                event = self.conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise PeerGone(str(exc)) from None
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]
            try:
                data = await asyncio.wait_for(self.reader.read(READ_SIZE), timeout)
            except (TimeoutError, ConnectionError) as exc:
                raise PeerGone(type(exc).__name__) from None
            self.conn.receive_data(data)

    async def request(self) -> Request | None:
        """The next request, body included; None when the client is done with the connection."""
        try:
            event = await self._event()
        except PeerGone:
            return None
        if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None
        if not isinstance(event, h11.Request):
            return None
        head = Request(
            event.method.decode("ascii", "replace").upper(),
            event.target.decode("ascii", "replace"),
            [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers],
            b"",
        )
        if head.method == "CONNECT":
            return head  # no body: what follows is the tunnel's
        body = bytearray()
        while True:
            part = await self._event()
            if isinstance(part, h11.Data):
                body += part.data
                if len(body) > MAX_BODY:
                    raise TooLarge()
            elif isinstance(part, h11.EndOfMessage):
                break
            else:
                raise PeerGone("the request ended early")
        head.body = bytes(body)
        return head

    async def respond(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        """A whole answer."""
        await self.start(status, [*headers, ("content-length", str(len(body)))])
        if body:
            await self.send(body)
        await self.end()

    async def start(self, status: int, headers: list[tuple[str, str]]) -> None:
        self._write(h11.Response(status_code=status, headers=headers))
        await self._drain()

    async def send(self, data: bytes) -> None:
        self._write(h11.Data(data=data))
        await self._drain()

    async def end(self) -> None:
        self._write(h11.EndOfMessage())
        await self._drain()

    def _write(self, event: h11.Event) -> None:
        try:
            out = self.conn.send(event)
        except h11.LocalProtocolError as exc:
            raise PeerGone(str(exc)) from None
        if out:
            self.writer.write(out)

    async def _drain(self) -> None:
        try:
            await self.writer.drain()
        except ConnectionError as exc:
            raise PeerGone(type(exc).__name__) from None

    def next_cycle(self) -> bool:
        """Ready for the next request on this connection (else it must close)."""
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
            return True
        return False

    @property
    def answered(self) -> bool:
        """An answer's head has been written."""
        return self.conn.our_state is not h11.SEND_RESPONSE

    def tunnel_leftover(self) -> bytes:
        """Bytes the client sent after its CONNECT head (the tunnel's first)."""
        return bytes(self.conn.trailing_data[0])

    async def close(self) -> None:
        self.writer.close()
        try:
            await asyncio.wait_for(self.writer.wait_closed(), 2)
        except (TimeoutError, ConnectionError, OSError):
            pass
