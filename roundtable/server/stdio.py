"""The stdio bridge: NDJSON MCP on stdin/stdout ↔ Streamable HTTP on the running owner.

A pure message pump (system.md §6.4, "Ours"): every JSON-RPC message from the harness —
its own `initialize`, notifications and cancellations included — is POSTed to `/mcp`
unchanged; JSON or SSE replies go back to stdout one message per line; the GET stream relays
server-initiated messages. The bridge carries `Mcp-Session-Id` and `MCP-Protocol-Version`,
re-initialises transparently when the owner restarts (404 on the old session), backs off while
the owner is down, and DELETEs the session on stdin EOF. It never imports the MCP SDK (that
import alone costs ~0.9 s), never opens the database and writes nothing but protocol frames to
stdout; diagnostics go to stderr and never contain the token.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

# httpx imports its command-line entry point (rich, click, pygments) unless told not to;
# the bridge must start fast, so that optional module is blocked before the first import.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
import httpx

PREFIX = "roundtable mcp stdio: "
UNAVAILABLE = "coordinator endpoint unavailable"
PROTOCOL_HEADER = "mcp-protocol-version"
SESSION_HEADER = "mcp-session-id"
RETRY_WINDOW = 30.0


class BridgeError(Exception):
    """A start-up problem; the message is the one-line reason printed to stderr."""


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, token: str, uds: str = "") -> str:
    """Validate the endpoint (system.md §6.4.1 step 3); returns it unchanged."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        raise BridgeError("MCP HTTP endpoint must be an http(s) URL") from None
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        raise BridgeError("MCP HTTP endpoint must be an http(s) URL")
    if parts.query or parts.fragment:
        raise BridgeError("MCP HTTP endpoint must be an http(s) URL")
    if token and not uds and parts.scheme == "http" and not _is_loopback(host):
        raise BridgeError("bearer authentication requires HTTPS except for loopback endpoints")
    return url


def _health_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/healthz", "", ""))


async def _sse_events(response: httpx.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event (multi-line data joined with newlines)."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
    if data:
        yield "\n".join(data)


class StdinLines:
    """Lines of a file descriptor read by a daemon thread (pipes, files and ttys alike).

    Raw `os.read` on the descriptor, not the buffered `sys.stdin`: a daemon thread blocked
    inside a buffered reader aborts the interpreter at exit.
    """

    def __init__(self, fd: int = 0) -> None:
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:
            pending = b""
            try:
                while True:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        loop.call_soon_threadsafe(self._queue.put_nowait, line)
                if pending:
                    loop.call_soon_threadsafe(self._queue.put_nowait, pending)
            except (OSError, RuntimeError):
                pass
            finally:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._queue.put_nowait, None)

        threading.Thread(target=pump, name="stdin", daemon=True).start()

    async def get(self) -> bytes | None:
        return await self._queue.get()


class Bridge:
    """One harness connection relayed to one owner endpoint."""

    def __init__(
        self,
        url: str,
        *,
        token: str = "",
        uds: str = "",
        out: IO[bytes] | None = None,
        err: Callable[[str], None] | None = None,
        connect_wait: float = 1.0,
    ) -> None:
        self.url = check_url(url, token=token, uds=uds)
        self._out = out if out is not None else sys.stdout.buffer
        self._err = err or (lambda text: print(PREFIX + text, file=sys.stderr, flush=True))
        self._connect_wait = connect_wait
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        # TCP_NODELAY: without it a request's header and body writes wait on delayed ACKs (~40 ms).
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        # Plain http needs no CA bundle; loading one costs tens of milliseconds at start-up.
        verify = urlsplit(url).scheme == "https"
        transport = httpx.AsyncHTTPTransport(uds=uds or None, verify=verify, socket_options=None if uds else nodelay)
        self.client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(connect=5.0, read=None, write=30.0, pool=None),
            follow_redirects=False,
            transport=transport,
            verify=verify,
            trust_env=False,
        )
        self.session_id = ""
        self.protocol_version = ""
        self._init_message: bytes | None = None
        self._init_id: Any = None
        self._initialized_sent = False
        self._reinit_lock = asyncio.Lock()
        self._reinits = 0
        self._get_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    # --- output -----------------------------------------------------------------------------

    def _write(self, text: str | bytes) -> None:
        data = text.encode("utf-8") if isinstance(text, str) else text
        data = data.strip()
        if b"\n" in data or b"\r" in data:
            data = json.dumps(json.loads(data), ensure_ascii=False, separators=(",", ":")).encode()
        self._out.write(data + b"\n")
        self._out.flush()

    def _error_reply(self, msg_id: Any, code: int, message: str) -> None:
        if msg_id is None:
            return
        self._write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}))

    # --- upstream ---------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[PROTOCOL_HEADER] = self.protocol_version
        return headers

    async def probe(self) -> bool:
        """Is anything answering at the owner's address? Retries briefly while it starts."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._connect_wait
        delay = 0.05
        while True:
            try:
                await self.client.get(_health_url(self.url), timeout=2.0)
                return True
            except httpx.TransportError:
                if loop.time() + delay > deadline:
                    return False
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)

    async def _post(self, raw: bytes, *, capture: bool) -> tuple[int, list[str]]:
        """POST one message; returns (status, reply messages). Relays them unless capturing."""
        async with self.client.stream("POST", self.url, content=raw, headers=self._headers()) as resp:
            sid = resp.headers.get(SESSION_HEADER)
            if sid:
                self.session_id = sid
            kind = resp.headers.get("content-type", "")
            replies: list[str] = []
            if resp.status_code == 202:
                return 202, replies
            if kind.startswith("text/event-stream"):
                async for data in _sse_events(resp):
                    if capture:
                        replies.append(data)
                    else:
                        self._on_upstream(data)
                return resp.status_code, replies
            body = (await resp.aread()).decode("utf-8", "replace")
            return resp.status_code, [body]

    def _on_upstream(self, data: str) -> None:
        """Relay one upstream message, learning the protocol version from `initialize`."""
        if not data.strip():
            return
        if self._init_id is not None and not self.protocol_version and '"protocolVersion"' in data:
            with contextlib.suppress(ValueError, AttributeError):
                msg = json.loads(data)
                if msg.get("id") == self._init_id:
                    self.protocol_version = str(msg["result"]["protocolVersion"])
        self._write(data)

    async def forward(self, raw: bytes, msg: Any) -> None:
        """Send one harness message upstream and relay what comes back."""
        msg_id = msg.get("id") if isinstance(msg, dict) else None
        method = msg.get("method") if isinstance(msg, dict) else None
        is_init = method == "initialize" and msg_id is not None
        if is_init:
            self._init_message, self._init_id = raw, msg_id
            self.session_id, self.protocol_version = "", ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RETRY_WINDOW
        delay = 0.1
        retried_session = False
        while True:
            try:
                status, bodies = await self._post(raw, capture=False)
            except httpx.TransportError:
                if self._closing or loop.time() + delay > deadline:
                    self._error_reply(msg_id, -32603, UNAVAILABLE)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if status == 404 and self.session_id and not is_init and not retried_session:
                # The owner restarted and forgot the session: open a new one and resend.
                retried_session = True
                if await self._reinitialise():
                    continue
            break
        if status == 202:
            if method == "notifications/initialized":
                self._initialized_sent = True
                self._start_get_stream()
            return
        for body in bodies:
            self._relay_body(status, body, msg_id)

    def _relay_body(self, status: int, body: str, msg_id: Any) -> None:
        try:
            reply = json.loads(body) if body.strip() else None
        except ValueError:
            reply = None
        if isinstance(reply, dict | list) and reply:
            if isinstance(reply, dict) and "error" in reply and reply.get("id") in (None, "server-error"):
                if msg_id is None:
                    return
                reply["id"] = msg_id
            text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
            self._on_upstream(text)
            return
        if status >= 400:
            reason = "unauthorized" if status == 401 else f"coordinator answered HTTP {status}"
            self._error_reply(msg_id, -32603, reason)

    async def _reinitialise(self) -> bool:
        """Replay the harness's `initialize` (+ `initialized`) to get a fresh session."""
        if self._init_message is None:
            return False
        old = self.session_id
        async with self._reinit_lock:
            if self.session_id != old:
                return True  # another task already did it
            self._reinits += 1
            self.session_id, version = "", self.protocol_version
            self.protocol_version = ""
            try:
                init = json.loads(self._init_message)
                init["id"] = f"roundtable-bridge-reinit-{self._reinits}"
                status, replies = await self._post(json.dumps(init).encode(), capture=True)
                if status >= 400 or not self.session_id:
                    return False
                for data in replies:
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        version = json.loads(data)["result"]["protocolVersion"]
                self.protocol_version = version
                if self._initialized_sent:
                    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
                    await self._post(note, capture=True)
                    self._start_get_stream()
            except httpx.TransportError:
                return False
            self._err("owner restarted; reconnected with a new session")
            return True

    def _start_get_stream(self) -> None:
        if self._get_task is not None and not self._get_task.done():
            self._get_task.cancel()
        self._get_task = asyncio.create_task(self._get_stream(self.session_id))

    async def _get_stream(self, session: str) -> None:
        """Relay server-initiated messages; reconnect with back-off while the session lives."""
        delay = 0.1
        while not self._closing and self.session_id == session:
            try:
                headers = {**self._headers(), "accept": "text/event-stream"}
                async with self.client.stream("GET", self.url, headers=headers) as resp:
                    if resp.status_code != 200:
                        return  # 405: no stream offered; 404: the POST path re-initialises
                    delay = 0.1
                    async for data in _sse_events(resp):
                        self._on_upstream(data)
            except httpx.TransportError:
                pass
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    # --- main loop --------------------------------------------------------------------------

    async def run(self, lines: StdinLines) -> int:
        """Pump until stdin EOF (exit 0) or the owner is unreachable at start (exit 1)."""
        probe = asyncio.create_task(self.probe())
        try:
            while True:
                getter = asyncio.ensure_future(lines.get())
                if not probe.done():
                    await asyncio.wait({getter, probe}, return_when=asyncio.FIRST_COMPLETED)
                    if probe.done() and not probe.result():
                        getter.cancel()
                        self._err(UNAVAILABLE)
                        print("connect to Roundtable coordinator", file=sys.stderr, flush=True)
                        return 1
                line = await getter
                if line is None:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    self._write('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
                    continue
                if isinstance(msg, dict) and msg.get("method") in ("initialize", "notifications/initialized"):
                    await self.forward(line, msg)  # later messages need the session it creates
                    continue
                task = asyncio.create_task(self.forward(line, msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            return 0
        finally:
            probe.cancel()
            await self.aclose()

    async def aclose(self) -> None:
        self._closing = True
        if self._get_task is not None:
            self._get_task.cancel()
            with contextlib.suppress(BaseException):
                await self._get_task
        if self.session_id:
            with contextlib.suppress(httpx.HTTPError):
                await self.client.delete(self.url, headers=self._headers(), timeout=2.0)
        await self.client.aclose()


def main(url: str, *, token: str = "", uds: str = "") -> int:
    """Run the bridge on this process's stdin/stdout; returns the exit status."""
    try:
        bridge_args = check_url(url, token=token, uds=uds)
    except BridgeError as exc:
        print(PREFIX + str(exc), file=sys.stderr, flush=True)
        return 1

    async def go() -> int:
        bridge = Bridge(bridge_args, token=token, uds=uds)
        return await bridge.run(StdinLines(sys.stdin.fileno()))

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        return 0
