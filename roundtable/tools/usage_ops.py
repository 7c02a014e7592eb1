"""Usage operation: the supervisor records what a session has spent (internal, caller `supervisor`).

`session.record_usage` sets the session's running totals (`services.sessions.usage.record`) and, in the
same transaction, enforces the budgets (`services.sessions.budgets.enforce`): a newly reached limit records
`budget.exceeded`; a task over its budget is blocked and the session's capability revoked, and
the answer's `stop_reason` tells the supervisor to stop the process.
"""

from __future__ import annotations

from typing import Annotated, Any

from annotated_types import Ge
from pydantic import Field

from roundtable.services.args import Args, Count, Id, Number, Text
from roundtable.services.sessions import budgets, usage
from roundtable.services.sessions.usage_stream import Usage
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}


_COUNT = "Tokens so far (running total)."


class RecordUsageArgs(Args):
    allow_blank = frozenset({"model"})

    session_id: Id = Field(description="The session id.")
    input_tokens: Count = Field(0, description=_COUNT)
    cached_input_tokens: Count = Field(0, description=_COUNT)
    output_tokens: Count = Field(0, description=_COUNT)
    cost_usd: Annotated[Number, Ge(0)] | None = Field(
        None, description="Cost the harness reported, in USD (omit when it reports none)."
    )
    model: Text = Field("", description="Model(s) the harness reported.")


async def record_usage(call: Call[RecordUsageArgs]) -> dict[str, Any]:
    a = call.args
    spent = Usage(
        input_tokens=a.input_tokens,
        cached_input_tokens=a.cached_input_tokens,
        output_tokens=a.output_tokens,
        cost_usd=a.cost_usd,
        model=a.model,
    )
    config = call.runtime.config
    recorded = await usage.record(call.w, a.session_id, spent, config.usage.prices)
    enforced = await budgets.enforce(call.w, config.budgets, recorded, actor=call.actor)
    return {
        "session_id": recorded.session_id,
        "tokens": spent.tokens,
        "cost_usd": round(recorded.cost_usd, 6),
        "cost_source": recorded.cost_source,
        "crossed": [c.payload(recorded.session_id) for c in enforced.crossed],
        "stop_reason": enforced.stop_reason,
    }


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="session.record_usage",
        description="Supervisor: a session's usage so far, read from its harness's output; enforces budgets.",
        args=RecordUsageArgs,
        output_schema=_OBJECT,
        handler=record_usage,
        audience="internal",
    ),
]
