"""Standard MCP over Streamable HTTP: uvicorn as a task on the owner's loop.

Routes: `/mcp` (Starlette's authentication middleware with `guard.TokenBackend`, per-principal
session caps, then the one MCP server of `mcp_adapter.build_server` in the SDK's stateful
session manager with SSE replies, explicit Host/Origin settings and a body limit) and `/healthz`
(without a credential `{"status", "project_id"}` only: a roundtable owner of that project is
ready — any sandboxed session on the machine may reach this address; with a bearer credential
`/mcp` would accept also `root` and `pid`, so a bridge or `doctor` can tell which directory's
owner answers). Every response names the project in a `Roundtable-Project` header.
A `/healthz` request may carry a challenge and a credential's public id; the owner then proves
it holds that credential (`Roundtable-Proof`, an HMAC keyed by the credential's stored sha256),
so a bridge never sends its token to a program that merely repeats the public project id: it
sends it (for the root) only once that proof is good.

Limits against hostile or broken clients, all before authentication:

- **Connections.** At most `max_connections` open at once (bounded by the fd limit, whose soft
  value is raised to the hard one). At the cap a new connection evicts the connection that has
  waited longest without a request in progress — one that never completed a request (silent,
  or partial headers) first, a keep-alive one only when none is left; only when every
  connection is busy is it answered 503 and closed. Connections serving a request (a tool call,
  a bridge's GET stream) are never evicted.
- **Header and body deadlines.** A request's headers must arrive within `header_timeout` of the
  connection opening (or of its first byte after keep-alive), its body within `body_timeout`;
  otherwise the connection is closed. Headers are capped at `max_header_bytes`.
- **Sessions.** Each principal (the authenticated caller) may hold `sessions_per_principal` MCP
  sessions; opening one more closes that principal's least recently used idle session, or is
  refused with 503 when all are busy. A session is bound to the principal that opened it (another
  principal gets 404), and idle sessions are reaped after `session_idle_timeout`.
- **Logging.** Repeated log records (same logger, message and exception type) from the loggers
  a client can make talk (asyncio, uvicorn, the MCP SDK, our transports) are written once per
  `LOG_INTERVAL` per kind; the next one says how many were suppressed.

Shutdown refuses new requests (503), lets in-flight POSTs finish (bounded), ends the MCP
sessions so their GET streams close, then stops the embedded uvicorn (`server.embedded`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import hashlib
import hmac
import json
import logging
import os
import re
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import h11
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from roundtable.credentials import ensure_project_id
from roundtable.errors import RoundtableError
from roundtable.server import sdk
from roundtable.server.embedded import Embedded, EmbeddedStartError
from roundtable.server.guard import TokenBackend, authenticated, bearer_credential, caller_of, db_token_resolver
from roundtable.server.mcp_adapter import build_server, session_manager
from roundtable.server.options import HttpOptions, http_options
from roundtable.server.stdio import (
    CHALLENGE_HEADER,
    CREDENTIAL_HEADER,
    PROOF_HEADER,
    credential_id,
    credential_proof,
)
from roundtable.server.tokencache import CredentialResolver

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from roundtable.runtime import Runtime

__all__ = ["HttpError", "HttpLimits", "HttpServer", "http_options", "security_settings"]

log = logging.getLogger("roundtable.server.http")

PROJECT_HEADER = b"roundtable-project"
HANDSHAKE_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
LOG_INTERVAL = 10.0
FD_RESERVE = 256  # descriptors kept for the database, the socket, sessions and git children
LISTEN_BACKLOG = 2048
_CHALLENGE = re.compile(r"[0-9a-f]{32,128}")
_CREDENTIAL_ID = re.compile(r"[0-9a-f]{32}")
ACCEPT_BATCH = 16


@dataclass(frozen=True)
class HttpLimits:
    """The listener's limits (defaults suit a coordinator for tens of agents on one machine)."""

    max_connections: int = 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive: int = 120
    max_header_bytes: int = 32 * 1024
    sessions_per_principal: int = 64
    max_sessions: int = 4096
    session_idle_timeout: float = 300.0


DEFAULT_LIMITS = HttpLimits()


class HttpError(RoundtableError):
    """The HTTP listener could not start."""


def security_settings(options: HttpOptions, port: int) -> TransportSecuritySettings:
    """Host/Origin allow-lists: loopback names on a loopback bind, the bound host otherwise."""
    scheme = "https" if options.tls else "http"
    if options.loopback:
        hosts = ["127.0.0.1", "localhost", "[::1]"]
    else:
        hosts = [options.host if ":" not in options.host else f"[{options.host}]"]
    allowed_hosts = [f"{h}:{port}" for h in hosts]
    allowed_origins = [f"{scheme}://{h}:{port}" for h in hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


# --- rate-limited logging -----------------------------------------------------------------


class RateLimitFilter(logging.Filter):
    """Let one record per kind (logger, level, message template, exception type) through per
    `interval`; the next one let through says how many were suppressed in between."""

    def __init__(self, interval: float = LOG_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__("roundtable-rate-limit")
        self.interval = interval
        self._clock = clock
        self._seen: dict[tuple[Any, ...], list[float]] = {}  # kind -> [window start, suppressed]

    def filter(self, record: logging.LogRecord) -> bool:
        # A record may meet this filter twice (on its logger, then on a handler): judge it once.
        verdict = getattr(record, "_roundtable_rate_limit", None)
        if verdict is None:
            verdict = self._judge(record)
            record._roundtable_rate_limit = verdict
        return bool(verdict)

    def _judge(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        kind = (record.name, record.levelno, str(record.msg)[:200], exc)
        now = self._clock()
        seen = self._seen.get(kind)
        if seen is not None and now - seen[0] < self.interval:
            seen[1] += 1
            return False
        if len(self._seen) > 10_000:  # bounded even if every message is different
            self._seen.clear()
        suppressed = int(seen[1]) if seen is not None else 0
        self._seen[kind] = [now, 0]
        if suppressed:
            record.msg = f"{record.msg} ({suppressed} more like this in the last {now - seen[0]:.0f} s)"  # type: ignore[index]
        return True


LOG_FILTER = RateLimitFilter()


NOISY_LOGGERS = ("asyncio", "uvicorn", "mcp", "starlette", "roundtable.server")


def install_log_limit(flt: RateLimitFilter = LOG_FILTER) -> None:
    """Put the rate limit on the loggers a hostile client can make talk (the event loop, uvicorn,
    the MCP SDK, our transports), each existing logger below them included (idempotent).

    On the loggers, not on handlers: the owner's handlers (or a test's) stay untouched, and a
    record is limited wherever it goes."""
    names = set(NOISY_LOGGERS)
    for name in list(logging.Logger.manager.loggerDict):
        if any(name.startswith(prefix + ".") for prefix in NOISY_LOGGERS):
            names.add(name)
    for name in names:
        logger = logging.getLogger(name)
        if flt not in logger.filters:
            logger.addFilter(flt)


# --- connection limits --------------------------------------------------------------------


@dataclass
class ConnectionStats:
    """Shared by every connection of one listener."""

    max_connections: int
    header_timeout: float
    body_timeout: float
    live: int = 0
    peak: int = 0
    refused: int = 0
    evicted: int = 0
    header_timeouts: int = 0
    body_timeouts: int = 0
    # Connections with no request in progress, oldest first: the ones eviction may close.
    # `fresh` never completed a request (new, or sending headers); `idle` did (keep-alive), and
    # is closed only when no fresh one is left, so a flood of new connections cannot push out
    # the clients that are actually being served.
    fresh: collections.OrderedDict[Any, None] = field(default_factory=collections.OrderedDict)
    idle: collections.OrderedDict[Any, None] = field(default_factory=collections.OrderedDict)

    def victim(self) -> Any:
        return next(iter(self.fresh), None) or next(iter(self.idle), None)

    def as_dict(self) -> dict[str, int]:
        return {
            "max_connections": self.max_connections,
            "live": self.live,
            "in_progress": self.live - len(self.fresh) - len(self.idle),  # serving a request: never evicted
            "peak": self.peak,
            "refused": self.refused,
            "evicted": self.evicted,
            "header_timeouts": self.header_timeouts,
            "body_timeouts": self.body_timeouts,
        }


_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: 37\r\n\r\ntoo many open connections; try again\n"
)


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection cap, eviction and header/body deadlines."""

    stats: ConnectionStats  # set on the per-listener subclass

    _refused = False
    _counted = False
    _served = 0
    _timer: asyncio.TimerHandle | None = None
    _timer_kind = ""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        stats = self.stats
        if stats.live >= stats.max_connections:
            victim = stats.victim()
            if victim is None:
                self._refused = True
                stats.refused += 1
                transport.write(_BUSY)
                transport.close()
                return
            stats.evicted += 1
            victim._drop()
        self._counted = True
        stats.live += 1
        stats.peak = max(stats.peak, stats.live)
        super().connection_made(transport)
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._untrack()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        self._served += 1
        super().on_response_complete()
        self._track()

    # -- bookkeeping ---------------------------------------------------------------------------

    def _drop(self) -> None:
        """Close this connection now (eviction or a missed deadline)."""
        self._untrack()
        if not self.transport.is_closing():
            self.transport.close()

    def _untrack(self) -> None:
        self.stats.fresh.pop(self, None)
        self.stats.idle.pop(self, None)
        self._cancel_timer()
        if self._counted:
            self._counted = False
            self.stats.live -= 1

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._timer_kind = ""

    def _arm(self, kind: str, delay: float) -> None:
        if self._timer_kind == kind:
            return  # a deadline runs from its start; trickling bytes do not extend it
        self._cancel_timer()
        self._timer_kind = kind
        self._timer = self.loop.call_later(delay, self._expired, kind)

    def _track(self) -> None:
        """Update the eviction list and deadlines from the connection's HTTP state."""
        if not self._counted or self.transport.is_closing():
            self._untrack()
            return
        state = self.conn.their_state
        stats = self.stats
        if state is h11.IDLE:
            (stats.idle if self._served else stats.fresh).setdefault(self, None)  # oldest first
            if self.timeout_keep_alive_task is None:
                self._arm("header", self.stats.header_timeout)  # fresh, or bytes of a next request
            else:
                self._cancel_timer()  # plain keep-alive: uvicorn's own timer closes it
        else:
            stats.fresh.pop(self, None)
            stats.idle.pop(self, None)
            if state is h11.SEND_BODY:
                self._arm("body", self.stats.body_timeout)
            else:
                self._cancel_timer()

    def _expired(self, kind: str) -> None:
        self._timer = None
        self._timer_kind = ""
        state = self.conn.their_state
        if (kind == "header" and state is h11.IDLE) or (kind == "body" and state is h11.SEND_BODY):
            if kind == "header":
                self.stats.header_timeouts += 1
            else:
                self.stats.body_timeouts += 1
            self._drop()


# --- sessions per principal ---------------------------------------------------------------


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _json_error(send: Send, status: int, message: str, code: int = -32600) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SessionLimiter:
    """ASGI layer between authentication and the SDK: sessions per principal, bound to it."""

    def __init__(
        self, app: ASGIApp, manager: StreamableHTTPSessionManager, *, per_principal: int, path: str = "/mcp"
    ) -> None:
        self.app = app
        self.manager = manager
        self.per_principal = per_principal
        self.path = path
        self.owner_of: dict[str, str] = {}
        self.by_principal: dict[str, collections.OrderedDict[str, None]] = {}
        self.evicted = 0
        self.refused = 0

    def _live(self, sid: str) -> Any:
        transport = sdk.session_transports(self.manager).get(sid)
        return None if transport is None or transport.is_terminated else transport

    def _prune(self, principal: str) -> collections.OrderedDict[str, None]:
        mine = self.by_principal.setdefault(principal, collections.OrderedDict())
        for sid in [s for s in mine if self._live(s) is None]:
            del mine[sid]
            self.owner_of.pop(sid, None)
        return mine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        principal = caller_of(scope).principal
        sid = _header(scope, b"mcp-session-id")
        version = _header(scope, b"mcp-protocol-version")
        if sid is not None:
            owner = self.owner_of.get(sid)
            if owner is not None and self._live(sid) is not None:
                if owner != principal:
                    await _json_error(send, 404, "Session not found")  # as if it did not exist
                    return
                self.by_principal.get(owner, collections.OrderedDict()).pop(sid, None)
                self.by_principal.setdefault(owner, collections.OrderedDict())[sid] = None  # most recent
            await self.app(scope, receive, send)
            return
        if scope.get("method") != "POST" or (version is not None and version not in HANDSHAKE_VERSIONS):
            await self.app(scope, receive, send)  # no session is opened by these
            return
        mine = self._prune(principal)
        if len(mine) >= self.per_principal and not await self._evict_idle(mine):
            self.refused += 1
            await _json_error(
                send, 503, f"too many open MCP sessions for {principal} ({len(mine)}); close one first", -32603
            )
            return

        async def note_session(message: Message) -> None:
            if message.get("type") == "http.response.start" and message.get("status", 500) < 400:
                for key, value in message.get("headers", ()):
                    if key == b"mcp-session-id":
                        new = bytes(value).decode("latin-1")
                        self.owner_of[new] = principal
                        self.by_principal.setdefault(principal, collections.OrderedDict())[new] = None
            await send(message)

        await self.app(scope, receive, note_session)

    async def _evict_idle(self, mine: collections.OrderedDict[str, None]) -> bool:
        """Close the least recently used session with nothing in flight; False if none."""
        for sid in list(mine):
            transport = self._live(sid)
            if transport is not None and sdk.requests_in_flight(transport) == 0:
                del mine[sid]
                self.owner_of.pop(sid, None)
                self.evicted += 1
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(transport.terminate(), 1.0)
                return True
        return False


class ProjectHeader:
    """Outermost ASGI layer: every response names the project it belongs to."""

    def __init__(self, app: ASGIApp, project_id: str) -> None:
        self.app = app
        self.value = project_id.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return

        async def stamped(message: Message) -> None:
            if message.get("type") == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (PROJECT_HEADER, self.value)]
            await send(message)

        await self.app(scope, receive, stamped)


class Drain:
    """ASGI layer in front of `/mcp`: refuses requests once shutdown began (503) and counts the
    POSTs in flight, so shutdown can let them finish."""

    def __init__(self, app: ASGIApp, path: str = "/mcp") -> None:
        self.app = app
        self.path = path
        self.closing = False
        self.inflight = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        if self.closing:
            await Response("MCP HTTP listener is shutting down\n", 503, media_type="text/plain")(scope, receive, send)
            return
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


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return soft


async def describe_holder(host: str, port: int) -> str:
    """Who holds `host:port`: a roundtable owner and its project id from its /healthz, or ''."""
    import httpx2

    target = f"[{host}]" if ":" in host else (host if host not in ("", "0.0.0.0") else "127.0.0.1")
    try:
        async with httpx2.AsyncClient(timeout=1.0, trust_env=False, verify=False) as client:
            for scheme in ("http", "https"):
                with contextlib.suppress(httpx2.HTTPError, ValueError):
                    body = (await client.get(f"{scheme}://{target}:{port}/healthz")).json()
                    if isinstance(body, dict) and "project_id" in body:
                        # Another project's owner tells its root and pid only to its own callers.
                        return f"a roundtable owner (project {body['project_id']})"
    except Exception:
        return ""
    return ""


class HttpServer:
    """The MCP HTTP endpoint of one owner."""

    def __init__(
        self,
        runtime: Runtime,
        options: HttpOptions,
        *,
        health: Callable[[], str] = lambda: "ready",
        log: Callable[[str], None] | None = None,
        limits: HttpLimits | None = None,
    ) -> None:
        self.runtime = runtime
        self.options = options
        self.limits = limits or DEFAULT_LIMITS
        self._health = health
        self._say = log or (lambda line: None)
        # The owner states its project (an older project gets its id now) so the stdio bridge
        # and `doctor` can refuse an owner of another project before sending a credential.
        self.root = os.path.realpath(runtime.root)
        self.project_id = ensure_project_id(self.root)
        self.mcp = build_server(runtime)
        self._embedded: Embedded | None = None
        self._drain: Drain | None = None
        self._resolver: CredentialResolver | None = None
        self._backend: TokenBackend | None = None
        self.sessions: SessionLimiter | None = None
        self.connections: ConnectionStats | None = None
        self.port = options.port
        self._stopped = False

    @property
    def address(self) -> str:
        host = self.options.host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        scheme = "https" if self.options.tls else "http"
        return f"{scheme}://{self.address}/mcp"

    async def _healthz(self, request: Request) -> Response:
        try:
            status = self._health()
        except Exception:
            status = "degraded"
        body: dict[str, Any] = {"status": status, "project_id": self.project_id}
        if await self._presents_credential(request):
            # Where the project lives and which process serves it are for its own callers only.
            body.update(root=self.root, pid=os.getpid())
        headers = {}
        challenge = request.headers.get(CHALLENGE_HEADER, "")
        wanted = request.headers.get(CREDENTIAL_HEADER, "")
        if _CHALLENGE.fullmatch(challenge) and _CREDENTIAL_ID.fullmatch(wanted):
            digest = await self._known_digest(wanted)
            if digest:
                headers[PROOF_HEADER] = credential_proof(digest, challenge, self.project_id)
        return Response(json.dumps(body) + "\n", media_type="application/json", headers=headers)

    async def _presents_credential(self, request: Request) -> bool:
        """Does the request carry a bearer credential `/mcp` accepts? (Not merely none at all,
        which `mcp.auth: none` would let through.)"""
        header = request.headers.get("authorization")
        if self._backend is None or not bearer_credential(header):
            return False
        try:
            caller, _credential = await self._backend.identify(header)
        except Exception:
            return False
        return caller is not None

    async def _known_digest(self, wanted: str) -> str:
        """The stored sha256 of the live credential named `wanted` (see `credential_id`), or ''."""
        candidates = [hashlib.sha256(self.options.token.encode()).hexdigest()] if self.options.token else []
        try:
            async with self.runtime.db.read() as reader:
                rows = await reader.fetchall("SELECT token_sha256 FROM access_tokens WHERE revoked_at IS NULL")
        except Exception:
            rows = []
        candidates.extend(str(row[0]) for row in rows)
        for digest in candidates:
            if hmac.compare_digest(credential_id(digest), wanted):
                return digest
        return ""

    def stats(self) -> dict[str, Any]:
        """Connection and session counters (for tests, benchmarks and the operator)."""
        out: dict[str, Any] = dict(self.connections.as_dict()) if self.connections else {}
        out["sessions"] = len(self.open_sessions())
        if self.sessions is not None:
            out["sessions_evicted"] = self.sessions.evicted
            out["sessions_refused"] = self.sessions.refused
        return out

    def open_sessions(self) -> dict[str, Any]:
        """The open MCP sessions (stateful, handshake era) by session id."""
        manager = session_manager(self.mcp)
        return sdk.session_transports(manager) if manager is not None else {}

    def _build_app(self, port: int) -> Any:
        app = self.mcp.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=False,
            stateless_http=False,
            transport_security=security_settings(self.options, port),
            max_request_body_size=self.options.max_body_bytes,
            host=self.options.host,
            session_idle_timeout=self.limits.session_idle_timeout,
            max_sessions=self.limits.max_sessions,
            custom_starlette_routes=[Route("/healthz", self._healthz, methods=["GET", "HEAD", "POST"])],
        )
        self.sessions = SessionLimiter(app, self.mcp.session_manager, per_principal=self.limits.sessions_per_principal)
        self._resolver = db_token_resolver(self.runtime)
        backend = TokenBackend(self._resolver, token=self.options.token, require_tokens=self.options.require_tokens)
        self._backend = backend
        self._drain = Drain(authenticated(self.sessions, backend))
        return ProjectHeader(self._drain, self.project_id)

    async def start(self) -> None:
        """Bind (port 0 → an ephemeral port) and serve until `stop()`."""
        import socket as _socket

        family = _socket.AF_INET6 if ":" in self.options.host else _socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP,
        # and without it every keep-alive reply stalls ~40 ms on Nagle + delayed ACK.
        sock = _socket.socket(family, _socket.SOCK_STREAM, _socket.IPPROTO_TCP)
        try:
            sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            sock.bind((self.options.host, self.options.port))
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                holder = await describe_holder(self.options.host, self.options.port)
                who = f"is held by {holder}" if holder else "is in use by another program"
                raise HttpError(
                    f"listen for MCP HTTP: {self.address} {who}; stop it, or give this project another "
                    f"address with mcp.http_address in {self.root}/.roundtable/config.yaml"
                ) from None
            raise HttpError(f"listen for MCP HTTP: {exc.strerror or exc}") from None
        self.port = sock.getsockname()[1]
        fd_limit = raise_fd_limit()
        limits = self.limits
        self.connections = ConnectionStats(
            max_connections=max(16, min(limits.max_connections, fd_limit - FD_RESERVE)),
            header_timeout=limits.header_timeout,
            body_timeout=limits.body_timeout,
        )
        protocol = type("RoundtableH11Protocol", (LimitedH11Protocol,), {"stats": self.connections})
        config = uvicorn.Config(
            self._build_app(self.port),
            http=protocol,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_keep_alive=limits.keep_alive,
            timeout_graceful_shutdown=2,
            # asyncio accepts up to `backlog` connections per loop iteration; a small batch keeps
            # a connection flood from starving everything else on the loop (the socket, tool
            # calls). The kernel's queue is set back to LISTEN_BACKLOG once serving (below).
            backlog=ACCEPT_BATCH,
            h11_max_incomplete_event_size=limits.max_header_bytes,
            ssl_certfile=self.options.cert_file or None,
            ssl_keyfile=self.options.key_file or None,
            server_header=False,
        )
        install_log_limit()  # after uvicorn.Config, which configures uvicorn's loggers
        self._embedded = Embedded(config, name="roundtable-http")
        try:
            await self._embedded.start([sock])
        except EmbeddedStartError as exc:
            if exc.stage == "load":  # e.g. an unreadable key pair
                raise HttpError(f"load MCP HTTP TLS certificate and key: {exc.reason}") from None
            raise HttpError(f"MCP HTTP server stopped: {exc.reason}") from None
        with contextlib.suppress(OSError):
            sock.listen(LISTEN_BACKLOG)  # Linux updates the queue length of a listening socket

    @property
    def task(self) -> asyncio.Task[Any] | None:
        return self._embedded.task if self._embedded is not None else None

    async def stop(self, drain_timeout: float = 5.0) -> None:
        if self._stopped or self._embedded is None or self._embedded.task is None:
            return
        self._stopped = True
        self.mcp.hub.end_listens()  # 2026-07-28 listen streams are POSTs that never end by themselves
        drain = self._drain
        if drain is not None:
            drain.closing = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(drain.idle.wait(), drain_timeout)
        await self._end_sessions()
        await self._embedded.stop(drain_timeout)
        if self._resolver is not None:
            self._resolver.close()

    async def _end_sessions(self) -> None:
        """Terminate every MCP session so open GET streams end now, not at the grace deadline."""
        for transport in list(self.open_sessions().values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(transport.terminate(), 1.0)
