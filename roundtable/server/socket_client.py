"""Client of the legacy socket (`roundtable mcp call --socket`): one request, one reply line.

Blocking on purpose: the CLI makes one call and exits. The connect is bounded (10 s by
default); the reply is not, because tools such as `test.run` can be slow.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from roundtable.errors import RoundtableError

CONNECT_TIMEOUT = 10.0


class SocketClientError(RoundtableError):
    """The owner's socket could not be reached or answered nonsense."""


class OwnerUnreachable(SocketClientError):
    """Nothing accepted the connection: no owner listens there (the request was never sent)."""


def call_socket(
    path: Path | str,
    tool: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float = CONNECT_TIMEOUT,
    read_timeout: float | None = None,
) -> dict[str, Any]:
    """Send `{"tool","args"}` to the socket at `path`; return the decoded reply envelope.

    Raises `SocketClientError` with a one-line reason (`OwnerUnreachable` when the connection
    is not accepted, so nothing was sent) when nothing listens, the connection
    drops before a complete line arrives, or the reply is not a JSON object.
    """
    request = json.dumps({"tool": tool, "args": args}, ensure_ascii=False, separators=(",", ":"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except FileNotFoundError:
            raise OwnerUnreachable(f"connect to MCP socket {path}: no owner is running (no socket)") from None
        except ConnectionRefusedError:
            raise OwnerUnreachable(f"connect to MCP socket {path}: no owner is listening") from None
        except TimeoutError:
            raise OwnerUnreachable(f"connect to MCP socket {path}: timed out") from None
        except OSError as exc:
            raise OwnerUnreachable(f"connect to MCP socket {path}: {exc.strerror or exc}") from None
        sock.settimeout(read_timeout)
        try:
            sock.sendall(request.encode("utf-8") + b"\n")
            data = bytearray()
            while b"\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except TimeoutError:
            raise SocketClientError(f"MCP socket {path}: no reply in time") from None
        except OSError as exc:
            raise SocketClientError(f"MCP socket {path}: {exc.strerror or exc}") from None
    finally:
        sock.close()
    line = bytes(data).split(b"\n", 1)[0].strip()
    if not line:
        raise SocketClientError(f"MCP socket {path}: connection closed without a reply")
    try:
        reply = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise SocketClientError(f"MCP socket {path}: reply is not JSON") from None
    if not isinstance(reply, dict):
        raise SocketClientError(f"MCP socket {path}: reply is not a JSON object")
    return reply
