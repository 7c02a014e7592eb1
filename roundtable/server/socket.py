"""The legacy Unix socket: one JSON request per connection, one JSON line back.

Framing (byte-compatible with the reference): read to the first `\\n`
or EOF, trim ASCII whitespace, an empty line closes without a reply, the line must be exactly
one JSON value `{"tool", "args"}` (keys matched case-insensitively, the last match wins,
unknown keys ignored, `null` args → `{}`), and the reply is `{"ok":…,"result":…,"error":…}`
with empty fields omitted. Hardening: a request-line cap, a read deadline, a
bound on concurrent connections, a 0700 directory and a 0600 socket, a peer check (same uid, and the owner's
own PID and user namespaces: a sandboxed process is never the operator), and a
start-up that removes only a confirmed stale socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import socket
import stat
import struct
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable.errors import RoundtableError, ToolError
from roundtable.tools.context import Caller

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.server.socket")

SOCKET_CALLER = Caller("operator", "socket")
SOCKET_GUARD = Caller("internal", "socket")  # records refused peers
STALE_PROBE_TIMEOUT = 0.2
_WHITESPACE = b" \t\r\n"
_CHUNK = 64 * 1024
# sockaddr_un.sun_path holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107
_MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


class SocketError(RoundtableError):
    """The legacy socket could not be started."""


class RequestError(Exception):
    """The request line could not be decoded into an envelope."""


class _Pairs(dict):  # type: ignore[type-arg]
    """A JSON object that also remembers its members in document order (for key matching)."""

    pairs: list[tuple[str, Any]]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(pairs)
    obj.pairs = pairs
    return obj


class StrictJSONError(ValueError):
    """Text that strict JSON refuses though Python's `json` would not (or would crash on)."""


def _parse_int(text: str) -> int:
    # Python refuses to convert more than sys.get_int_max_str_digits() digits (a bare ValueError
    # nobody expects from json.loads); no argument may hold such a number anyway.
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise StrictJSONError(f"a number has {digits} digits (at most {_MAX_INT_DIGITS})")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: Go's decoder refuses it as out of range, and so do we
        raise StrictJSONError(f"number {text[:32]} is out of range")
    return value


def _parse_constant(name: str) -> Any:
    # Python's json accepts NaN, Infinity and -Infinity; JSON (and the reference) does not.
    raise StrictJSONError(f"{name} is not valid JSON")


# Built once (a decoder is not free to build, and every request needs one).
_STRICT_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
# The request line's: its objects also remember their members in order.
_REQUEST_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant, object_pairs_hook=_pairs_hook
)
_RESPONSE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def loads_strict(text: str) -> Any:
    """`json.loads` that refuses what JSON and the reference's Go decoder refuse: NaN and
    ±Infinity, numbers out of float range, integers too long for Python to convert, and nesting
    too deep for the parser (each a `StrictJSONError`); syntax errors stay `JSONDecodeError`."""
    return _strict(_STRICT_DECODER, text)


def _strict(decoder: json.JSONDecoder, text: str) -> Any:
    try:
        return decoder.decode(text)
    except RecursionError:
        raise StrictJSONError("nesting too deep") from None


def decode_request(line: bytes) -> tuple[str, dict[str, Any]]:
    """The `(tool, args)` of one trimmed request line, or `RequestError` (strict JSON)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestError("invalid request: not UTF-8 text") from None
    try:
        value = _strict(_REQUEST_DECODER, text)
    except json.JSONDecodeError as exc:
        raise RequestError(f"invalid request: {exc.msg} at offset {exc.pos}") from None
    except ValueError as exc:  # StrictJSONError, or any other conversion the decoder refuses
        raise RequestError(f"invalid request: {str(exc)[:200]}") from None
    if value is None:
        return "", {}
    if not isinstance(value, _Pairs):
        raise RequestError(f"invalid request: expected a JSON object, got {_kind(value)}")
    tool: Any = None
    args: Any = None
    for key, member in value.pairs:  # Go's decoder: case-insensitive, last match wins
        folded = key.lower()
        if folded == "tool":
            tool = member
        elif folded == "args":
            args = member
    if tool is not None and not isinstance(tool, str):
        raise RequestError(f"invalid request: tool must be a string, got {_kind(tool)}")
    if args is not None and not isinstance(args, dict):
        raise RequestError(f"invalid request: args must be an object, got {_kind(args)}")
    return tool or "", dict(args) if args else {}


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "object"


def encode_response(ok: bool, result: dict[str, Any] | None = None, error: str = "") -> bytes:
    """One compact line; `result` omitted when empty, `error` omitted when empty."""
    body: dict[str, Any] = {"ok": ok}
    if ok and result:
        body["result"] = result
    if not ok and error:
        body["error"] = error
    return _RESPONSE_ENCODER.encode(body).encode("utf-8") + b"\n"


def peer_credentials(sock: socket.socket) -> tuple[int, int] | None:
    """The connected peer's (pid, uid) via SO_PEERCRED (None where unsupported); pid 0 when
    the peer's process is not visible from here."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:  # pragma: no cover - Linux has it
        return None
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    except OSError:
        return None
    pid, uid, _gid = struct.unpack("3i", data)
    return int(pid), int(uid)


def peer_uid(sock: socket.socket) -> int | None:
    """The connected peer's uid via SO_PEERCRED (None where unsupported)."""
    found = peer_credentials(sock)
    return None if found is None else found[1]


NAMESPACES = ("pid", "user")


def foreign_namespace(pid: int) -> str:
    """Why the process `pid` is not in this process's PID and user namespaces ("" when it
    is). Every sandboxed process is in namespaces of its own: same uid is not enough to be the
    operator. Fails closed: a peer whose namespaces cannot be read counts as foreign."""
    if pid <= 0:
        return "its process is not visible from the owner's PID namespace"
    ours = _own_namespaces()
    for kind in NAMESPACES:
        try:
            theirs = os.stat(f"/proc/{pid}/ns/{kind}")
        except OSError as exc:
            return f"its {kind} namespace cannot be read ({exc.strerror})"
        if (theirs.st_dev, theirs.st_ino) != ours.get(kind):
            return f"it runs in another {kind} namespace (a sandbox)"
    return ""


_OWN: dict[int, dict[str, tuple[int, int]]] = {}


def _own_namespaces() -> dict[str, tuple[int, int]]:
    """This process's namespaces (device, inode), read once per process (a kind that cannot be
    read is left out, so no peer matches it: closed)."""
    pid = os.getpid()
    found = _OWN.get(pid)
    if found is None:
        found = {}
        for kind in NAMESPACES:
            with contextlib.suppress(OSError):
                st = os.stat(f"/proc/self/ns/{kind}")
                found[kind] = (st.st_dev, st.st_ino)
        _OWN.clear()
        _OWN[pid] = found
    return found


def _prepare_directory(directory: Path) -> None:
    """Create the socket directory 0700; tighten one we own; refuse one we do not; leave a
    shared sticky directory (`/tmp`) alone."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(directory)
    except OSError as exc:
        raise SocketError(f"create mcp socket directory: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SocketError(f'mcp socket directory is not a directory: "{directory}"')
    if info.st_mode & stat.S_ISVTX:
        # A shared sticky directory such as /tmp is never tightened (as root that would lock
        # every other user out of /tmp): the socket itself is made 0600 and peers are checked
        # by uid on every connection.
        return
    if info.st_uid != os.geteuid():
        raise SocketError(f'mcp socket directory is owned by another user: "{directory}"')
    if stat.S_IMODE(info.st_mode) != 0o700:
        try:
            os.chmod(directory, 0o700)
        except OSError as exc:
            raise SocketError(f"secure mcp socket directory: {exc.strerror}") from None


def _recover_stale(path: Path) -> None:
    """Remove `path` only if it is a socket nobody listens on."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise SocketError(f"inspect existing mcp socket: {exc.strerror}") from None
    if not stat.S_ISSOCK(before.st_mode):
        raise SocketError(f'refusing to replace non-socket MCP path "{path}"')
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(STALE_PROBE_TIMEOUT)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        pass
    except OSError as exc:
        raise SocketError(f'cannot confirm MCP socket is stale at "{path}": {exc.strerror or exc}') from None
    else:
        raise SocketError(f'MCP socket is already active at "{path}"')
    finally:
        probe.close()
    try:
        after = os.lstat(path)
    except OSError:
        return
    if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
        raise SocketError(f'MCP socket path changed during recovery: "{path}"')
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise SocketError(f"remove stale MCP socket: {exc.strerror}") from None


class SocketServer:
    """Serves the legacy protocol on `path` against a runtime it does not own."""

    def __init__(
        self,
        runtime: Runtime,
        path: Path | str,
        *,
        log: Callable[[str], None] | None = None,
        max_request_bytes: int | None = None,
        read_timeout: float | None = None,
        max_connections: int | None = None,
    ) -> None:
        mcp = runtime.config.mcp
        self.runtime = runtime
        self.path = Path(path)
        self.max_request_bytes = max_request_bytes or mcp.socket_max_request_bytes
        self.read_timeout = read_timeout if read_timeout is not None else mcp.socket_read_timeout
        self.max_connections = max_connections or mcp.socket_max_connections
        self._say = log or (lambda line: None)
        self._server: asyncio.base_events.Server | None = None
        self._identity: tuple[int, int] | None = None
        self._closing = False
        self._closed = False
        self._uid = os.geteuid()
        self._idle: set[asyncio.Task[Any]] = set()
        self._busy: set[asyncio.Task[Any]] = set()
        self._connections = 0
        self.served = 0

    async def start(self) -> None:
        length = len(os.fsencode(self.path))
        if length > MAX_SOCKET_PATH:  # bind() would fail with a bare "AF_UNIX path too long"
            raise SocketError(
                f'mcp socket path is {length} bytes, over the Unix limit of {MAX_SOCKET_PATH}: "{self.path}" '
                "(set mcp.socket_path in .roundtable/config.yaml to a shorter path, e.g. /tmp/<project>.sock)"
            )
        _prepare_directory(self.path.parent)
        _recover_stale(self.path)
        try:
            self._server = await asyncio.start_unix_server(self._accept, path=str(self.path), limit=_CHUNK)
        except OSError as exc:
            raise SocketError(f"listen on mcp socket: {exc.strerror or exc}") from None
        try:
            info = os.lstat(self.path)
            if not stat.S_ISSOCK(info.st_mode):
                raise SocketError(f'bound MCP path is not a socket: "{self.path}"')
            os.chmod(self.path, 0o600)
        except BaseException as exc:
            self._server.close()
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            if isinstance(exc, OSError):
                raise SocketError(f"secure mcp socket: {exc.strerror}") from None
            raise
        self._identity = (info.st_dev, info.st_ino)

    @property
    def connections(self) -> int:
        """Connections open now (accepted and not yet closed)."""
        return self._connections

    @property
    def calls_in_flight(self) -> int:
        """Connections whose call is being executed (a drain waits for them)."""
        return len(self._busy)

    # --- per connection ---------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections += 1
        self._idle.add(task)
        try:
            if self._closing:
                return
            sock = writer.get_extra_info("socket")
            peer = peer_credentials(sock) if sock is not None else None
            if peer is not None and peer[1] != self._uid:
                return  # another user's process: closed without reading
            if peer is not None and (why := foreign_namespace(peer[0])):
                await self._refuse_foreign(reader, writer, peer, why)
                return
            if self._connections > self.max_connections:
                await self._refuse(reader, writer, "server busy: too many connections")
                return
            try:
                async with asyncio.timeout(self.read_timeout):  # no extra task, unlike wait_for
                    line = await self._read_line(reader)
            except RequestError as exc:
                await self._refuse(reader, writer, str(exc))
                return
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                return
            if line is None:
                return
            try:
                tool, args = decode_request(line)
            except RequestError as exc:
                writer.write(encode_response(False, error=str(exc)))
                await writer.drain()
                return
            if self._closing:
                return  # decoded during shutdown: neither executed nor answered
            self._idle.discard(task)
            self._busy.add(task)
            spec = self.runtime.registry.lookup(tool)
            if spec is not None and spec.read_only:  # a read: nothing to cut short
                reply = await self._dispatch(tool, args)
            else:  # its own task, so a cancelled connection never cuts a transaction short
                reply = await asyncio.shield(asyncio.ensure_future(self._dispatch(tool, args)))
            with contextlib.suppress(OSError):
                writer.write(reply)
                await writer.drain()
        except asyncio.CancelledError:
            pass
        except OSError as exc:
            self._say(f"roundtable mcp socket: write failed ({type(exc).__name__})")
        finally:
            self._connections -= 1
            self._idle.discard(task)
            self._busy.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _refuse_foreign(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: tuple[int, int], why: str
    ) -> None:
        """A same-uid peer in another namespace (a sandboxed process) never gets operator
        authority: refused with the reason, and the refusal recorded."""
        try:
            await self.runtime.call(
                "socket.peer_refused", {"pid": peer[0], "uid": peer[1], "reason": why}, SOCKET_GUARD
            )
        except Exception:  # the refusal stands even if it cannot be recorded
            log.exception("recording a refused socket peer failed")
        self._say(f"roundtable mcp socket: refused pid {peer[0]}: {why}")
        await self._refuse(reader, writer, f"refused: {why}; this socket serves only the operator's own processes")

    async def _refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, error: str) -> None:
        """Reply with an error, then swallow what the client is still sending (briefly, bounded)
        so closing does not reset the connection before the client reads the reply."""
        writer.write(encode_response(False, error=error))
        await writer.drain()
        with contextlib.suppress(Exception):
            writer.write_eof()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 0.25
        swallowed = 0
        with contextlib.suppress(Exception):
            while swallowed < 4 * self.max_request_bytes and (left := deadline - loop.time()) > 0:
                chunk = await asyncio.wait_for(reader.read(_CHUNK), left)
                if not chunk:
                    break
                swallowed += len(chunk)

    async def _read_line(self, reader: asyncio.StreamReader) -> bytes | None:
        """The trimmed first line; None for an empty one; RequestError when too long."""
        buf = bytearray()
        while True:
            chunk = await reader.read(_CHUNK)
            if not chunk:
                break
            cut = chunk.find(b"\n")
            if cut >= 0:
                buf += chunk[:cut]
                break
            buf += chunk
            if len(buf) > self.max_request_bytes:
                raise RequestError("request too large")
        if len(buf) > self.max_request_bytes:
            raise RequestError("request too large")
        line = bytes(buf).strip(_WHITESPACE)
        return line or None

    async def _dispatch(self, tool: str, args: dict[str, Any]) -> bytes:
        self.served += 1
        try:
            # Operator operations (`roundtable sessions launch|revoke`, …) pass here like any
            # tool: this same-uid socket carries operator authority, and the audience decides.
            result = await self.runtime.call(tool, args, SOCKET_CALLER)
        except RoundtableError as exc:
            if not isinstance(exc, ToolError):
                self._say(f"roundtable mcp socket: {tool or '(none)'} failed ({type(exc).__name__})")
            return encode_response(False, error=str(exc))  # Runtime.call has redacted it
        except Exception as exc:
            log.exception("socket call %s failed", tool)
            self._say(f"roundtable mcp socket: {tool or '(none)'} failed ({type(exc).__name__})")
            return encode_response(False, error=f"{tool} failed with an internal error")
        try:
            return encode_response(True, result if isinstance(result, dict) else {})
        except (TypeError, ValueError) as exc:
            self._say(f"roundtable mcp socket: encode {tool} result failed ({type(exc).__name__})")
            return encode_response(False, error="encode tool result failed")

    # --- shutdown ---------------------------------------------------------------------------

    async def close(self, drain_timeout: float = 5.0) -> None:
        """Stop listening, drop idle connections, drain in-flight calls; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._closing = True
        if self._server is not None:
            self._server.close()
        for task in list(self._idle):
            task.cancel()
        if self._busy:
            _done, pending = await asyncio.wait(set(self._busy), timeout=drain_timeout)
            if pending:
                self._say("roundtable mcp socket: MCP socket handlers did not drain before timeout")
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending, timeout=1.0)
        if self._idle:
            await asyncio.wait(set(self._idle), timeout=1.0)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
        self._remove_if_ours()

    def _remove_if_ours(self) -> None:
        try:
            info = os.lstat(self.path)
        except OSError:
            return
        if self._identity == (info.st_dev, info.st_ino):
            with contextlib.suppress(OSError):
                os.unlink(self.path)
