"""Operator operations: claims revoked, swept and reconciled by hand, bearer tokens, and the
project's adapter records — what the CLI does besides calling MCP tools.

They are registered operations like any tool (audience `operator`: never advertised, refused to
agents), so the CLI's writes are validated, audited with their principal and transport, and run
in one transaction through `Runtime.call` instead of opening the database themselves.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from roundtable import clock
from roundtable.domain import EventType
from roundtable.errors import ToolError
from roundtable.services.applying import recovery
from roundtable.services.args import Args, Count, Id, Int, NoArgs, Text
from roundtable.services.coordination import agents
from roundtable.services.coordination import claims as claims_service
from roundtable.services.coordination.claims import ReconcileArgs, RevokeArgs
from roundtable.services.sessions import adapter_records, tokens
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_RUN = "Run to record the events in."


async def claim_revoke(call: Call[RevokeArgs]) -> dict[str, Any]:
    updated, changed = await claims_service.revoke(call.w, call.args, call.actor)
    return {"claim": updated.to_dict(), "changed": changed}


class ExpireDueArgs(Args):
    run_id: Id = Field("", description=_RUN)
    at_unix_ns: Count | None = Field(None, description="Evaluate expiry at this time (Unix ns; default now).")


async def claim_expire_due(call: Call[ExpireDueArgs]) -> dict[str, Any]:
    a = call.args
    now = clock.format_ns(a.at_unix_ns) if a.at_unix_ns is not None else clock.now()
    swept = await claims_service.expire_due(call.w, now, run_id=a.run_id)
    return {"claims": [c.to_dict() for c in swept]}


async def claim_reconcile(call: Call[ReconcileArgs]) -> dict[str, Any]:
    suspended = await claims_service.reconcile(call.runtime.db, call.runtime.root, call.args)
    return {"claims": [c.to_dict() for c in suspended]}


class PeerRefusedArgs(Args):
    pid: Int = Field(0, description="The peer's pid, as the owner sees it (0: not visible).")
    uid: Int = Field(-1, description="The peer's uid.")
    reason: Text = Field(description="Why it was refused.")


async def socket_peer_refused(call: Call[PeerRefusedArgs]) -> dict[str, Any]:
    a = call.args
    payload = {"pid": a.pid, "uid": a.uid, "reason": a.reason}
    event = await call.w.append_event("", EventType.SOCKET_PEER_REFUSED, payload, actor_id=call.actor)
    return {"event": event.to_dict()}


async def token_create(call: Call[tokens.CreateArgs]) -> dict[str, Any]:
    record, token = await tokens.create(call.w, call.args)
    return {"token": record.to_dict(), "secret": token}


async def token_ensure(call: Call[tokens.TokenArgs]) -> dict[str, Any]:
    try:
        path = await tokens.ensure_credential(call.runtime.db, call.runtime.root, call.args)
    except OSError as exc:
        who = call.args.agent_id or call.args.principal
        raise ToolError(f"cannot write the {who} credential under .roundtable/credentials/ ({exc.strerror})") from None
    return {"path": str(path)}


async def token_list(call: Call[NoArgs]) -> dict[str, Any]:
    rows = [r.to_dict() for r in await tokens.list_tokens(call.r)]
    for row in rows:
        row.pop("token_sha256", None)
    return {"tokens": rows}


class TokenRevokeArgs(Args):
    token_id: Id = Field(description="The token id.")


async def token_revoke(call: Call[TokenRevokeArgs]) -> dict[str, Any]:
    record = await tokens.revoke(call.w, call.args.token_id)
    return {"token": record.to_dict()}


async def adapters_record(call: Call[NoArgs]) -> dict[str, Any]:
    return {"adapters": await adapter_records.record_builtin(call.w)}


async def agents_sync(call: Call[NoArgs]) -> dict[str, Any]:
    config = call.runtime.config
    await agents.sync_adapter_capabilities(call.w, config)
    return {"disabled": await agents.sync_agents_tx(call.w, config)}


async def transaction_recover(call: Call[NoArgs]) -> dict[str, Any]:
    return {"lines": [str(line) for line in await recovery.recover_interrupted(call.runtime)]}


_OBJECT = {"type": "object"}

TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="claim.revoke",
        description="Revoke any active claim (one claim.revoked event).",
        args=RevokeArgs,
        output_schema=_OBJECT,
        handler=claim_revoke,
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="claim.expire_due",
        description="Expire every active claim whose TTL has elapsed (one claim.expired event each).",
        args=ExpireDueArgs,
        output_schema=_OBJECT,
        handler=claim_expire_due,
        audience="operator",
    ),
    ToolSpec(
        name="claim.reconcile",
        description="Suspend active write/exclusive claims whose resource changed since it was claimed.",
        args=ReconcileArgs,
        output_schema=_OBJECT,
        handler=claim_reconcile,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="token.create",
        description="Create a bearer token for the HTTP endpoint; the secret is returned once, only its hash stored.",
        args=tokens.CreateArgs,
        output_schema=_OBJECT,
        handler=token_create,
        audience="operator",
    ),
    ToolSpec(
        name="token.ensure",
        description=(
            "Make sure a principal's credential file under .roundtable/credentials/ holds a live token "
            "(a new one is created and written when it is missing, unknown or revoked); returns its path."
        ),
        args=tokens.TokenArgs,
        output_schema=_OBJECT,
        handler=token_ensure,
        mode="none",
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="token.list",
        description="List bearer tokens (ids, principals, state; never a secret or its hash).",
        args=NoArgs,
        output_schema=_OBJECT,
        handler=token_list,
        mode="read",
        read_only=True,
        audience="operator",
    ),
    ToolSpec(
        name="token.revoke",
        description="Revoke a bearer token; the next request with it gets 401.",
        args=TokenRevokeArgs,
        output_schema=_OBJECT,
        handler=token_revoke,
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="agents.sync",
        description="Bring the agent rows and adapter capabilities in step with the configuration (agents no longer configured are disabled).",
        args=NoArgs,
        output_schema=_OBJECT,
        handler=agents_sync,
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="transaction.recover",
        description="Finish or roll back apply transactions an interrupted owner left pending (the owner runs it as it starts).",
        args=NoArgs,
        output_schema=_OBJECT,
        handler=transaction_recover,
        mode="none",
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="adapters.record",
        description="Record the built-in adapters' capabilities (resume, MCP, read-only workspace, session capture).",
        args=NoArgs,
        output_schema=_OBJECT,
        handler=adapters_record,
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="socket.peer_refused",
        description="Legacy socket: a same-uid peer outside the owner's namespaces was refused.",
        args=PeerRefusedArgs,
        output_schema=_OBJECT,
        handler=socket_peer_refused,
        audience="internal",
    ),
]
