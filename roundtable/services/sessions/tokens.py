"""Per-principal bearer tokens for the shared HTTP endpoint, and the credential files that hold
them for local clients.

A token is shown once, when it is created; only its sha256 is stored (`access_tokens`), so a
leaked database does not leak credentials. A token names one principal:
- `operator` — operator authority over HTTP;
- `agent` (with an `agent_id`) — that agent, valid only while it is registered and enabled;
- `project` — the unbound project credential: anonymous, read-only tools only.
`resolve` maps a presented token to its principal on every request (revocation is immediate).

`ensure_credential` keeps a principal's credential file under `.roundtable/credentials/` (0600 in
0700 directories, see `roundtable.credentials`) in step with the database: when the file is
missing, or its token is unknown or revoked, a new token is created and written. The owner does
this at start for the project credential and every configured agent; `roundtable connect --agent`
for the harness's agent. Harness configs then hold no secret: the stdio bridge reads the file.

`create` and `ensure_credential` receive the operations' validated models (`TokenArgs` for any
principal, as `token.ensure` takes it; `CreateArgs`, `token.create`'s, names no `project`).
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import Field

from roundtable import clock, credentials
from roundtable.errors import ValidationError
from roundtable.services.args import Args, Id
from roundtable.store.db import Database, Reader, Tx
from roundtable.store.records import AccessToken

TOKEN_PREFIX = "rttok_"
OPERATOR = "operator"
AGENT = "agent"
PROJECT = "project"
PRINCIPALS = (OPERATOR, AGENT, PROJECT)


class TokenArgs(Args):
    # `token.ensure`: the principal whose credential file must hold a live token.
    principal: Literal["project", "agent", "operator"] = Field(description="`project`, `agent` or `operator`.")
    agent_id: Id = Field(default="", description="The agent an agent credential acts as.")


class CreateArgs(TokenArgs):
    # `token.create`: a token shown once (the project credential is ensured, not created by hand).
    principal: Literal["agent", "operator"] = Field(description="`agent` or `operator`.")  # type: ignore[assignment]
    agent_id: Id = Field(default="", description="The agent an agent token acts as.")


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def create(tx: Tx, args: TokenArgs) -> tuple[AccessToken, str]:
    """Store a new token's hash; returns the record and the token (to show once)."""
    principal, agent_id = args.principal, args.agent_id
    if principal == AGENT and not clock.is_valid_id(agent_id):
        raise ValidationError("an agent token needs a valid --agent id")
    token = new_token()
    record = AccessToken(
        id=clock.new_id("TOK"),
        token_sha256=digest(token),
        principal=principal,
        agent_id=agent_id if principal == AGENT else "",
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
        tx.tables.add("access_tokens")
    updated = await tx.one(AccessToken, "SELECT * FROM access_tokens WHERE id = ?", (token_id,))
    assert updated is not None
    return updated


async def list_tokens(q: Reader | Tx) -> list[AccessToken]:
    return await q.all(AccessToken, "SELECT * FROM access_tokens ORDER BY created_at, id")


_RESOLVE_SQL = (
    "SELECT t.principal, t.agent_id, a.is_enabled FROM access_tokens t"
    " LEFT JOIN agents a ON a.id = t.agent_id"
    " WHERE t.token_sha256 = ? AND t.revoked_at IS NULL"
)


def _resolved(row: Any) -> tuple[str, str] | None:
    if row is None:
        return None
    principal = str(row["principal"])
    agent_id = str(row["agent_id"] or "")
    if principal == AGENT:
        if not agent_id or not row["is_enabled"]:
            return None
        return AGENT, agent_id
    if principal in (OPERATOR, PROJECT):
        return principal, ""
    return None


async def resolve(q: Reader | Tx, token: str) -> tuple[str, str] | None:
    """(principal, agent_id) of a live token, or None. An agent token resolves only while its
    agent is registered and enabled."""
    return _resolved(await q.fetchone(_RESOLVE_SQL, (digest(token),)))


def resolve_on(conn: sqlite3.Connection, token: str) -> tuple[str, str] | None:
    """`resolve` as a point read on a connection (one lookup by the token's unique digest)."""
    return _resolved(conn.execute(_RESOLVE_SQL, (digest(token),)).fetchone())


async def _live(q: Reader | Tx, token: str, principal: str, agent_id: str) -> bool:
    row = await q.fetchone(
        "SELECT principal, agent_id FROM access_tokens WHERE token_sha256 = ? AND revoked_at IS NULL",
        (digest(token),),
    )
    return row is not None and row["principal"] == principal and (row["agent_id"] or "") == agent_id


async def ensure_credential(db: Database, root: Path, args: TokenArgs) -> Path:
    """Make sure the principal's credential file exists and holds a live token; returns its path.

    Creates (and stores the hash of) a new token when the file is missing, unreadable, or its
    token is unknown, revoked or bound to another principal.
    """
    principal, agent_id = args.principal, args.agent_id
    if principal == AGENT and not clock.is_valid_id(agent_id):
        raise ValidationError(f"invalid agent id: {agent_id!r}")
    bound = agent_id if principal == AGENT else ""
    operator = principal == OPERATOR
    path = credentials.credential_path(root, agent_id=bound, operator=operator)
    current = await anyio.to_thread.run_sync(
        lambda: credentials.read_credential(root, agent_id=bound, operator=operator)
    )
    if current:
        async with db.read() as reader:
            if await _live(reader, current, principal, bound):
                return path
    async with db.write(tool="tokens.ensure") as tx:
        _record, token = await create(tx, args)  # an agent id is stored for an agent token only
    await anyio.to_thread.run_sync(lambda: credentials.write_credential(root, token, agent_id=bound, operator=operator))
    return path
