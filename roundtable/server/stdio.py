"""The stdio bridge: NDJSON MCP on stdin/stdout ↔ Streamable HTTP on the running owner.

A pure message pump: every JSON-RPC message from the harness —
its own `initialize`, notifications and cancellations included — is POSTed to `/mcp`
unchanged; JSON or SSE replies go back to stdout one message per line; the GET stream relays
server-initiated messages. It never imports the MCP SDK (that import alone costs ~0.9 s),
never opens the database and writes nothing but protocol frames to stdout; diagnostics go to
stderr, one line each, and never contain the token.

What it guarantees:

- **Byte-exact framing.** Server-sent events are split only at CR, LF or CRLF (`httpx2`'s
  decoder; `str.splitlines` would also cut at U+2028, U+2029, U+0085 and friends). Every frame
  written to stdout is parsed first, is one line of valid JSON equal to what the owner sent, and
  carries U+2028/U+2029/U+0085 as `\\u` escapes so no line reader can split it.
- **It knows its project.** Before relaying anything it asks the owner's `/healthz` for its
  project id and refuses an owner of another project; the owner proves it knows the bridge's
  credential (a challenge), and only then is the credential sent — on a second `/healthz`, whose
  answer names the owner's root (told only to callers with a credential), which must be this
  very directory (a copied project carries the same id and credentials). The check is repeated
  after every lost connection.
- **It fails fast.** No owner at start → one stderr line naming the URL, the project and the fix,
  a JSON-RPC error for any request already read, exit 1 within about a second. An owner that
  was reachable and restarts mid-session is waited for (30 s) and the session re-opened.
- **Exactly one answer per request.** A request whose reply stream ends without a response is
  answered with a JSON-RPC error ("SSE stream ended without a response"), or — for read-only
  requests (read-only tools by their annotation, list methods) — sent once more after the
  owner is back.
- **Both protocol eras.** Handshake-era messages carry `Mcp-Session-Id` and the negotiated
  `MCP-Protocol-Version`; 2026-07-28 messages (their `_meta` names the version) carry
  `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` as that transport requires, and their
  cancellation closes the request's stream.
- **Credentials.** `Authorization: Bearer` with the project's credential (read by the caller
  from `.roundtable/credentials/`); a 401 ends the bridge with one line naming the credential
  and the fix.
- **Pushes survive a restart.** Server-initiated messages (resource updates, log messages,
  list changes) arrive on the GET stream and are relayed as they come. The harness's
  `resources/subscribe` and `logging/setLevel` requests are remembered and sent again (their
  answers swallowed) when a restarted owner gives the bridge a new session, so the harness
  keeps receiving what it asked for.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

# The HTTP client the MCP SDK itself uses (one client stack in the project); its server-sent
# events decoder splits only at CR, LF and CRLF.
import httpx2

from roundtable.server.oneshot import is_loopback

PREFIX = "roundtable mcp stdio: "
UNAVAILABLE = "coordinator endpoint unavailable"
NO_RESPONSE = "SSE stream ended without a response"
CONNECTION_CLOSED = -32000  # the SDK's code for a request whose transport went away
INTERNAL_ERROR = -32603
PROTOCOL_HEADER = "mcp-protocol-version"
SESSION_HEADER = "mcp-session-id"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
PROJECT_HEADER = "roundtable-project"
VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
# Handshake-era versions use `initialize` and sessions; anything else named in a request's
# `_meta` is a per-request (2026-07-28 style) version.
HANDSHAKE_VERSIONS = frozenset({"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"})
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# Requests that change nothing, so sending one again after a lost stream is harmless.
IDEMPOTENT_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
    }
)
RETRY_WINDOW = 30.0
CONNECT_WAIT = 0.75
MAX_REPLAYED = 256  # subscriptions remembered for a new session
_SEPARATORS = re.compile("[\u2028\u2029\x85]")
_HEADER_SAFE = re.compile(r"^[\x20-\x7e]*$")
_B64_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")


class BridgeError(Exception):
    """A start-up problem; the message is the one-line reason printed to stderr."""


class Fatal(Exception):
    """The bridge cannot go on (wrong project, refused credential)."""


class Unreachable(Fatal):
    """Nothing answers at the owner's address (fatal at start; mid-session the request fails)."""


_KIND_QUERY = re.compile(r"tools=[a-z]{1,32}")


def check_url(url: str, *, token: str, uds: str = "") -> str:
    """Validate the endpoint; returns it unchanged."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        raise BridgeError("MCP HTTP endpoint must be an http(s) URL") from None
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        raise BridgeError("MCP HTTP endpoint must be an http(s) URL")
    # The one query the endpoint reads: the kind of session, which names its tool listing.
    if parts.fragment or (parts.query and not _KIND_QUERY.fullmatch(parts.query)):
        raise BridgeError("MCP HTTP endpoint must be an http(s) URL")
    if token and not uds and parts.scheme == "http" and not is_loopback(host):
        raise BridgeError("bearer authentication requires HTTPS except for loopback endpoints")
    return url


def health_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/healthz", "", ""))


def encode_header_value(value: str) -> str:
    """An `Mcp-Name` value as the 2026-07-28 transport spells it: printable ASCII verbatim,
    anything else base64 in a `=?base64?…?=` sentinel."""
    if _HEADER_SAFE.match(value) and value == value.strip() and not _B64_SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


CHALLENGE_HEADER = "roundtable-challenge"
CREDENTIAL_HEADER = "roundtable-credential"
PROOF_HEADER = "roundtable-proof"


def credential_id(token_digest: str) -> str:
    """A public name for a credential: a hash of its stored sha256 (which itself stays secret)."""
    return hashlib.sha256(token_digest.encode("ascii")).hexdigest()[:32]


def credential_proof(token_digest: str, challenge: str, project_id: str) -> str:
    """What an owner answers to `challenge` when it holds the credential whose sha256 is
    `token_digest`: only the owner's database (and the credential's holder) can compute it."""
    message = f"{challenge}:{project_id}".encode()
    return hmac.new(token_digest.encode("ascii"), message, hashlib.sha256).hexdigest()


def frame(data: str) -> tuple[bytes, Any] | None:
    """One stdout line for an upstream message and its value, or None when it is not JSON.

    The text is kept as the owner sent it when it is already one line; U+2028, U+2029 and
    U+0085 (legal raw inside JSON strings, and nowhere else) become escapes so line readers
    that split on them cannot cut a frame.
    """
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if "\n" in data or "\r" in data:
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    data = data.strip()
    if _SEPARATORS.search(data):
        data = _SEPARATORS.sub(lambda m: f"\\u{ord(m.group()):04x}", data)
    return data.encode("utf-8") + b"\n", value


def _id_key(value: Any) -> str:
    """Request ids compare by JSON type and value ("1" is not 1)."""
    return json.dumps(value, sort_keys=True)


@dataclass
class Identity:
    """What the bridge expects of the owner: this project's id (when known) and root."""

    root: str
    project_id: str | None

    def check(self, url: str, body: Any) -> None:
        """Raise `Fatal` unless the `/healthz` body names this project."""
        if not isinstance(body, dict) or not isinstance(body.get("project_id"), str):
            raise Fatal(
                f"{health_url(url)} is not a roundtable owner that states its project; "
                f"stop whatever holds that address or set mcp.http_address in {self.root}/.roundtable/config.yaml"
            )
        theirs = str(body.get("root") or "?")
        if not self.same_project(body["project_id"], theirs):
            # Another project's owner names its root only to its own callers: its id is all there is.
            whose = f"project {theirs}" if "root" in body else f"another project (project id {body['project_id']})"
            raise Fatal(
                f"the owner at {url} serves {whose}, not {self.root}; give each project its own "
                f"mcp.http_address in .roundtable/config.yaml (or start this project's owner: "
                f"roundtable start --root {self.root})"
            )

    def same_project(self, their_id: str, their_root: str) -> bool:
        """The owner must state this project's id (when this side knows it), and if its root is
        visible here it must be this very directory: a copied project carries the same id."""
        if self.project_id is not None and their_id != self.project_id:
            return False
        if os.path.isdir(their_root):
            try:
                return os.path.samefile(their_root, self.root)
            except OSError:
                return False
        return self.project_id is not None  # a root not visible here (a container): the id decides


class StdinLines:
    """Lines of a file descriptor read by a daemon thread (pipes, files and ttys alike).

    Raw `os.read` on the descriptor, not the buffered `sys.stdin`: a daemon thread blocked
    inside a buffered reader aborts the interpreter at exit. Lines end at LF only (NDJSON).
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

    def ready(self) -> list[bytes | None]:
        """The lines already read (without waiting)."""
        out: list[bytes | None] = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out


@dataclass
class _Pending:
    """One harness request waiting for its answer."""

    id: Any
    method: str
    modern: bool
    task: asyncio.Task[None] | None = None


class _StreamBroken(Exception):
    """The reply stream of a POST ended (or broke) after the request was sent."""


class Bridge:
    """One harness connection relayed to one owner endpoint."""

    def __init__(
        self,
        url: str,
        *,
        token: str = "",
        uds: str = "",
        identity: Identity | None = None,
        credential_hint: str = "",
        credential_fix: str = "",
        out: IO[bytes] | None = None,
        err: Callable[[str], None] | None = None,
        connect_wait: float = CONNECT_WAIT,
        retry_window: float = RETRY_WINDOW,
    ) -> None:
        self.url = check_url(url, token=token, uds=uds)
        self._identity = identity
        self._credential_hint = credential_hint
        self._credential_fix = credential_fix
        self._out = out if out is not None else sys.stdout.buffer
        self._err = err or (lambda text: print(PREFIX + text, file=sys.stderr, flush=True))
        self._connect_wait = connect_wait
        self._retry_window = retry_window
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        # The credential goes only on requests to /mcp, after the owner proved to be this
        # project's (never on the /healthz probe that decides that).
        self._auth = {"authorization": f"Bearer {token}"} if token else {}
        self._token_digest = hashlib.sha256(token.encode("utf-8")).hexdigest() if token else ""
        # TCP_NODELAY: without it a request's header and body writes wait on delayed ACKs (~40 ms).
        nodelay = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        # Plain http needs no CA bundle; loading one costs tens of milliseconds at start-up.
        verify = urlsplit(url).scheme == "https"
        transport = httpx2.AsyncHTTPTransport(uds=uds or None, verify=verify, socket_options=None if uds else nodelay)
        self.client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(connect=5.0, read=None, write=30.0, pool=None),
            follow_redirects=False,
            transport=transport,
            verify=verify,
            trust_env=False,
        )
        self.session_id = ""
        self.protocol_version = ""
        self.modern_version = ""
        # Until the start-up probe: no credential leaves the process (see `_headers`).
        self._verified = False
        self._uds = uds
        self._verify_lock = asyncio.Lock()
        self._init_message: bytes | None = None
        self._init_id: Any = None
        self._initialized_sent = False
        self._reinit_lock = asyncio.Lock()
        self._reinits = 0
        self._get_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[str, _Pending] = {}
        self._read_only_tools: set[str] = set()
        # Session state the harness set up, sent again after a re-initialisation.
        self._replay: dict[str, bytes] = {}
        self._closing = False
        self._fatal: asyncio.Future[str] | None = None

    # --- output -----------------------------------------------------------------------------

    def _emit(self, line: bytes) -> None:
        try:
            self._out.write(line)
            self._out.flush()
        except (BrokenPipeError, ValueError, OSError):
            self._closing = True  # the harness is gone; nothing more to say

    def _error_reply(self, msg_id: Any, code: int, message: str) -> None:
        """Answer a pending request with a JSON-RPC error (once; later answers are dropped)."""
        if msg_id is None or self._pending.pop(_id_key(msg_id), None) is None:
            return
        body = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        self._emit(json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode() + b"\n")

    def _answered(self, msg_id: Any) -> bool:
        return _id_key(msg_id) not in self._pending

    def _relay(self, data: str, *, request_id: Any = None) -> None:
        """Relay one upstream message (after checking it is JSON), noting what it answers."""
        if not data.strip():
            return
        framed = frame(data)
        if framed is None:
            self._err("dropped a message from the owner that is not JSON")
            return
        line, msg = framed
        if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
            if msg.get("id") is None:
                if request_id is None:
                    return  # a refused notification (or junk): JSON-RPC owes it no reply
                # A transport-level refusal (no id) answers the request this POST carried.
                msg["id"] = request_id
                line = json.dumps(msg, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
            entry = self._pending.pop(_id_key(msg.get("id")), None)
            if entry is None and msg.get("id") is not None:
                return  # a second answer (after a retry) or one nobody asked for
            if entry is not None:
                self._learn(entry, msg)
        self._emit(line)

    def _learn(self, entry: _Pending, msg: dict[str, Any]) -> None:
        """Remember the negotiated version and which tools are read-only."""
        result = msg.get("result")
        if not isinstance(result, dict):
            return
        if entry.method == "initialize" and not entry.modern:
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
        elif entry.method == "tools/list":
            for tool in result.get("tools") or ():
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    annotations = tool.get("annotations") or {}
                    if isinstance(annotations, dict) and annotations.get("readOnlyHint") is True:
                        self._read_only_tools.add(tool["name"])
                    else:
                        self._read_only_tools.discard(tool["name"])

    # --- the owner ----------------------------------------------------------------------------

    async def _health(self, *, authorized: bool = False) -> tuple[Any, str, str]:
        """GET /healthz once, challenging the owner to prove it knows our credential (or, when
        `authorized`, with the credential itself); returns (its JSON body or None, the challenge,
        the proof it gave)."""
        # Over a socket (no identity to check: the socket is the session's or the owner's own, in
        # a private directory) the credential goes on the probe too: a session endpoint accepts
        # nothing without it, and every launch logged a refused request.
        headers: dict[str, str] = dict(self._auth) if self._identity is None or authorized else {}
        challenge = ""
        if self._token_digest and self._identity is not None and not authorized:
            challenge = secrets.token_hex(16)
            headers = {CHALLENGE_HEADER: challenge, CREDENTIAL_HEADER: credential_id(self._token_digest)}
        resp = await self.client.get(health_url(self.url), headers=headers, timeout=2.0)
        try:
            body = resp.json()
        except ValueError:
            body = None
        return body, challenge, resp.headers.get(PROOF_HEADER, "")

    async def verify(self, wait: float | None = None) -> None:
        """Make sure the owner is up and serves this project; raises `Fatal` otherwise.

        Retries for `wait` seconds (default: the start-up wait) while nothing answers.
        """
        async with self._verify_lock:
            if self._verified:
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + (self._connect_wait if wait is None else wait)
            delay = 0.05
            while True:
                try:
                    body, challenge, proof = await self._health()
                    break
                except httpx2.TransportError:
                    if self._closing or loop.time() + delay > deadline:
                        raise Unreachable(self._no_owner()) from None
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 0.5)
            if self._identity is not None:
                self._identity.check(self.url, body)
                if challenge:
                    # The project id and root are public: a program squatting on the port can
                    # state them. Only the real owner can answer the challenge for our credential.
                    expected = credential_proof(self._token_digest, challenge, str(body["project_id"]))
                    if not hmac.compare_digest(proof.encode(), expected.encode()):
                        raise Fatal(
                            f"the owner at {self.url} does not know {self._credential_hint or 'the credential'} "
                            f"(revoked or replaced, or not this project's owner), so it was not sent"
                            + (f"; fix: {self._credential_fix}" if self._credential_fix else "")
                        )
                    # Proven: the credential may go to it now, and buys the owner's root (which
                    # tells this directory from a copy of it).
                    try:
                        body, _challenge, _proof = await self._health(authorized=True)
                    except httpx2.TransportError:
                        raise Unreachable(self._no_owner()) from None
                    self._identity.check(self.url, body)
            self._verified = True

    def _no_owner(self) -> str:
        if self._identity is None:
            where = f"the session socket {self._uds}" if self._uds else self.url
            return f"{UNAVAILABLE}: nothing answers at {where}"
        root = self._identity.root
        return (
            f"{UNAVAILABLE}: no roundtable owner answers at {self.url} for project {root}; "
            f"start one with: roundtable start --root {root}"
        )

    def _unauthorized(self) -> str:
        hint = self._credential_hint or "the credential"
        fix = f"; fix: {self._credential_fix}" if self._credential_fix else ""
        return f"the owner at {self.url} refused {hint}{fix}"

    def _headers(self, entry_modern: str = "") -> dict[str, str]:
        headers: dict[str, str] = dict(self._auth) if self._verified else {}
        if entry_modern:
            headers[PROTOCOL_HEADER] = entry_modern
            return headers
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[PROTOCOL_HEADER] = self.protocol_version
        return headers

    def _check_project(self, resp: httpx2.Response) -> None:
        if self._identity is None or self._identity.project_id is None:
            return
        stated = resp.headers.get(PROJECT_HEADER)
        if stated is not None and stated != self._identity.project_id:
            self._verified = False
            raise Fatal(
                f"the owner at {self.url} answered for project {stated}, not {self._identity.project_id} "
                f"({self._identity.root}); give each project its own mcp.http_address"
            )

    async def _post(
        self, raw: bytes, headers: dict[str, str], on_message: Callable[[str], None], *, modern: bool = False
    ) -> tuple[int, str | None]:
        """POST one message; returns (status, body of a non-SSE reply).

        Messages of an SSE reply go to `on_message` as they arrive. Raises `httpx2.ConnectError`
        and friends when the request was never delivered and `_StreamBroken` when the reply
        broke off after it was.
        """
        async with self.client.stream("POST", self.url, content=raw, headers=headers) as resp:
            self._check_project(resp)
            sid = resp.headers.get(SESSION_HEADER)
            if sid and not modern:
                self.session_id = sid
            if resp.status_code in (202, 401):
                return resp.status_code, None
            try:
                if resp.headers.get("content-type", "").startswith("text/event-stream"):
                    async for event in _sse(resp):
                        if event.data:  # priming events and keep-alives carry no message
                            on_message(event.data)
                    return resp.status_code, None
                return resp.status_code, (await resp.aread()).decode("utf-8", "replace")
            except (httpx2.ReadError, httpx2.RemoteProtocolError, httpx2.ReadTimeout, httpx2.SSEError) as exc:
                raise _StreamBroken(type(exc).__name__) from None

    def _retryable(self, msg: dict[str, Any]) -> bool:
        method = msg.get("method")
        if method in IDEMPOTENT_METHODS:
            return True
        if method == "tools/call":
            params = msg.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            return isinstance(name, str) and name in self._read_only_tools
        return False

    def _modern_version(self, msg: Any) -> str:
        """The per-request protocol version a message names in its `_meta` ('' if none)."""
        if not isinstance(msg, dict):
            return ""
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        version = meta.get(VERSION_META_KEY) if isinstance(meta, dict) else None
        if isinstance(version, str) and version and version not in HANDSHAKE_VERSIONS:
            return version
        return ""

    def _request_headers(self, msg: Any, modern: str) -> dict[str, str]:
        if not modern:
            return self._headers()
        headers = self._headers(modern)
        method = msg.get("method") if isinstance(msg, dict) else None
        if isinstance(method, str):
            headers[METHOD_HEADER] = method
            key = NAME_BEARING.get(method)
            params = msg.get("params")
            value = params.get(key) if key and isinstance(params, dict) else None
            if isinstance(value, str):
                headers[NAME_HEADER] = encode_header_value(value)
        return headers

    async def forward(self, raw: bytes, msg: Any) -> None:
        """Send one harness message upstream and relay what comes back; never raises."""
        try:
            await self._forward(raw, msg)
        except Fatal as exc:
            self.fail(str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug must not leave a request unanswered
            msg_id = msg.get("id") if isinstance(msg, dict) else None
            self._error_reply(msg_id, INTERNAL_ERROR, f"roundtable bridge failed: {type(exc).__name__}")

    async def _forward(self, raw: bytes, msg: Any) -> None:
        is_dict = isinstance(msg, dict)
        msg_id = msg.get("id") if is_dict else None
        method = msg.get("method") if is_dict else None
        is_request = isinstance(method, str) and msg_id is not None
        modern = self._modern_version(msg)
        if modern:
            self.modern_version = modern
        elif is_dict and self.modern_version and not is_request and not self.session_id:
            modern = self.modern_version  # a notification in a modern conversation
        is_init = method == "initialize" and is_request
        if is_init:
            self._init_message, self._init_id = raw, msg_id
            self.session_id, self.protocol_version = "", ""
            self._replay.clear()
        elif is_request and not modern:
            self._remember(method, msg)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._retry_window
        delay = 0.1
        retried_session = False
        resent = False
        while True:
            try:
                if not self._verified:
                    await self.verify(max(0.0, deadline - loop.time()))
                status, body = await self._post(
                    raw,
                    self._request_headers(msg, modern),
                    lambda data: self._relay(data, request_id=msg_id),
                    modern=bool(modern),
                )
            except Unreachable as exc:
                self._error_reply(msg_id, CONNECTION_CLOSED, str(exc))
                return
            except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout):
                # Never delivered: safe to send again once the owner is back.
                self._verified = self._identity is None
                if self._closing or loop.time() + delay > deadline:
                    self._error_reply(msg_id, CONNECTION_CLOSED, self._no_owner())
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            except (_StreamBroken, httpx2.TransportError):
                status, body = 0, None
                self._verified = self._identity is None
            if status == 401:
                raise Fatal(self._unauthorized())
            if status == 404 and self.session_id and not is_init and not modern and not retried_session:
                # The owner restarted and forgot the session: open a new one and resend.
                retried_session = True
                if await self._reinitialise():
                    continue
            if status == 202 and method == "notifications/initialized":
                self._initialized_sent = True
                self._start_get_stream()
            if body is not None and body.strip():
                if frame(body) is not None:
                    self._relay(body, request_id=msg_id)
                elif status >= 400:
                    self._error_reply(msg_id, INTERNAL_ERROR, f"coordinator answered HTTP {status}")
            if not is_request or self._answered(msg_id):
                return
            if status >= 400:
                self._error_reply(msg_id, INTERNAL_ERROR, f"coordinator answered HTTP {status}")
                return
            # A request whose reply ended without its answer.
            if not resent and is_dict and self._retryable(msg) and not self._closing:
                resent = True
                deadline = loop.time() + self._retry_window
                self._err(f"the owner's reply to {method} broke off; sending it once more")
                continue
            self._error_reply(msg_id, CONNECTION_CLOSED, NO_RESPONSE)
            return

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
            replies: list[str] = []
            try:
                init = json.loads(self._init_message)
                init["id"] = f"roundtable-bridge-reinit-{self._reinits}"
                status, body = await self._post(json.dumps(init).encode(), self._headers(), replies.append)
                if status >= 400 or not self.session_id:
                    return False
                if body:
                    replies.append(body)
                for data in replies:
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        version = json.loads(data)["result"]["protocolVersion"]
                self.protocol_version = version
                if self._initialized_sent:
                    note = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
                    await self._post(note, self._headers(), replies.append)
                    self._start_get_stream()
                    await self._replay_state()
            except (httpx2.TransportError, _StreamBroken):
                return False
            self._err("owner restarted; reconnected with a new session")
            return True

    async def _reopen(self) -> None:
        await self._reinitialise()

    def _remember(self, method: Any, msg: dict[str, Any]) -> None:
        """Note a request that sets up session state on the owner (subscriptions, log level)."""
        params = msg.get("params")
        target = params.get("uri") if isinstance(params, dict) else None
        if method == "resources/subscribe" and isinstance(target, str):
            if f"sub:{target}" in self._replay or len(self._replay) < MAX_REPLAYED:
                self._replay[f"sub:{target}"] = json.dumps(msg).encode()
        elif method == "resources/unsubscribe" and isinstance(target, str):
            self._replay.pop(f"sub:{target}", None)
        elif method == "logging/setLevel":
            self._replay["level"] = json.dumps(msg).encode()

    async def _replay_state(self) -> None:
        """Send the remembered subscriptions and log level on the new session (answers dropped:
        the harness was answered the first time)."""
        for number, raw in enumerate(list(self._replay.values()), 1):
            msg = json.loads(raw)
            msg["id"] = f"roundtable-bridge-replay-{self._reinits}-{number}"
            with contextlib.suppress(httpx2.TransportError, _StreamBroken):
                await self._post(json.dumps(msg).encode(), self._headers(), lambda data: None)

    def _start_get_stream(self) -> None:
        if self._get_task is not None and not self._get_task.done():
            self._get_task.cancel()
        self._get_task = asyncio.create_task(self._get_stream(self.session_id))

    async def _get_stream(self, session: str) -> None:
        """Relay server-initiated messages; reconnect with back-off while the session lives."""
        delay = 0.1
        while not self._closing and self.session_id == session:
            try:
                if not self._verified:
                    await self.verify(self._retry_window)
                headers = {**self._headers(), "accept": "text/event-stream"}
                async with self.client.stream("GET", self.url, headers=headers) as resp:
                    self._check_project(resp)
                    if resp.status_code == 404 and self._replay and not self._closing:
                        # A restarted owner forgot the session while the harness sits waiting
                        # for pushes (no POST would notice): open a new one now.
                        task = asyncio.create_task(self._reopen())
                        self._tasks.add(task)
                        task.add_done_callback(self._tasks.discard)
                        return
                    if resp.status_code != 200:
                        return  # 405: no stream offered; 404: the POST path re-initialises
                    delay = 0.1
                    async for event in _sse(resp):
                        if event.data:
                            self._relay(event.data)
            except Unreachable:
                pass
            except Fatal as exc:
                self.fail(str(exc))
                return
            except (httpx2.TransportError, httpx2.SSEError):
                self._verified = self._identity is None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    # --- main loop --------------------------------------------------------------------------

    def fail(self, line: str) -> None:
        """End the bridge with `line` on stderr (the first reason wins)."""
        if self._fatal is not None and not self._fatal.done():
            self._fatal.set_result(line)

    def _answer_all(self, message: str) -> None:
        for entry in list(self._pending.values()):
            if entry.task is not None:
                entry.task.cancel()
            self._error_reply(entry.id, CONNECTION_CLOSED, message)

    def _accept(self, line: bytes) -> tuple[bytes, Any] | None:
        """Parse one stdin line; answers a parse error itself (returns None then)."""
        line = line.strip()
        if not line:
            return None
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            self._emit(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n')
            return None
        if isinstance(msg, dict) and isinstance(msg.get("method"), str) and msg.get("id") is not None:
            key = _id_key(msg["id"])
            if key not in self._pending:
                self._pending[key] = _Pending(msg["id"], msg["method"], bool(self._modern_version(msg)))
        return line, msg

    def _cancel_modern(self, msg: Any) -> bool:
        """A 2026-07-28 cancellation closes the request's own stream instead of being sent."""
        if not isinstance(msg, dict) or msg.get("method") != "notifications/cancelled":
            return False
        params = msg.get("params")
        target = params.get("requestId") if isinstance(params, dict) else None
        entry = self._pending.get(_id_key(target)) if target is not None else None
        if entry is None or not entry.modern:
            return False
        self._pending.pop(_id_key(target), None)  # a cancelled request is owed no answer
        if entry.task is not None:
            entry.task.cancel()
        return True

    async def _dispatch(self, raw: bytes, msg: Any) -> None:
        if self._cancel_modern(msg):
            return
        if isinstance(msg, dict) and msg.get("method") in ("initialize", "notifications/initialized"):
            await self.forward(raw, msg)  # later messages need the session it creates
            return
        task = asyncio.create_task(self.forward(raw, msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if isinstance(msg, dict) and msg.get("id") is not None:
            entry = self._pending.get(_id_key(msg["id"]))
            if entry is not None:
                entry.task = task

    async def run(self, lines: StdinLines) -> int:
        """Pump until stdin EOF (exit 0); exit 1 with one stderr line when the bridge cannot go on."""
        loop = asyncio.get_running_loop()
        self._fatal = loop.create_future()
        try:
            try:
                await self.verify()
            except Fatal as exc:
                for line in lines.ready():
                    if line is not None:
                        self._accept(line)
                self.fail(str(exc))
            while not self._fatal.done():
                getter = asyncio.ensure_future(lines.get())
                first: set[asyncio.Future[Any]] = {getter, self._fatal}
                await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break
                line = getter.result()
                if line is None:
                    while self._tasks and not self._fatal.done():
                        rest: set[asyncio.Future[Any]] = {*self._tasks, self._fatal}
                        await asyncio.wait(rest, return_when=asyncio.FIRST_COMPLETED)
                    break
                accepted = self._accept(line)
                if accepted is not None:
                    await self._dispatch(*accepted)
            if self._fatal.done():
                reason = self._fatal.result()
                self._answer_all(reason)
                self._err(reason)
                return 1
            return 0
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        self._closing = True
        tasks = [t for t in (self._get_task, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        if self.session_id and self._verified:
            with contextlib.suppress(httpx2.HTTPError):
                await self.client.delete(self.url, headers=self._headers(), timeout=2.0)
        await self.client.aclose()


def _sse(response: httpx2.Response) -> httpx2.EventSource:
    """The events of an SSE reply, without a size limit per event: the owner already bounds what
    it sends, and a `repo.read_file` answer may be larger than the decoder's default 1 MiB."""
    return httpx2.EventSource(response, max_event_size=None)


async def events(response: httpx2.Response) -> AsyncIterator[str]:
    """The `data` of each server-sent event of `response` (for tests and tools)."""
    async for event in _sse(response):
        if event.data:
            yield event.data


def main(
    url: str,
    *,
    token: str = "",
    uds: str = "",
    identity: Identity | None = None,
    credential_hint: str = "",
    credential_fix: str = "",
) -> int:
    """Run the bridge on this process's stdin/stdout; returns the exit status."""
    try:
        bridge_url = check_url(url, token=token, uds=uds)
    except BridgeError as exc:
        print(PREFIX + str(exc), file=sys.stderr, flush=True)
        return 1

    async def go() -> int:
        bridge = Bridge(
            bridge_url,
            token=token,
            uds=uds,
            identity=identity,
            credential_hint=credential_hint,
            credential_fix=credential_fix,
        )
        return await bridge.run(StdinLines(sys.stdin.fileno()))

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        return 0
