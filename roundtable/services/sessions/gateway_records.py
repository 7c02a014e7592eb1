"""What the owner's gateway records about a session's traffic, besides its usage (`usage`).

Three events, each in the session's run: `gateway.credential_refused` {session_id, api, status,
message} when the model API answered 401/403 to the operator's credential (or the owner has none);
`gateway.connection_refused` {session_id, host, port, reason} for every connection the forward
proxy refused; `gateway.budget_refused` {session_id, reason} when a model request was refused
because a budget covering the session is reached. Messages are redacted and bounded here, so
nothing an upstream or a session sends is stored as it came. Each event's operation is declared
here (`CredentialRefusedArgs`, `ConnectionRefusedArgs`, `BudgetRefusedArgs`) and received whole.
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Le
from pydantic import Field

from roundtable.domain import EventType
from roundtable.services.args import Args, Count, Id, Text
from roundtable.services.redact import redact
from roundtable.services.sessions import records as sessions
from roundtable.store.db import Tx

MESSAGE_MAX = 500
HOST_MAX = 255


_SESSION = "The session id."


class CredentialRefusedArgs(Args):
    # `gateway.record_credential_refused`.
    allow_blank = frozenset({"message"})

    session_id: Id = Field(description=_SESSION)
    api: Id = Field(description="The model API (anthropic, openai).")
    status: Annotated[Count, Le(999)] = Field(description="The upstream's HTTP status (0: no credential to send).")
    message: Text = Field(default="", description="What the upstream said (redacted before it is stored).")


class ConnectionRefusedArgs(Args):
    # `gateway.record_connection_refused`.
    session_id: Id = Field(description=_SESSION)
    host: Text = Field(description="The host the session asked for.")
    port: Annotated[Count, Le(65535)] = Field(description="The port.")
    reason: Text = Field(description="Why it was refused.")


class BudgetRefusedArgs(Args):
    # `gateway.record_budget_refused`.
    session_id: Id = Field(description=_SESSION)
    reason: Text = Field(description="The budget reached (`budget: …`).")


def _clean(text: str, limit: int = MESSAGE_MAX) -> str:
    """One line, redacted, at most `limit` characters."""
    flat = " ".join(str(text).split())
    return redact(flat)[:limit]


async def credential_refused(tx: Tx, args: CredentialRefusedArgs, *, actor: str) -> int:
    session_id, api, status, message = args.session_id, args.api, args.status, args.message
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


async def connection_refused(tx: Tx, args: ConnectionRefusedArgs, *, actor: str) -> int:
    session_id, host, port, reason = args.session_id, args.host, args.port, args.reason
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


async def budget_refused(tx: Tx, args: BudgetRefusedArgs, *, actor: str) -> int:
    session_id, reason = args.session_id, args.reason
    session = await sessions.get(tx, session_id)
    event = await tx.append_event(
        session.run_id,
        EventType.GATEWAY_BUDGET_REFUSED,
        {"session_id": session_id, "agent_id": session.agent_id, "reason": _clean(reason, 2000)},
        actor_id=actor,
    )
    return int(event.id)
