"""Budgets: the spending limits of `budgets:` (per task, per run, per UTC day; tokens and/or USD).

A limit is reached when the sessions it covers have used at least its tokens or its USD. `reached`
says which limits are; the dispatcher launches nothing for work whose task, run or day has
reached one. `enforce` runs with every usage record a session makes (inside that transaction):
each limit reached for the first time records `budget.exceeded` {scope, key, tokens, cost_usd,
limit_tokens, limit_usd, session_id}; a task whose budget is reached is blocked (`task.blocked`,
the reason starting `budget:`) and the recording session's capability is revoked with that
reason, so its next tool call is refused and the supervisor stops it.

The two usage operations are declared here and received whole: `session.record_usage` (a
session's running totals as its harness printed them, `record_printed`) and
`gateway.record_usage` (one model request as the API answered it, `record_measured`); each
records the usage and enforces the budgets in the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from annotated_types import Ge, Le
from pydantic import Field

from roundtable import clock
from roundtable.config import BudgetsConfig, Config, LimitConfig
from roundtable.domain import EventType, TaskStatus
from roundtable.services.args import Args, Count, Id, Number, Text
from roundtable.services.sessions import usage
from roundtable.services.sessions.usage import Recorded, Totals
from roundtable.services.sessions.usage_stream import Usage
from roundtable.store.db import Reader, Tx

REASON_PREFIX = "budget:"
SCOPES = ("task", "run", "day")


def describe_limit(limit: LimitConfig) -> str:
    parts = ([f"{limit.tokens:,} tokens"] if limit.tokens else []) + ([f"${limit.usd:.2f}"] if limit.usd else [])
    return " or ".join(parts)


@dataclass(frozen=True)
class Crossing:
    """A limit that is reached: its scope (`task`, `run`, `day`), what it covers and the spend."""

    scope: str
    key: str
    used: Totals
    limit: LimitConfig

    @property
    def reason(self) -> str:
        what = {"task": f"task {self.key}", "run": f"run {self.key}", "day": f"the day {self.key} (UTC)"}[self.scope]
        return (
            f"{REASON_PREFIX} {what} has used {self.used.tokens:,} tokens (${self.used.cost_usd:.2f})"
            f" of its {self.scope} budget of {describe_limit(self.limit)}"
        )

    def payload(self, session_id: str = "") -> dict[str, object]:
        return {
            "scope": self.scope,
            "key": self.key,
            "tokens": self.used.tokens,
            "cost_usd": round(self.used.cost_usd, 6),
            "limit_tokens": self.limit.tokens,
            "limit_usd": self.limit.usd,
            "session_id": session_id,
            "reason": self.reason,
        }


def _over(used: Totals, limit: LimitConfig) -> bool:
    return bool((limit.tokens and used.tokens >= limit.tokens) or (limit.usd and used.cost_usd >= limit.usd))


def today() -> str:
    return clock.now()[:10]


async def reached(
    reader: Reader | Tx, budgets: BudgetsConfig, *, task_id: str = "", run_id: str = "", day: str = ""
) -> list[Crossing]:
    """The limits reached among the task's, the run's and the day's (those given and set)."""
    found: list[Crossing] = []
    for scope, key, column in (("task", task_id, "task_id"), ("run", run_id, "run_id"), ("day", day, "day")):
        limit: LimitConfig = getattr(budgets, scope)
        if not key or not limit.limited:
            continue
        used = await usage.totals(reader, **{column: key})
        if _over(used, limit):
            found.append(Crossing(scope, key, used, limit))
    return found


async def _recorded(tx: Tx, crossing: Crossing) -> bool:
    return bool(
        await tx.scalar(
            "SELECT 1 FROM events WHERE type = ? AND json_extract(payload_json, '$.scope') = ?"
            " AND json_extract(payload_json, '$.key') = ? LIMIT 1",
            (EventType.BUDGET_EXCEEDED, crossing.scope, crossing.key),
        )
    )


@dataclass(frozen=True)
class Enforced:
    """What a usage record set off: the limits newly crossed, and why the session must stop ('')."""

    crossed: list[Crossing]
    stop_reason: str


async def enforce(tx: Tx, budgets: BudgetsConfig, rec: Recorded, *, actor: str) -> Enforced:
    """Record each newly reached limit; block an over-budget task and revoke the session."""
    from roundtable.domain import TERMINAL_TASK_STATUSES
    from roundtable.services.coordination import autopilot
    from roundtable.services.sessions import records as sessions

    crossings = await reached(tx, budgets, task_id=rec.task_id, run_id=rec.run_id, day=rec.day)
    crossed = []
    stop = ""
    for crossing in crossings:
        if not await _recorded(tx, crossing):
            await tx.append_event(
                rec.run_id,
                EventType.BUDGET_EXCEEDED,
                crossing.payload(rec.session_id),
                actor_id=actor,
                task_id=rec.task_id if crossing.scope == "task" else "",
            )
            crossed.append(crossing)
        if crossing.scope != "task":
            continue
        stop = crossing.reason
        status = await tx.scalar("SELECT status FROM tasks WHERE id = ?", (rec.task_id,))
        if status is not None and status not in TERMINAL_TASK_STATUSES and status != TaskStatus.BLOCKED:
            blocked = autopilot.BlockTaskArgs(run_id=rec.run_id, task_id=rec.task_id, reason=crossing.reason)
            await autopilot.block_task(tx, blocked, actor=actor)
    if stop:
        await sessions.revoke_capabilities(tx, rec.session_id, stop)
    return Enforced(crossed, stop)


# --- the usage operations --------------------------------------------------------------------

_SESSION = "The session id."
_TOTAL = "Tokens so far (running total)."
_REQUEST = "Tokens of this one request, as the model API reported them."
# The bound on one request's count: far above any model's context, far below anything that could
# overflow a sum.
REQUEST_TOKENS_MAX = 100_000_000
RequestCount = Annotated[Count, Le(REQUEST_TOKENS_MAX)]


class PrintedUsageArgs(Args):
    # `session.record_usage` (internal: the supervisor's, from the harness's output).
    allow_blank = frozenset({"model"})

    session_id: Id = Field(description=_SESSION)
    input_tokens: Count = Field(default=0, description=_TOTAL)
    cached_input_tokens: Count = Field(default=0, description=_TOTAL)
    output_tokens: Count = Field(default=0, description=_TOTAL)
    cost_usd: Annotated[Number, Ge(0)] | None = Field(
        default=None, description="Cost the harness reported, in USD (omit when it reports none)."
    )
    model: Text = Field(default="", description="Model(s) the harness reported.")


class MeasuredUsageArgs(Args):
    # `gateway.record_usage` (internal: the gateway's, one request on the wire).
    allow_blank = frozenset({"model"})

    session_id: Id = Field(description=_SESSION)
    input_tokens: RequestCount = Field(
        default=0, description=_REQUEST + " Every prompt token, cache reads and writes included."
    )
    cached_input_tokens: RequestCount = Field(default=0, description=_REQUEST + " The part read from a cache.")
    output_tokens: RequestCount = Field(default=0, description=_REQUEST)
    model: Text = Field(default="", description="The model that answered.")


async def record_printed(tx: Tx, args: PrintedUsageArgs, config: Config, *, actor: str) -> dict[str, Any]:
    """The session's running totals as printed (`usage.record`), then the budgets enforced."""
    spent = Usage(args.input_tokens, args.cached_input_tokens, args.output_tokens, args.cost_usd, args.model)
    recorded = await usage.record(tx, args.session_id, spent, config.usage.prices)
    return _answer(recorded, spent.tokens, await enforce(tx, config.budgets, recorded, actor=actor))


async def record_measured(tx: Tx, args: MeasuredUsageArgs, config: Config, *, actor: str) -> dict[str, Any]:
    """One request's usage added to the session's measured totals (`usage.add_measured`; the
    cached part is at most the input), then the budgets enforced."""
    cached = min(args.cached_input_tokens, args.input_tokens)
    spent = Usage(args.input_tokens, cached, args.output_tokens, None, args.model)
    recorded = await usage.add_measured(tx, args.session_id, spent, config.usage.prices)
    return _answer(recorded, recorded.usage.tokens, await enforce(tx, config.budgets, recorded, actor=actor))


def _answer(recorded: Recorded, tokens: int, enforced: Enforced) -> dict[str, Any]:
    return {
        "session_id": recorded.session_id,
        "tokens": tokens,
        "cost_usd": round(recorded.cost_usd, 6),
        "cost_source": recorded.cost_source,
        "crossed": [c.payload(recorded.session_id) for c in enforced.crossed],
        "stop_reason": enforced.stop_reason,
    }
