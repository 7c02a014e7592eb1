"""What the owner's gateway records about a session's traffic, besides its usage (`usage`).

Three events, each in the session's run: `gateway.credential_refused` {session_id, api, status,
message} when the model API answered 401/403 to the operator's credential (or the owner has none);
`gateway.connection_refused` {session_id, host, port, reason} for every connection the forward
proxy refused; `gateway.budget_refused` {session_id, reason} when a model request was refused
because a budget covering the session is reached. Messages are redacted and bounded here, so
nothing an upstream or a session sends is stored as it came.
"""

from __future__ import annotations

from roundtable.domain import EventType
from roundtable.services.redact import redact
from roundtable.services.sessions import records as sessions
from roundtable.store.db import Tx

MESSAGE_MAX = 500
HOST_MAX = 255


def _clean(text: str, limit: int = MESSAGE_MAX) -> str:
    """One line, redacted, at most `limit` characters."""
    flat = " ".join(str(text).split())
    return redact(flat)[:limit]


async def credential_refused(tx: Tx, session_id: str, *, api: str, status: int, message: str, actor: str) -> int:
    session = await sessions.get(tx, session_id)
    event = await tx.append_event(
        session.run_id,
        EventType.GATEWAY_CREDENTIAL_REFUSED,
        {
            "session_id": session_id,
            "agent_id": session.agent_id,
            "api": api,
            "status": status,
            "message": _clean(message),
        },
        actor_id=actor,
    )
    return int(event.id)


async def connection_refused(tx: Tx, session_id: str, *, host: str, port: int, reason: str, actor: str) -> int:
    session = await sessions.get(tx, session_id)
    event = await tx.append_event(
        session.run_id,
        EventType.GATEWAY_CONNECTION_REFUSED,
        {
            "session_id": session_id,
            "agent_id": session.agent_id,
            "host": _clean(host, HOST_MAX),
            "port": port,
            "reason": _clean(reason),
        },
        actor_id=actor,
    )
    return int(event.id)


async def budget_refused(tx: Tx, session_id: str, *, reason: str, actor: str) -> int:
    session = await sessions.get(tx, session_id)
    event = await tx.append_event(
        session.run_id,
        EventType.GATEWAY_BUDGET_REFUSED,
        {"session_id": session_id, "agent_id": session.agent_id, "reason": _clean(reason, 2000)},
        actor_id=actor,
    )
    return int(event.id)
