"""Usage operation: the supervisor records what a session has spent (internal, caller `supervisor`).

`session.record_usage` sets the session's running totals (`services.sessions.usage.record`) and, in the
same transaction, enforces the budgets (`services.sessions.budgets.enforce`): a newly reached limit records
`budget.exceeded`; a task over its budget is blocked and the session's capability revoked, and
the answer's `stop_reason` tells the supervisor to stop the process. Its model is declared in
`services.sessions.budgets`, which receives it whole.
"""

from __future__ import annotations

from typing import Any

from roundtable.services.sessions import budgets
from roundtable.services.sessions.budgets import PrintedUsageArgs
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

_OBJECT = {"type": "object"}


async def record_usage(call: Call[PrintedUsageArgs]) -> dict[str, Any]:
    return await budgets.record_printed(call.w, call.args, call.runtime.config, actor=call.actor)


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="session.record_usage",
        description="Supervisor: a session's usage so far, read from its harness's output; enforces budgets.",
        args=PrintedUsageArgs,
        output_schema=_OBJECT,
        handler=record_usage,
        audience="internal",
    ),
]
