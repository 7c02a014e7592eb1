"""Per-principal bearer tokens for the shared HTTP endpoint (`mcp.require_tokens: true`).

A token is shown once, when it is created; only its sha256 is stored (`access_tokens`), so a
leaked database does not leak credentials. The HTTP guard resolves a presented token to an
operator or agent caller (`roundtable.server.guard.db_token_resolver`).
"""

from __future__ import annotations

import hashlib
import secrets

from roundtable import clock
from roundtable.errors import ValidationError
from roundtable.store.db import Tx
from roundtable.store.records import AccessToken

TOKEN_PREFIX = "rttok_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def create(tx: Tx, *, principal: str, agent_id: str = "") -> tuple[AccessToken, str]:
    """Store a new token's hash; returns the record and the token (to show once)."""
    if principal not in ("operator", "agent"):
        raise ValidationError("principal must be operator or agent")
    if principal == "agent" and not clock.is_valid_id(agent_id):
        raise ValidationError("an agent token needs a valid --agent id")
    token = new_token()
    record = AccessToken(
        id=clock.new_id("TOK"),
        token_sha256=digest(token),
        principal=principal,
        agent_id=agent_id if principal == "agent" else "",
        created_at=clock.now(),
        revoked_at="",
    )
    values = record.to_dict()
    values["agent_id"] = values["agent_id"] or None
    values["revoked_at"] = None
    await tx.insert("access_tokens", values)
    return record, token


async def revoke(tx: Tx, token_id: str) -> AccessToken:
    record = await tx.get(AccessToken, token_id)
    if not record.revoked_at:
        await tx.execute("UPDATE access_tokens SET revoked_at = ? WHERE id = ?", (clock.now(), token_id))
    updated = await tx.one(AccessToken, "SELECT * FROM access_tokens WHERE id = ?", (token_id,))
    assert updated is not None
    return updated


async def list_tokens(tx: Tx) -> list[AccessToken]:
    return await tx.all(AccessToken, "SELECT * FROM access_tokens ORDER BY created_at, id")
