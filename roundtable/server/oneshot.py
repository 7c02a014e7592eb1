"""One MCP request per HTTP POST: the wire of `roundtable agent` (and of anything that makes one call).

The 2026-07-28 era of Streamable HTTP needs no `initialize` and no session: every POST carries the
protocol version, the client's capabilities and its name in `params._meta`, and names its method
(and tool) in the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. So a command that
lists the tools and calls one makes two POSTs and keeps no state. The endpoint is a session's
private Unix socket (`ROUNDTABLE_MCP_SOCKET`, Streamable HTTP over it) or an HTTP URL on the
loopback; the credential is a bearer token. Standard library only (`http.client`), so a command
an agent runs many times a session starts in a few tens of milliseconds: no MCP SDK, no runtime.

The reply is JSON or server-sent events (the server may stream); both are read here, and the
JSON-RPC response with this request's id is returned. A transport failure raises `Unreachable`,
a JSON-RPC error `Refused`; a tool's own refusal is a result with `isError` (the caller's to show).
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import urllib.parse
from dataclasses import dataclass
from typing import Any

PROTOCOL = "2026-07-28"
_META_PREFIX = "io.modelcontextprotocol/"
TIMEOUT = 600.0  # seconds: a test run or a long read may take minutes; a lost owner fails at once


class Unreachable(Exception):
    """The endpoint could not be reached or answered something that is not MCP."""


class Refused(Exception):
    """The server answered the request with a JSON-RPC error (its message is the text)."""


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket (a session's private endpoint)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


@dataclass(frozen=True)
class Endpoint:
    """Where the MCP server is: a Unix socket (`socket_path`) or an `http://` URL, and the token."""

    url: str = "http://localhost/mcp"
    socket_path: str = ""
    token: str = ""

    def where(self) -> str:
        return f"the session socket {self.socket_path}" if self.socket_path else self.url

    def _open(self) -> tuple[http.client.HTTPConnection, str]:
        parts = urllib.parse.urlsplit(self.url)
        target = parts.path or "/mcp"
        if parts.query:
            target += "?" + parts.query
        if self.socket_path:
            return _UnixConnection(self.socket_path, TIMEOUT), target
        if parts.scheme != "http" or not parts.hostname or parts.username or parts.password:
            raise Unreachable(f"{self.url}: not an http:// URL of this machine")
        if self.token and not is_loopback(parts.hostname):
            # As the stdio bridge: a bearer credential never crosses a network in the clear.
            raise Unreachable(
                f"{parts.hostname} is not this machine: the credential is sent only to a loopback address"
            )
        return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=TIMEOUT), target

    def request(
        self, method: str, params: dict[str, Any], name: str = "", meta: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send one JSON-RPC request (`meta`: more of its `_meta`); its `result`."""
        meta = {
            **(meta or {}),
            f"{_META_PREFIX}protocolVersion": PROTOCOL,
            f"{_META_PREFIX}clientCapabilities": {},
            f"{_META_PREFIX}clientInfo": {"name": "roundtable-agent", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}})
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL,
            "mcp-method": method,
        }
        if name:
            headers["mcp-name"] = name
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        try:
            connection, target = self._open()
            try:
                connection.request("POST", target, body.encode("utf-8"), headers)
                response = connection.getresponse()
                payload = response.read()
            finally:
                connection.close()
        except (OSError, http.client.HTTPException) as exc:
            raise Unreachable(f"{self.where()}: {exc}") from None
        if response.status == 401:
            raise Unreachable(f"{self.where()} refused the credential (401): the session's token is expired or revoked")
        message = _response(payload, response.getheader("content-type") or "")
        if message is None:
            raise Unreachable(f"{self.where()} answered HTTP {response.status} with no MCP response")
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            raise Refused(str(error.get("message") or "error"))
        result = message.get("result")
        if not isinstance(result, dict):
            raise Unreachable(f"{self.where()} answered a response with no result")
        return result

    def list_tools(self, meta: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every tool this credential is listed, pages followed (`meta`: the request's own `_meta`)."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = self.request("tools/list", {"cursor": cursor} if cursor else {}, meta=meta)
            tools += [tool for tool in page.get("tools", []) if isinstance(tool, dict)]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """`tools/call`: the result (`content`, `isError`, maybe `structuredContent`)."""
        return self.request("tools/call", {"name": name, "arguments": arguments}, name=name)


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine (`localhost` or a loopback address)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _response(payload: bytes, content_type: str) -> dict[str, Any] | None:
    """The JSON-RPC response in a reply body: the JSON itself, or the SSE event carrying it."""
    text = payload.decode("utf-8", "replace")
    if content_type.startswith("text/event-stream"):
        for event in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
            data = "\n".join(line[5:].removeprefix(" ") for line in event.split("\n") if line.startswith("data:"))
            message = _json(data)
            if message is not None and ("result" in message or "error" in message):
                return message
        return None
    return _json(text)


def _json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
