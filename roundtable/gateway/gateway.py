"""The gateway: a supervised session's one way out, served on a Unix socket of its own.

One `Gateway` per owner. `open_session` listens on the session's socket (0600, handed to the
sandbox's uid when the owner is root) and returns a `GatewayGrant` whose token the session's
harness presents as its model API key; `close_session` revokes it: the socket is removed and every
open connection and tunnel of the session is cut. On the socket, HTTP/1.1 (`http11`):

- `/anthropic/...` and `/openai/...`: the model APIs. The token is checked and stripped, the
  operator's credential is added from the owner's environment (Anthropic `ANTHROPIC_API_KEY` as
  `x-api-key`, else `ANTHROPIC_AUTH_TOKEN` as a bearer; OpenAI `CODEX_API_KEY`, else
  `OPENAI_API_KEY`, as a bearer) and the request goes to the upstream (`adapters.claude.upstream`,
  `adapters.codex.upstream`, or the vendors' own). For Codex the gateway follows the model
  provider the operator's own Codex configuration selects (`adapters.codex_operator_upstream`):
  its `base_url` and the key in the owner's variable its `env_key` names. Each session's route
  is fixed when it is opened (`_Route`). A session may use its adapter's API only.
  Before forwarding, a budget covering the session that is reached refuses the request with the
  vendor's error shape ("budget reached: …") and asks the owner to stop the session
  (`on_stop`). A 429, 503 or 529 is retried after the upstream's `retry-after` (bounded attempts
  and wait); a 401/403 is recorded (`gateway.credential_refused`) and answered as "the model API
  refused the credential (status, message)", and the session is asked to stop. The answer is
  passed on chunk by chunk as it arrives; its usage is read on the way (`meter`) and recorded
  per request (`gateway.record_usage`) — the authoritative figure of the session's spend.
- `CONNECT host:port` and absolute-form `http://host/...` requests: a forward proxy for the hosts
  of `sessions.network.allow` only (the owner resolves names; a session has no DNS of its own).
  Every refused connection is recorded (`gateway.connection_refused`). The socket alone says whose
  the traffic is: it is the session's own and only its sandbox can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx2

from roundtable.gateway.http11 import Peer, PeerGone, Request, TooLarge
from roundtable.gateway.meter import Measured, WireMeter
from roundtable.services.sessions import adapters, budgets, preflight
from roundtable.services.sessions.budgets import REQUEST_TOKENS_MAX
from roundtable.tools.context import GATEWAY

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.gateway")

TOKEN_PREFIX = "rtgw_"
API_OF_ADAPTER = {"claude": "anthropic", "codex": "openai"}
ADAPTER_OF_API = {api: adapter for adapter, api in API_OF_ADAPTER.items()}
DEFAULT_UPSTREAMS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}
# The operator's credentials are sent as a bearer token, but Anthropic's API key as `x-api-key`.
CREDENTIAL_HEADERS = {"ANTHROPIC_API_KEY": "x-api-key"}
# The requests that spend (their answers are metered); `count_tokens` and the rest are free.
SPENDING_PATHS = {"anthropic": ("/v1/messages",), "openai": ("/v1/responses", "/v1/chat/completions")}
RETRY_STATUSES = frozenset({429, 503, 529})
REFUSED_CREDENTIAL_STATUSES = frozenset({401, 403})
RETRY_ATTEMPTS = 4  # tries in all for a rate-limited or overloaded answer
MAX_RETRY_WAIT = 30.0  # seconds; a longer `retry-after` is passed on to the harness instead
ERROR_BODY_MAX = 64 * 1024
CONNECT_TIMEOUT = 10.0
RELAY_READ = 64 * 1024
# With no budget set nothing waits on a session's written spend, so its answers are written at
# most once per this many seconds (summed): one transaction per answer, run beside the harness's
# next request, cost that request about a millisecond of the owner's CPU on its way.
WRITE_INTERVAL_S = 0.5
# How long a budget check waits for the session's answers still streaming to be counted: long
# enough for one that just ended, short enough that a parallel long stream does not hold it.
ANSWERS_SETTLE_S = 2.0
# Headers that describe one hop, never forwarded; and the credentials a session may present.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)
_CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization", "api-key", "openai-api-key"})
_RESPONSE_DROP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "proxy-authenticate", "upgrade", "trailer"}
)


@dataclass(frozen=True)
class GatewayGrant:
    """What a session is given: its socket and the token its harness presents as its API key."""

    session_id: str
    socket_path: Path
    token: str


@dataclass(frozen=True)
class StopRequest:
    """The gateway asks the owner to end a session: `kind` is `budget` (the message starts with
    `budget:`) or `credential_refused` (it starts with `preflight.CREDENTIAL_REFUSED`, or is
    `preflight.NO_CREDENTIAL …` when the owner has no credential to add)."""

    session_id: str
    kind: str
    message: str


StopHandler = Callable[[StopRequest], Awaitable[None]]


@dataclass(frozen=True)
class _Route:
    """Where one session's model requests go: `base` with the request's path (what follows the
    API's prefix) appended — without its leading `/v1` when `base` stands for `.../v1` (a Codex
    provider's `base_url` that does not end in `/v1`) — carrying the first of `credentials`
    (the owner's variables) that is set; none when the provider names no key. `problem`: why
    the operator's configuration cannot be followed (every request is refused with it)."""

    base: str
    drop_v1: bool = False
    credentials: tuple[str, ...] = ()
    problem: str = ""

    def url(self, rest: str) -> str:
        if self.drop_v1 and (rest == "/v1" or rest.startswith(("/v1/", "/v1?"))):
            rest = rest[3:]
        return self.base + rest


@dataclass
class _Session:
    grant: GatewayGrant
    adapter: str
    api: str  # the model API it may use ('' none)
    route: _Route | None  # where its model requests go (None: no model API)
    run_id: str
    task_id: str
    day: str
    server: asyncio.Server | None = None
    connections: set[asyncio.Task[None]] = field(default_factory=set)
    stops: set[str] = field(default_factory=set)  # kinds already asked for
    closed: bool = False
    # Usage measured and not yet written (input, cached, output, model), and the task writing it.
    unwritten: list[int] = field(default_factory=lambda: [0, 0, 0])
    unwritten_model: str = ""
    written_model: str = ""  # sent once: a blank model keeps the row's (and skips the redactor)
    writer: asyncio.Task[None] | None = None
    write_now: asyncio.Event = field(default_factory=asyncio.Event)  # the writer's wait cut short
    # Answers being passed on whose usage is not counted yet: the harness may read an answer's
    # last byte and ask again before the gateway has counted it.
    answering: int = 0
    counted: asyncio.Condition = field(default_factory=asyncio.Condition)


@dataclass
class Stats:
    """Counts since start, for `doctor`, tests and the bench."""

    model_requests: int = 0
    retried: int = 0
    refused_connections: int = 0
    tunnels: int = 0
    usage_problems: int = 0


class Gateway:
    """The owner's gateway for its supervised sessions (see the module's docstring)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        upstreams: dict[str, str] | None = None,
        on_stop: StopHandler | None = None,
        retry_attempts: int = RETRY_ATTEMPTS,
        max_retry_wait: float = MAX_RETRY_WAIT,
        write_interval: float = WRITE_INTERVAL_S,
    ) -> None:
        self.runtime = runtime
        self._upstreams = dict(upstreams or {})
        self.on_stop = on_stop
        self.retry_attempts = max(1, retry_attempts)
        self.max_retry_wait = max_retry_wait
        self.write_interval = write_interval
        self.stats = Stats()
        self._sessions: dict[str, _Session] = {}
        self._client: httpx2.AsyncClient | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._writes: set[asyncio.Task[Any]] = set()

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(30.0, read=600.0),
                limits=httpx2.Limits(max_connections=200, max_keepalive_connections=20),
                follow_redirects=False,
            )

    async def aclose(self) -> None:
        for session_id in list(self._sessions):
            await self.close_session(session_id)
        if self._writes:  # writes finish (never cancelled mid-transaction)
            await asyncio.wait(list(self._writes), timeout=10)
        for task in list(self._background):
            task.cancel()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> Gateway:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def upstream(self, api: str) -> str:
        """The base URL requests of `api` go to (no trailing slash)."""
        if api in self._upstreams:
            return self._upstreams[api].rstrip("/")
        adapter = self.runtime.config.adapters.get(ADAPTER_OF_API.get(api, ""))
        configured = adapter.upstream if adapter is not None else ""
        return (configured or DEFAULT_UPSTREAMS[api]).rstrip("/")

    def route(self, api: str) -> _Route:
        """Where a session of `api` sends its model requests, and with which credential: the
        upstream of `upstream` — for OpenAI, unless `upstreams` or `adapters.codex.upstream` names
        one, the `base_url` of the provider the operator's Codex configuration selects — and the
        owner's variables `adapters.operator_credentials` names. Reads that configuration."""
        adapter = ADAPTER_OF_API[api]
        credentials = adapters.operator_credentials(adapter)
        base, drop_v1 = self.upstream(api), False
        if api != "openai":
            return _Route(base, credentials=credentials)
        followed = adapters.codex_operator_upstream()
        configured = self.runtime.config.adapters.get(adapter)
        if followed.base_url and api not in self._upstreams and not (configured and configured.upstream):
            base = followed.base_url.rstrip("/")
            base, drop_v1 = (base[:-3], False) if base.endswith("/v1") else (base, True)
        return _Route(base, drop_v1, credentials, followed.problem)

    async def open_session(
        self, session_id: str, *, adapter: str, socket_path: Path, owner_uid: int = -1
    ) -> GatewayGrant:
        """Listen for the session on `socket_path`. When its adapter has a model API here
        (`API_OF_ADAPTER`), its usage is measured here from now on and what its harness prints
        is only a cross-check (the session must be recorded already, `session.open`); another
        adapter's session (a scripted agent) keeps its printed figures and gets the proxy only."""
        if session_id in self._sessions:
            raise ValueError(f"the gateway already serves session {session_id}")
        await self.start()
        api = API_OF_ADAPTER.get(adapter, "")
        opened: dict[str, Any] = {"run_id": "", "task_id": "", "day": ""}
        route = await asyncio.to_thread(self.route, api) if api else None
        if api:  # its model traffic passes here: this is its spend's one source from now on
            opened = await self.runtime.call("gateway.open_session", {"session_id": session_id}, GATEWAY)
        grant = GatewayGrant(session_id, Path(socket_path), TOKEN_PREFIX + secrets.token_urlsafe(32))
        session = _Session(
            grant, adapter, api, route, str(opened["run_id"]), str(opened["task_id"]), str(opened["day"])
        )
        with contextlib.suppress(FileNotFoundError):  # a stale socket of an earlier owner
            if Path(socket_path).is_socket():  # noqa: ASYNC240 - one stat in a private directory
                Path(socket_path).unlink()  # noqa: ASYNC240

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve(session, reader, writer)

        session.server = await asyncio.start_unix_server(serve, path=str(socket_path))
        os.chmod(socket_path, 0o600)
        if owner_uid >= 0:
            os.chown(socket_path, owner_uid, -1)
        self._sessions[session_id] = session
        return grant

    async def close_session(self, session_id: str) -> None:
        """Revoke the session's token, stop listening, cut its connections (unknown: no-op)."""
        session = self._sessions.pop(session_id, None)
        if session is None:
            return
        session.closed = True
        if session.server is not None:
            session.server.close()
        for task in list(session.connections):
            task.cancel()
        for task in list(session.connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._written(session)  # its last usage is written, never cut mid-transaction
        if session.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(session.server.wait_closed(), 2)
        with contextlib.suppress(OSError):
            session.grant.socket_path.unlink()

    def serves(self, session_id: str) -> bool:
        return session_id in self._sessions

    # --- one connection ----------------------------------------------------------------------------

    async def _serve(self, session: _Session, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if session.closed:
            writer.close()
            return
        session.connections.add(task)
        peer = Peer(reader, writer)
        try:
            while not session.closed:
                try:
                    request = await peer.request()
                except TooLarge:
                    await peer.respond(413, _TEXT, b"roundtable gateway: the request body is too large\n")
                    break
                if request is None:
                    break
                if request.method == "CONNECT":
                    await self._connect(session, peer, request)
                    break
                await self._dispatch(session, peer, request)
                if not peer.next_cycle():
                    break
        except PeerGone:
            pass
        except asyncio.CancelledError:
            pass  # the session was closed: this task is the connection's own, nothing awaits it
        except Exception:
            log.exception("the gateway failed serving session %s", session.grant.session_id)
        finally:
            session.connections.discard(task)
            with contextlib.suppress(asyncio.CancelledError):
                await peer.close()

    async def _dispatch(self, session: _Session, peer: Peer, request: Request) -> None:
        target = request.target
        if target.startswith("/"):
            prefix = target[1:].split("/", 1)[0].split("?", 1)[0]
            if prefix in DEFAULT_UPSTREAMS:
                await self._model(session, peer, request, prefix)
                return
            await peer.respond(404, _TEXT, b"roundtable gateway: the model APIs are under /anthropic/ and /openai/\n")
            return
        if target.lower().startswith("http://"):
            await self._forward_http(session, peer, request)
            return
        await peer.respond(400, _TEXT, b"roundtable gateway: use CONNECT for https\n")

    # --- the model APIs --------------------------------------------------------------------------

    async def _model(self, session: _Session, peer: Peer, request: Request, api: str) -> None:
        self.stats.model_requests += 1
        if api != session.api:
            served = f"the {session.api} API only" if session.api else "no model API"
            await _vendor_error(peer, api, 403, "permission_error", f"this session's gateway serves {served}")
            return
        if not _token_matches(request, session.grant.token):
            await _vendor_error(
                peer, api, 401, "authentication_error", "the roundtable gateway token is not this session's"
            )
            return
        reason = await self._budget_reached(session)
        if reason:
            shown = "budget reached: " + reason.removeprefix(budgets.REASON_PREFIX).strip()
            await self._record(
                "gateway.record_budget_refused", {"session_id": session.grant.session_id, "reason": reason}
            )
            await _vendor_error(peer, api, 400, "invalid_request_error", shown, code="budget_reached")
            self._ask_stop(session, "budget", reason)
            return
        route = session.route
        assert route is not None  # a session with a model API has its route
        credential = _operator_credential(route.credentials)
        if route.problem or (route.credentials and credential is None):
            names = " or ".join(route.credentials)
            message = route.problem or f"{preflight.NO_CREDENTIAL} (set {names} for the owner)"
            await self._credential_refused(session, api, 0, message, message)
            await _vendor_error(peer, api, 401, "authentication_error", message)
            return
        rest = request.target[len(api) + 1 :]
        url = route.url(rest)
        headers = [(k, v) for k, v in request.headers if k not in _HOP and k not in _CREDENTIAL_HEADERS]
        headers.append(("accept-encoding", "identity"))  # the answer is metered as it passes
        if credential is not None:
            headers.append(credential)
        response = await self._send_with_retries(peer, api, request.method, url, headers, request.body)
        if response is None:
            return
        try:
            if response.status_code in REFUSED_CREDENTIAL_STATUSES:
                upstream_message = _error_message(await _read_bounded(response))
                shown = preflight.credential_refused(response.status_code, upstream_message)
                await self._credential_refused(session, api, response.status_code, upstream_message, shown)
                kind = "authentication_error" if response.status_code == 401 else "permission_error"
                await _vendor_error(peer, api, response.status_code, kind, shown)
                return
            path = rest.split("?", 1)[0].rstrip("/")
            metered = response.status_code < 300 and path in SPENDING_PATHS[api]
            await self._pass_on(session, peer, response, api, metered)
        finally:
            await response.aclose()

    async def _send_with_retries(
        self, peer: Peer, api: str, method: str, url: str, headers: list[tuple[str, str]], body: bytes
    ) -> httpx2.Response | None:
        """The upstream's answer (streaming, unread), after retrying a rate limit or overload the
        upstream asks to wait for; None when it could not be reached (answered here)."""
        assert self._client is not None
        attempt = 0
        while True:
            attempt += 1
            request = self._client.build_request(method, url, headers=headers, content=body)
            try:
                response = await self._client.send(request, stream=True)
            except httpx2.HTTPError as exc:
                wait = _backoff(attempt)
                if attempt < self.retry_attempts and isinstance(exc, httpx2.TransportError):
                    self.stats.retried += 1
                    await asyncio.sleep(wait)
                    continue
                log.warning("the model API at %s could not be reached: %s", url, exc)
                await _vendor_error(
                    peer,
                    api,
                    502,
                    "api_error",
                    f"the roundtable gateway could not reach the model API ({type(exc).__name__})",
                )
                return None
            if response.status_code not in RETRY_STATUSES or attempt >= self.retry_attempts:
                return response
            asked = _retry_after(response.headers)
            wait = _backoff(attempt) if asked is None else asked
            if wait > self.max_retry_wait:
                return response  # the harness hears it and decides
            await response.aclose()
            self.stats.retried += 1
            log.info("the model API answered %s; retrying in %.1fs (attempt %d)", response.status_code, wait, attempt)
            await asyncio.sleep(wait)

    async def _pass_on(self, session: _Session, peer: Peer, response: httpx2.Response, api: str, metered: bool) -> None:
        """The answer to the harness as it arrives; its usage recorded once it has passed (or
        once the harness went away: what had passed is counted)."""
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _RESPONSE_DROP]
        meter = None
        if metered:
            streamed = "text/event-stream" in response.headers.get("content-type", "")
            meter = WireMeter(api, streamed=streamed)
            session.answering += 1
        try:
            await peer.start(response.status_code, headers)
            async for chunk in response.aiter_raw():
                if meter is not None:
                    meter.feed(chunk)
                await peer.send(chunk)
            await peer.end()
        finally:
            if meter is not None:
                try:
                    measured = meter.result()
                    if measured is not None:
                        await self._record_usage(session, measured)
                finally:
                    session.answering -= 1
                    async with session.counted:
                        session.counted.notify_all()

    async def _record_usage(self, session: _Session, measured: Measured) -> None:
        """Count one answer's usage. It is written by the session's writer task, not on the
        connection's way to its next request: answers that arrive while a write is waiting or in
        flight are summed into the next write. A budget check waits for what is unwritten."""
        if measured.problems:
            self.stats.usage_problems += 1
            log.warning(
                "usage of session %s from the model API was bounded: %s",
                session.grant.session_id,
                "; ".join(measured.problems[:5]),
            )
        for i, value in enumerate((measured.input_tokens, measured.cached_input_tokens, measured.output_tokens)):
            session.unwritten[i] += value
        session.unwritten_model = measured.model or session.unwritten_model
        if session.writer is None or session.writer.done():
            session.write_now.clear()
            session.writer = asyncio.get_running_loop().create_task(
                self._write_usage(session), name=f"gateway-usage:{session.grant.session_id}"
            )
            self._writes.add(session.writer)
            session.writer.add_done_callback(self._writes.discard)

    async def _write_usage(self, session: _Session) -> None:
        if not self._budgets_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(session.write_now.wait(), self.write_interval)
        while any(session.unwritten):
            spent, session.unwritten = session.unwritten, [0, 0, 0]
            model = "" if session.unwritten_model == session.written_model else session.unwritten_model
            try:
                await self.runtime.call(
                    "gateway.record_usage",
                    {
                        "session_id": session.grant.session_id,
                        "input_tokens": min(spent[0], REQUEST_TOKENS_MAX),
                        "cached_input_tokens": min(spent[1], REQUEST_TOKENS_MAX),
                        "output_tokens": min(spent[2], REQUEST_TOKENS_MAX),
                        "model": model,
                    },
                    GATEWAY,
                )
                session.written_model = model or session.written_model
            except Exception:
                log.exception("recording the usage of session %s failed", session.grant.session_id)

    async def flushed(self, session_id: str) -> None:
        """Wait until the session's measured usage is written (tests, the bench)."""
        session = self._sessions.get(session_id)
        if session is not None:
            await self._written(session)

    async def _written(self, session: _Session) -> None:
        """Write the session's measured usage now, and wait until it is written."""
        session.write_now.set()
        if session.writer is not None and not session.writer.done():
            await asyncio.shield(session.writer)

    def _budgets_set(self) -> bool:
        config = self.runtime.config.budgets
        return config.task.limited or config.run.limited or config.day.limited

    async def _budget_reached(self, session: _Session) -> str:
        """Why the session may not spend more (a reached budget's reason), or ''."""
        config = self.runtime.config.budgets
        if not self._budgets_set():
            return ""
        if session.answering:  # an answer the harness has read may not be counted yet
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ANSWERS_SETTLE_S), session.counted:
                    await session.counted.wait_for(lambda: session.answering == 0)
        await self._written(session)  # what it has spent so far counts
        async with self.runtime.db.read() as r:
            found = await budgets.reached(r, config, task_id=session.task_id, run_id=session.run_id, day=session.day)
            today = budgets.today()
            if not found and today != session.day:
                found = await budgets.reached(r, config, day=today)
        return found[0].reason if found else ""

    async def _credential_refused(self, session: _Session, api: str, status: int, upstream: str, shown: str) -> None:
        await self._record(
            "gateway.record_credential_refused",
            {"session_id": session.grant.session_id, "api": api, "status": status, "message": upstream[:2000]},
        )
        self._ask_stop(session, "credential_refused", shown)

    # --- the forward proxy -----------------------------------------------------------------------

    def refusal(self, host: str, port: int, session: _Session | None = None) -> str:
        """Why a session may not connect to host:port ('' when it may)."""
        wanted = _normal_host(host)
        model_apis = [(api, self.upstream(api)) for api in DEFAULT_UPSTREAMS]
        if session is not None and session.route is not None:
            model_apis.append((session.api, session.route.base))
        for api, base in model_apis:
            parts = urlsplit(base)
            default = 443 if parts.scheme == "https" else 80
            if _normal_host(parts.hostname or "") == wanted and (parts.port or default) == port:
                return f"the {api} API is reached through the gateway's /{api}/ path, never directly"
        for entry in self.runtime.config.sessions.network.allow:
            allowed_host, _sep, allowed_port = entry.rpartition(":")
            if _normal_host(allowed_host) == wanted and int(allowed_port) == port:
                return ""
        return "not on sessions.network.allow"

    async def _refuse_connection(self, session: _Session, peer: Peer, host: str, port: int, reason: str) -> None:
        self.stats.refused_connections += 1
        await self._record(
            "gateway.record_connection_refused",
            {"session_id": session.grant.session_id, "host": host[:255], "port": port, "reason": reason},
        )
        text = f"roundtable gateway: {host}:{port} refused: {reason}\n"
        await peer.respond(403, _TEXT, text.encode())

    async def _connect(self, session: _Session, peer: Peer, request: Request) -> None:
        host, port = _authority(request.target, default_port=0)
        if not host or not 0 < port < 65536:
            await peer.respond(400, _TEXT, b"roundtable gateway: CONNECT needs host:port\n")
            return
        reason = self.refusal(host, port, session)
        if reason:
            await self._refuse_connection(session, peer, host, port, reason)
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(host, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            await peer.respond(502, _TEXT, f"roundtable gateway: {host}:{port} unreachable: {exc}\n".encode())
            return
        self.stats.tunnels += 1
        try:
            await peer.start(200, [])
            leftover = peer.tunnel_leftover()
            if leftover:
                up_writer.write(leftover)
            await asyncio.gather(_pipe(peer.reader, up_writer), _pipe(up_reader, peer.writer))
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(up_writer.wait_closed(), 2)

    async def _forward_http(self, session: _Session, peer: Peer, request: Request) -> None:
        parts = urlsplit(request.target)
        host = parts.hostname or ""
        try:
            port = parts.port or 80
        except ValueError:
            port = 0
        if not host or not 0 < port < 65536:
            await peer.respond(400, _TEXT, b"roundtable gateway: a proxy request needs http://host[:port]/path\n")
            return
        reason = self.refusal(host, port, session)
        if reason:
            await self._refuse_connection(session, peer, host, port, reason)
            return
        assert self._client is not None
        headers = [(k, v) for k, v in request.headers if k not in _HOP or k == "accept-encoding"]
        try:
            response = await self._client.send(
                self._client.build_request(request.method, request.target, headers=headers, content=request.body),
                stream=True,
            )
        except httpx2.HTTPError as exc:
            await peer.respond(
                502, _TEXT, f"roundtable gateway: {host}:{port} unreachable: {type(exc).__name__}\n".encode()
            )
            return
        try:
            await self._pass_on(session, peer, response, "", metered=False)
        finally:
            await response.aclose()

    # --- writes and hooks ----------------------------------------------------------------------

    async def _record(self, operation: str, args: dict[str, Any]) -> None:
        """One internal write, on a task of its own: a connection cut meanwhile (its session
        closed) never cancels a write transaction half done. A failure is logged, never the
        session's problem."""

        async def write() -> None:
            try:
                await self.runtime.call(operation, args, GATEWAY)
            except Exception:
                log.exception("the gateway's %s failed", operation)

        task = asyncio.get_running_loop().create_task(write(), name=f"gateway-write:{operation}")
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        await asyncio.shield(task)

    def _ask_stop(self, session: _Session, kind: str, message: str) -> None:
        if kind in session.stops or self.on_stop is None:
            session.stops.add(kind)
            return
        session.stops.add(kind)
        handler = self.on_stop
        stop = StopRequest(session.grant.session_id, kind, message)

        async def call() -> None:
            try:
                await handler(stop)
            except Exception:
                log.exception("stopping session %s (%s) failed", stop.session_id, kind)

        task = asyncio.get_running_loop().create_task(call(), name=f"gateway-stop:{stop.session_id}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)


# --- helpers -----------------------------------------------------------------------------------------

_TEXT = [("content-type", "text/plain; charset=utf-8")]


def _token_matches(request: Request, token: str) -> bool:
    presented = request.header("x-api-key")
    bearer = request.header("authorization")
    if not presented and bearer[:7].lower() == "bearer ":
        presented = bearer[7:].strip()
    return bool(presented) and hmac.compare_digest(presented.encode(), token.encode())


def _operator_credential(names: tuple[str, ...]) -> tuple[str, str] | None:
    """(header, value) of the first of the owner's variables `names` that is set."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            header = CREDENTIAL_HEADERS.get(name, "authorization")
            return header, value if header == "x-api-key" else f"Bearer {value}"
    return None


async def _vendor_error(peer: Peer, api: str, status: int, kind: str, message: str, *, code: str = "") -> None:
    """An error answer in the shape the API's own clients read and show."""
    if api == "openai":
        body: dict[str, Any] = {"error": {"message": message, "type": kind, "param": None, "code": code or kind}}
    else:
        body = {"type": "error", "error": {"type": kind, "message": message}}
    await peer.respond(status, [("content-type", "application/json")], json.dumps(body).encode())


async def _read_bounded(response: httpx2.Response) -> bytes:
    out = bytearray()
    async for chunk in response.aiter_raw():
        out += chunk
        if len(out) >= ERROR_BODY_MAX:
            break
    return bytes(out[:ERROR_BODY_MAX])


def _error_message(body: bytes) -> str:
    """The message of a vendor's error body (either shape), else its start as text."""
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body[:300].decode("utf-8", "replace").split())
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return " ".join(error["message"].split())[:300]
    if isinstance(error, str):
        return " ".join(error.split())[:300]
    return " ".join(body[:300].decode("utf-8", "replace").split())


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the upstream asks to wait (`retry-after-ms`, `retry-after` seconds or date)."""
    millis = headers.get("retry-after-ms", "")
    with contextlib.suppress(ValueError):
        if millis:
            return max(0.0, float(millis) / 1000)
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
        return max(0.0, seconds) if seconds == seconds else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _backoff(attempt: int) -> float:
    return min(8.0, 0.5 * 2 ** (attempt - 1))


def _normal_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _authority(target: str, *, default_port: int) -> tuple[str, int]:
    """(host, port) of `host:port` / `[v6]:port`; port `default_port` when absent, 0 when bad."""
    text = target.strip()
    if text.startswith("["):
        host, _sep, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, ""
    if not port_text:
        return host, default_port
    return host, int(port_text) if port_text.isdigit() else 0


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy bytes until the reader's end, then half-close the writer."""
    try:
        while True:
            data = await reader.read(RELAY_READ)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


__all__ = ["Gateway", "GatewayGrant", "StopHandler", "StopRequest"]
