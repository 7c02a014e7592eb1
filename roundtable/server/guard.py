"""HTTP listener options and the pure-ASGI bearer guard in front of `/mcp`.

`http_options` validates the listener before anything binds (system.md §6.3.1): an address
that splits into host and port, TLS certificate and key together, and — off loopback — TLS
plus token authentication.

`BearerGuard` runs before the MCP app reads a body and decides who the caller is (DESIGN §4.23).
Authenticated by default: loopback TCP is reachable by every local uid, so with `mcp.auth: token`
(the default) a request without a valid `Authorization: Bearer <token>` gets 401, on every bind.
A presented token is resolved on every request — re-read from `access_tokens`, so revoking it
refuses the very next request — into the principal it belongs to:
- an operator token → the operator;
- an agent token → that agent, only while the agent is registered and enabled;
- an unbound credential (the project credential, the legacy shared `ROUNDTABLE_MCP_TOKEN`) →
  anonymous, which `Runtime.call` limits to read-only tools;
- a session capability (`rtcap_…`) → 401: it is valid only on its own session socket.
`mcp.auth: none` is the explicit opt-out: a request without a token is anonymous (read-only).
The scheme is matched case-insensitively, secrets are compared in constant time (the database
holds only sha256 digests) and a token is never echoed or logged. The guard also counts
in-flight POSTs so shutdown can drain them.
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
CAPABILITY_PREFIX = "rtcap_"
# An HTTP caller bound to no agent: `Runtime.call` lets it call read-only tools only.
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
    auth: str = "token"

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
    authenticated = mcp.auth == "token" or mcp.require_tokens or bool(token)
    if not loopback and not (cert and key and authenticated):
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
        require_tokens=authenticated,
        auth="token" if authenticated else "none",
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


UNAUTHORIZED = (
    "unauthorized: this endpoint needs a bearer credential (Authorization: Bearer <token>); "
    "harnesses get one through `roundtable connect --agent ID` (the bridge reads it from .roundtable/), "
    "other clients from `roundtable tokens create --agent ID`"
)


class BearerGuard:
    """ASGI middleware for `/mcp`: bearer check, caller identity, in-flight accounting."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str = "",
        require_tokens: bool = True,
        resolve: TokenResolver | None = None,
        path: str = "/mcp",
    ) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        # Without a credential a request is refused unless the operator opted out (`mcp.auth: none`
        # and no shared token configured).
        self._require = require_tokens or bool(token)
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
            await _plain(send, 401, UNAUTHORIZED, [(b"www-authenticate", b'Bearer realm="roundtable"')])
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
        presented = bearer_token(scope)
        if presented is None:
            return None if self._require else HTTP_CALLER
        if not presented:
            return None  # a malformed Authorization header is never anonymous
        if self._token and hmac.compare_digest(presented, self._token):
            return HTTP_CALLER  # the legacy shared token names nobody: anonymous
        if self._resolve is None:
            return None
        try:
            text = presented.decode("ascii")
        except UnicodeDecodeError:
            return None
        if text.startswith(CAPABILITY_PREFIX):
            return None  # a session capability is valid only on its own session socket
        return await self._resolve(text)


def bearer_token(scope: Scope) -> bytes | None:
    """The credential of the `Authorization` header: None without the header, b"" when the
    header is not a well-formed bearer credential. The scheme is case-insensitive (RFC 9110)."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, rest = bytes(value).strip().partition(b" ")
            token = rest.strip()
            if scheme.lower() != b"bearer" or not token or b" " in token:
                return b""
            return token
    return None


def db_token_resolver(runtime: Any) -> TokenResolver:
    """Resolve a presented token through `access_tokens` (by its sha256) on every request."""
    from roundtable.services import tokens as token_service

    async def resolve(token: str) -> Caller | None:
        async with runtime.db.read() as reader:
            found = await token_service.resolve(reader, token)
        if found is None:
            return None
        principal, agent_id = found
        if principal == token_service.OPERATOR:
            return Caller("operator", "http")
        if principal == token_service.AGENT:
            return Caller("agent", "http", agent_id=agent_id)
        return HTTP_CALLER  # the project credential: unbound, anonymous

    return resolve
