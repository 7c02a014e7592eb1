"""HTTP listener options and the pure-ASGI bearer guard in front of `/mcp`.

`http_options` validates the listener before anything binds (system.md §6.3.1): an address
that splits into host and port, TLS certificate and key together, and — off loopback — TLS
plus `ROUNDTABLE_MCP_TOKEN`. `BearerGuard` runs before the MCP app reads a body: with a token
configured (on every bind, loopback included) or with `mcp.require_tokens`, a missing or wrong
`Authorization: Bearer` gets 401; the comparison is constant-time and the token is never
echoed. It also decides who the caller is (DESIGN §4.12, §4.15) and counts in-flight POSTs so
shutdown can drain them.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from roundtable.config import Config
from roundtable.errors import ConfigError
from roundtable.tools.context import Caller

TOKEN_ENV = "ROUNDTABLE_MCP_TOKEN"
HTTP_CALLER = Caller("agent", "http")
CALLER_SCOPE_KEY = "roundtable.caller"


def is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_address(address: str) -> tuple[str, int]:
    """`host:port` / `[v6]:port` / `:port` → (host, port); ConfigError otherwise."""
    text = address.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1 :].startswith(":"):
            raise ConfigError(f"invalid MCP HTTP address: {address!r} (expected [host]:port)")
        host, port_text = text[1:end], text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            raise ConfigError(f"invalid MCP HTTP address: {address!r} (expected host:port)")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ConfigError(f"invalid MCP HTTP address: {address!r} (bad port)")
    return host, int(port_text)


@dataclass(frozen=True)
class HttpOptions:
    host: str
    port: int
    loopback: bool
    cert_file: str
    key_file: str
    token: str
    max_body_bytes: int
    tool_names: str
    require_tokens: bool

    @property
    def tls(self) -> bool:
        return bool(self.cert_file and self.key_file)

    def __repr__(self) -> str:  # never show the token
        return f"HttpOptions(host={self.host!r}, port={self.port}, tls={self.tls}, token={'set' if self.token else 'unset'})"


def http_options(root: Path, config: Config, *, address: str | None = None) -> HttpOptions:
    """Validated listener options (the token comes from the environment only)."""
    mcp = config.mcp
    host, port = split_address(address if address is not None else mcp.http_address)
    cert = mcp.tls_cert_file.strip()
    key = mcp.tls_key_file.strip()
    if bool(cert) != bool(key):
        raise ConfigError("MCP HTTP TLS certificate and key must be configured together")
    cert_path = str(_rooted(root, cert)) if cert else ""
    key_path = str(_rooted(root, key)) if key else ""
    token = os.environ.get(TOKEN_ENV, "")
    loopback = bool(host) and is_loopback_host(host)
    if not loopback and not (cert and key and token):
        raise ConfigError("non-loopback MCP HTTP requires TLS certificate/key and bearer token")
    for path in (cert_path, key_path):
        if path and not os.path.isfile(path):
            raise ConfigError(f"load MCP HTTP TLS certificate and key: {path} does not exist")
    return HttpOptions(
        host=host or "0.0.0.0",
        port=port,
        loopback=loopback,
        cert_file=cert_path,
        key_file=key_path,
        token=token,
        max_body_bytes=mcp.http_max_body_bytes,
        tool_names=mcp.tool_names,
        require_tokens=mcp.require_tokens,
    )


def _rooted(root: Path, value: str) -> Path:
    path = Path(value)
    return path if path.is_absolute() else Path(root) / path


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


TokenResolver = Callable[[str], Awaitable[Caller | None]]


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BearerGuard:
    """ASGI middleware for `/mcp`: bearer check, caller identity, in-flight accounting."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        require_tokens: bool,
        resolve: TokenResolver | None = None,
        path: str = "/mcp",
    ) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        self._require_tokens = require_tokens
        self._resolve = resolve
        self._path = path
        self.closing = False
        self.inflight = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("path") != self._path:
            await self.app(scope, receive, send)
            return
        if self.closing:
            await _plain(send, 503, "MCP HTTP listener is shutting down")
            return
        caller = await self._authorise(scope)
        if caller is None:
            await _plain(send, 401, "unauthorized", [(b"www-authenticate", b'Bearer realm="roundtable"')])
            return
        scope[CALLER_SCOPE_KEY] = caller
        counted = scope.get("method") == "POST"
        if counted:
            self.inflight += 1
            self.idle.clear()
        try:
            await self.app(scope, receive, send)
        finally:
            if counted:
                self.inflight -= 1
                if self.inflight == 0:
                    self.idle.set()

    async def _authorise(self, scope: Scope) -> Caller | None:
        if not self._token and not self._require_tokens:
            return HTTP_CALLER
        presented = _bearer(scope)
        if presented is None:
            return None
        if self._token and hmac.compare_digest(presented, self._token):
            return HTTP_CALLER
        if self._require_tokens and self._resolve is not None:
            try:
                text = presented.decode("utf-8")
            except UnicodeDecodeError:
                return None
            return await self._resolve(text)
        return None


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            if value.startswith(b"Bearer ") and len(value) > 7:
                return bytes(value[7:])
            return None
    return None


def db_token_resolver(runtime: Any) -> TokenResolver:
    """Look a presented token up in `access_tokens` by its sha256 (only the hash is stored)."""

    async def resolve(token: str) -> Caller | None:
        digest = token_digest(token)
        async with runtime.db.read() as reader:
            row = await reader.fetchone(
                "SELECT principal, agent_id FROM access_tokens WHERE token_sha256 = ? AND revoked_at IS NULL",
                (digest,),
            )
        if row is None:
            return None
        if row["principal"] == "operator":
            return Caller("operator", "http")
        return Caller("agent", "http", agent_id=row["agent_id"] or "")

    return resolve
