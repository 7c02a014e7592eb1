"""The MCP SDK (2.3) internals roundtable reads, in one place — each for want of a public API.

Everything else goes through the SDK's public surface (`Server.session_manager`,
`ServerSession.send_notification`, `transport.is_terminated`, `transport.terminate()`). These
four reads have no public equivalent in SDK 2.3; `tests/mcp/test_http_surface.py` pins each
attribute (`test_sdk_contract_*`), so an SDK upgrade that renames one fails there, not in
production. All reads are defensive: a missing attribute degrades (no pushes held, no eviction),
never raises.
"""

from __future__ import annotations

from typing import Any

from mcp.server.streamable_http import GET_STREAM_KEY


def connection_of(ctx: Any) -> Any:
    """The SDK `Connection` a request arrived on, or None.

    Pushes need it: its standalone channel carries notifications outside any request, its
    identity tells one client's requests from another's, and its `exit_stack` says when the
    client is gone. `ServerRequestContext` does not expose it in SDK 2.3 (only the unused
    `Context` class does); `ServerSession` keeps it as `_connection`."""
    return getattr(getattr(ctx, "session", None), "_connection", None)


def session_transports(manager: Any) -> dict[str, Any]:
    """The open stateful sessions of a `StreamableHTTPSessionManager`, by session id.

    Needed to cap sessions per principal (which sessions are still open), to count them, and
    to end them at shutdown so their GET streams close at once. The manager keeps them as
    `_server_instances` and offers no listing."""
    found = getattr(manager, "_server_instances", None)
    return found if isinstance(found, dict) else {}


def requests_in_flight(transport: Any) -> int:
    """How many requests a session's transport is serving (`_requests_in_flight`; 1 when it
    cannot be told, so an unknown session is never taken for idle and evicted)."""
    value = getattr(transport, "_requests_in_flight", 1)
    return value if isinstance(value, int) else 1


def get_stream_open(transport: Any) -> bool | None:
    """Whether a session's standalone GET stream is connected (None when it cannot be told).

    A push due before the client opens its GET stream is held for it instead of being dropped
    by the transport; the transport keeps its streams in `_request_streams` under
    `GET_STREAM_KEY` and has no accessor."""
    streams = getattr(transport, "_request_streams", None)
    return None if not isinstance(streams, dict) else GET_STREAM_KEY in streams
