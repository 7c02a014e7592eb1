"""Operator operations: claims revoked, swept and reconciled by hand, bearer tokens, and the
project's adapter records — what the CLI does besides calling MCP tools.

They are registered operations like any tool (audience `operator`: never advertised, refused to
agents), so the CLI's writes are validated, audited with their principal and transport, and run
in one transaction through `Runtime.call` instead of opening the database themselves.
"""

from __future__ import annotations

from typing import Any

from roundtable import clock
from roundtable.domain import ClaimStatus, EventType
from roundtable.errors import ToolError
from roundtable.services.applying import recovery
from roundtable.services.coordination import agents
from roundtable.services.coordination import claims as claims_service
from roundtable.services.sessions import adapter_records, tokens
from roundtable.tools.args import opt_int, opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import integer, obj, string


async def claim_revoke(call: Call) -> dict[str, Any]:
    a = call.args
    updated, changed = await claims_service.transition(
        call.w,
        a["claim_id"],
        ClaimStatus.REVOKED,
        clock.now(),
        actor_id=opt_str(a, "actor_id", call.actor),
        reason=opt_str(a, "reason"),
        run_id=opt_str(a, "run_id"),
        operator=True,
    )
    return {"claim": updated.to_dict(), "changed": changed}


async def claim_expire_due(call: Call) -> dict[str, Any]:
    a = call.args
    at_ns = a.get("at_unix_ns")
    now = clock.format_ns(int(at_ns)) if at_ns is not None else clock.now()
    swept = await claims_service.expire_due(call.w, now, run_id=opt_str(a, "run_id"))
    return {"claims": [c.to_dict() for c in swept]}


async def claim_reconcile(call: Call) -> dict[str, Any]:
    a = call.args
    suspended = await claims_service.reconcile(
        call.runtime.db,
        call.runtime.root,
        agent_id=opt_str(a, "agent_id"),
        actor=opt_str(a, "actor_id", "system"),
        run_id=opt_str(a, "run_id"),
    )
    return {"claims": [c.to_dict() for c in suspended]}


async def socket_peer_refused(call: Call) -> dict[str, Any]:
    a = call.args
    payload = {"pid": opt_int(a, "pid", 0), "uid": opt_int(a, "uid", -1), "reason": a["reason"]}
    event = await call.w.append_event("", EventType.SOCKET_PEER_REFUSED, payload, actor_id=call.actor)
    return {"event": event.to_dict()}


async def token_create(call: Call) -> dict[str, Any]:
    a = call.args
    record, token = await tokens.create(call.w, principal=a["principal"], agent_id=opt_str(a, "agent_id"))
    return {"token": record.to_dict(), "secret": token}


async def token_ensure(call: Call) -> dict[str, Any]:
    a = call.args
    principal, agent_id = a["principal"], opt_str(a, "agent_id")
    try:
        path = await tokens.ensure_credential(
            call.runtime.db, call.runtime.root, principal=principal, agent_id=agent_id
        )
    except OSError as exc:
        raise ToolError(
            f"cannot write the {agent_id or principal} credential under .roundtable/credentials/ ({exc.strerror})"
        ) from None
    return {"path": str(path)}


async def token_list(call: Call) -> dict[str, Any]:
    rows = [r.to_dict() for r in await tokens.list_tokens(call.r)]
    for row in rows:
        row.pop("token_sha256", None)
    return {"tokens": rows}


async def token_revoke(call: Call) -> dict[str, Any]:
    record = await tokens.revoke(call.w, call.args["token_id"])
    return {"token": record.to_dict()}


async def adapters_record(call: Call) -> dict[str, Any]:
    return {"adapters": await adapter_records.record_builtin(call.w)}


async def agents_sync(call: Call) -> dict[str, Any]:
    config = call.runtime.config
    await agents.sync_adapter_capabilities(call.w, config)
    return {"disabled": await agents.sync_agents_tx(call.w, config)}


async def transaction_recover(call: Call) -> dict[str, Any]:
    return {"lines": [str(line) for line in await recovery.recover_interrupted(call.runtime)]}


_RUN = string("Run to record the events in.")
_OBJECT = {"type": "object"}

TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="claim.revoke",
        description="Revoke any active claim (one claim.revoked event).",
        input_schema=obj(
            {
                "claim_id": string("The claim."),
                "reason": string("Why (recorded in the event)."),
                "actor_id": string("Actor recorded in the event (default: the caller)."),
                "run_id": _RUN,
            },
            ["claim_id"],
        ),
        output_schema=_OBJECT,
        handler=claim_revoke,
        destructive=True,
        audience="operator",
        allow_blank=frozenset({"reason"}),
    ),
    ToolSpec(
        name="claim.expire_due",
        description="Expire every active claim whose TTL has elapsed (one claim.expired event each).",
        input_schema=obj(
            {"run_id": _RUN, "at_unix_ns": integer("Evaluate expiry at this time (Unix ns; default now).", minimum=0)}
        ),
        output_schema=_OBJECT,
        handler=claim_expire_due,
        audience="operator",
    ),
    ToolSpec(
        name="claim.reconcile",
        description="Suspend active write/exclusive claims whose resource changed since it was claimed.",
        input_schema=obj(
            {
                "run_id": _RUN,
                "agent_id": string("Only this agent's claims."),
                "actor_id": string("Actor recorded in the events (default system)."),
            }
        ),
        output_schema=_OBJECT,
        handler=claim_reconcile,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="token.create",
        description="Create a bearer token for the HTTP endpoint; the secret is returned once, only its hash stored.",
        input_schema=obj(
            {
                "principal": string("`agent` or `operator`.", enum=["agent", "operator"]),
                "agent_id": string("The agent an agent token acts as."),
            },
            ["principal"],
        ),
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
        input_schema=obj(
            {
                "principal": string("`project`, `agent` or `operator`.", enum=["project", "agent", "operator"]),
                "agent_id": string("The agent an agent credential acts as."),
            },
            ["principal"],
        ),
        output_schema=_OBJECT,
        handler=token_ensure,
        mode="none",
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="token.list",
        description="List bearer tokens (ids, principals, state; never a secret or its hash).",
        input_schema=obj({}),
        output_schema=_OBJECT,
        handler=token_list,
        mode="read",
        read_only=True,
        audience="operator",
    ),
    ToolSpec(
        name="token.revoke",
        description="Revoke a bearer token; the next request with it gets 401.",
        input_schema=obj({"token_id": string("The token id.")}, ["token_id"]),
        output_schema=_OBJECT,
        handler=token_revoke,
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="agents.sync",
        description="Bring the agent rows and adapter capabilities in step with the configuration (agents no longer configured are disabled).",
        input_schema=obj({}),
        output_schema=_OBJECT,
        handler=agents_sync,
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="transaction.recover",
        description="Finish or roll back apply transactions an interrupted owner left pending (the owner runs it as it starts).",
        input_schema=obj({}),
        output_schema=_OBJECT,
        handler=transaction_recover,
        mode="none",
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="adapters.record",
        description="Record the built-in adapters' capabilities (resume, MCP, read-only workspace, session capture).",
        input_schema=obj({}),
        output_schema=_OBJECT,
        handler=adapters_record,
        idempotent=True,
        audience="operator",
    ),
    ToolSpec(
        name="socket.peer_refused",
        description="Legacy socket: a same-uid peer outside the owner's namespaces was refused.",
        input_schema=obj(
            {
                "pid": integer("The peer's pid, as the owner sees it (0: not visible)."),
                "uid": integer("The peer's uid."),
                "reason": string("Why it was refused."),
            },
            ["reason"],
        ),
        output_schema=_OBJECT,
        handler=socket_peer_refused,
        audience="internal",
    ),
]
