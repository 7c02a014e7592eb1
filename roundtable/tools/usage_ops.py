"""Usage operation: the supervisor records what a session has spent (internal, caller `supervisor`).

`session.record_usage` sets the session's running totals (`services.sessions.usage.record`) and, in the
same transaction, enforces the budgets (`services.sessions.budgets.enforce`): a newly reached limit records
`budget.exceeded`; a task over its budget is blocked and the session's capability revoked, and
the answer's `stop_reason` tells the supervisor to stop the process.
"""

from __future__ import annotations

from typing import Any

from roundtable.errors import ValidationError
from roundtable.services.sessions import budgets, usage
from roundtable.services.sessions.usage_stream import Usage
from roundtable.tools.args import opt_int, opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import integer, number, obj, string

_OBJECT = {"type": "object"}


async def record_usage(call: Call) -> dict[str, Any]:
    a = call.args
    cost = a.get("cost_usd")
    if cost is not None and (not isinstance(cost, int | float) or cost < 0):
        raise ValidationError("cost_usd must be a non-negative number")
    spent = Usage(
        input_tokens=opt_int(a, "input_tokens", 0),
        cached_input_tokens=opt_int(a, "cached_input_tokens", 0),
        output_tokens=opt_int(a, "output_tokens", 0),
        cost_usd=float(cost) if cost is not None else None,
        model=opt_str(a, "model"),
    )
    config = call.runtime.config
    recorded = await usage.record(call.w, a["session_id"], spent, config.usage.prices)
    enforced = await budgets.enforce(call.w, config.budgets, recorded, actor=call.actor)
    return {
        "session_id": recorded.session_id,
        "tokens": spent.tokens,
        "cost_usd": round(recorded.cost_usd, 6),
        "cost_source": recorded.cost_source,
        "crossed": [c.payload(recorded.session_id) for c in enforced.crossed],
        "stop_reason": enforced.stop_reason,
    }


_COUNT = "Tokens so far (running total)."

TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="session.record_usage",
        description="Supervisor: a session's usage so far, read from its harness's output; enforces budgets.",
        input_schema=obj(
            {
                "session_id": string("The session id."),
                "input_tokens": integer(_COUNT, minimum=0),
                "cached_input_tokens": integer(_COUNT, minimum=0),
                "output_tokens": integer(_COUNT, minimum=0),
                "cost_usd": number("Cost the harness reported, in USD (omit when it reports none)."),
                "model": string("Model(s) the harness reported."),
            },
            ["session_id"],
        ),
        output_schema=_OBJECT,
        handler=record_usage,
        audience="internal",
        allow_blank=frozenset({"model"}),
    ),
]
