"""Gateway operations: what the owner's gateway writes (internal, caller `gateway`).

`gateway.open_session` marks a session's usage as measured by the gateway (from then on what its
harness prints is only a cross-check); `gateway.record_usage` adds one model request's usage, as
the model API answered it (`services.sessions.usage.add_measured`), and enforces the budgets in
the same transaction (`services.sessions.budgets.enforce`), as `session.record_usage` does for
printed figures. The three refusals are events (`services.sessions.gateway_records`).
"""

from __future__ import annotations

from typing import Annotated, Any

from annotated_types import Le
from pydantic import Field

from roundtable.services.args import Args, Count, Id, Text
from roundtable.services.sessions import budgets, gateway_records, usage
from roundtable.services.sessions.usage_stream import Usage
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}
_SESSION = "The session id."
_COUNT = "Tokens of this one request, as the model API reported them."
# The bound on one request's count: far above any model's context, far below anything that could
# overflow a sum.
REQUEST_TOKENS_MAX = 100_000_000
RequestCount = Annotated[Count, Le(REQUEST_TOKENS_MAX)]


class OpenSessionArgs(Args):
    session_id: Id = Field(description=_SESSION)


async def open_session(call: Call[OpenSessionArgs]) -> dict[str, Any]:
    recorded = await usage.mark_measured(call.w, call.args.session_id)
    return {
        "session_id": recorded.session_id,
        "run_id": recorded.run_id,
        "task_id": recorded.task_id,
        "day": recorded.day,
    }


class RecordUsageArgs(Args):
    allow_blank = frozenset({"model"})

    session_id: Id = Field(description=_SESSION)
    input_tokens: RequestCount = Field(0, description=_COUNT + " Every prompt token, cache reads and writes included.")
    cached_input_tokens: RequestCount = Field(0, description=_COUNT + " The part read from a cache.")
    output_tokens: RequestCount = Field(0, description=_COUNT)
    model: Text = Field("", description="The model that answered.")


async def record_usage(call: Call[RecordUsageArgs]) -> dict[str, Any]:
    a = call.args
    spent = Usage(a.input_tokens, min(a.cached_input_tokens, a.input_tokens), a.output_tokens, None, a.model)
    config = call.runtime.config
    recorded = await usage.add_measured(call.w, a.session_id, spent, config.usage.prices)
    enforced = await budgets.enforce(call.w, config.budgets, recorded, actor=call.actor)
    return {
        "session_id": recorded.session_id,
        "tokens": recorded.usage.tokens,
        "cost_usd": round(recorded.cost_usd, 6),
        "cost_source": recorded.cost_source,
        "crossed": [c.payload(recorded.session_id) for c in enforced.crossed],
        "stop_reason": enforced.stop_reason,
    }


class CredentialRefusedArgs(Args):
    allow_blank = frozenset({"message"})

    session_id: Id = Field(description=_SESSION)
    api: Id = Field(description="The model API (anthropic, openai).")
    status: Annotated[Count, Le(999)] = Field(description="The upstream's HTTP status (0: no credential to send).")
    message: Text = Field("", description="What the upstream said (redacted before it is stored).")


async def record_credential_refused(call: Call[CredentialRefusedArgs]) -> dict[str, Any]:
    a = call.args
    event_id = await gateway_records.credential_refused(
        call.w, a.session_id, api=a.api, status=a.status, message=a.message, actor=call.actor
    )
    return {"event_id": event_id}


class ConnectionRefusedArgs(Args):
    session_id: Id = Field(description=_SESSION)
    host: Text = Field(description="The host the session asked for.")
    port: Annotated[Count, Le(65535)] = Field(description="The port.")
    reason: Text = Field(description="Why it was refused.")


async def record_connection_refused(call: Call[ConnectionRefusedArgs]) -> dict[str, Any]:
    a = call.args
    event_id = await gateway_records.connection_refused(
        call.w, a.session_id, host=a.host, port=a.port, reason=a.reason, actor=call.actor
    )
    return {"event_id": event_id}


class BudgetRefusedArgs(Args):
    session_id: Id = Field(description=_SESSION)
    reason: Text = Field(description="The budget reached (`budget: …`).")


async def record_budget_refused(call: Call[BudgetRefusedArgs]) -> dict[str, Any]:
    a = call.args
    event_id = await gateway_records.budget_refused(call.w, a.session_id, reason=a.reason, actor=call.actor)
    return {"event_id": event_id}


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
        RecordUsageArgs,
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
