"""Gateway operations: what the owner's gateway writes (internal, caller `gateway`).

`gateway.open_session` marks a session's usage as measured by the gateway (from then on what its
harness prints is only a cross-check); `gateway.record_usage` adds one model request's usage, as
the model API answered it (`services.sessions.usage.add_measured`), and enforces the budgets in
the same transaction (`services.sessions.budgets.enforce`), as `session.record_usage` does for
printed figures. The three refusals are events (`services.sessions.gateway_records`). The
models but `gateway.open_session`'s are declared in those services, which receive them whole.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from roundtable.services.args import Args, Id
from roundtable.services.sessions import budgets, gateway_records, usage
from roundtable.services.sessions.budgets import MeasuredUsageArgs
from roundtable.services.sessions.gateway_records import BudgetRefusedArgs, ConnectionRefusedArgs, CredentialRefusedArgs
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}


class OpenSessionArgs(Args):
    session_id: Id = Field(description="The session id.")


async def open_session(call: Call[OpenSessionArgs]) -> dict[str, Any]:
    recorded = await usage.mark_measured(call.w, call.args.session_id)
    return {
        "session_id": recorded.session_id,
        "run_id": recorded.run_id,
        "task_id": recorded.task_id,
        "day": recorded.day,
    }


async def record_usage(call: Call[MeasuredUsageArgs]) -> dict[str, Any]:
    return await budgets.record_measured(call.w, call.args, call.runtime.config, actor=call.actor)


async def record_credential_refused(call: Call[CredentialRefusedArgs]) -> dict[str, Any]:
    return {"event_id": await gateway_records.credential_refused(call.w, call.args, actor=call.actor)}


async def record_connection_refused(call: Call[ConnectionRefusedArgs]) -> dict[str, Any]:
    return {"event_id": await gateway_records.connection_refused(call.w, call.args, actor=call.actor)}


async def record_budget_refused(call: Call[BudgetRefusedArgs]) -> dict[str, Any]:
    return {"event_id": await gateway_records.budget_refused(call.w, call.args, actor=call.actor)}


def _internal(name: str, description: str, args: type[Args], handler: Any) -> ToolSpec:
    return ToolSpec(
        name=name, description=description, args=args, output_schema=_OBJECT, handler=handler, audience="internal"
    )


TOOLS: list[ToolSpec] = [
    _internal(
        "gateway.open_session",
        "Gateway: the session's usage is measured on the wire from now on.",
        OpenSessionArgs,
        open_session,
    ),
    _internal(
        "gateway.record_usage",
        "Gateway: one model request's usage as the model API answered it; enforces budgets.",
        MeasuredUsageArgs,
        record_usage,
    ),
    _internal(
        "gateway.record_credential_refused",
        "Gateway: the model API refused the operator's credential (gateway.credential_refused).",
        CredentialRefusedArgs,
        record_credential_refused,
    ),
    _internal(
        "gateway.record_connection_refused",
        "Gateway: the forward proxy refused a session's connection (gateway.connection_refused).",
        ConnectionRefusedArgs,
        record_connection_refused,
    ),
    _internal(
        "gateway.record_budget_refused",
        "Gateway: a model request was refused because a budget is reached (gateway.budget_refused).",
        BudgetRefusedArgs,
        record_budget_refused,
    ),
]
