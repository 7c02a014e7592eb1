"""One Chair tick for one run, as a function of the stored state (the reference's
tick, with our turn expiry and hand-over). In order:

1. expire overdue turns (`agent.turn_expired`): scheduled but not started within
   `chair.turn_start_timeout`, started but not completed within `chair.turn_timeout`, or
   requested by an agent that is no longer enabled; then schedule the oldest unfinished turn
   request if no turn is in flight;
2. assign open, unassigned tasks to the enabled implementers, least loaded first
   (round-robin when loads are equal), each with a `task.assigned` event;
3. request reviews for pending proposals: once per proposal revision, through the
   `proposal.request_review` tool, then a `proposal.review_requested` event (a request moves
   the proposal to `in_review`, a new revision back to `pending`: the step reads only the
   pending ones, so its work does not grow with the run's history);
4. sweep claims past `expires_at` to `expired` (one `claim.expired` event each).

The spec schedules turns last; we do it first because every item is its own write transaction
and, with many agents writing, each waits its turn for the writer: scheduling last made the
hand-over after `agent.turn_complete` wait behind every assignment and review request (28 s
under the soak's load instead of milliseconds). Turn scheduling depends on none of the others.

The tick reads the state itself and writes only through the Chair's internal operations
(`tools/chair_ops.py`) with `Runtime.call` as the caller `chair`. An item that fails is recorded
as a `chair.error` event (once per item and message, so a broken proposal does not flood the log)
and the tick goes on: one bad proposal or run never stalls the others.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.chair.report import TickReport
from roundtable.domain import TERMINAL_TASK_STATUSES, ProposalStatus
from roundtable.services.coordination.agents import enabled_with_role
from roundtable.services.coordination.chair_steps import error_text, turns_due
from roundtable.store.records import Proposal, Task
from roundtable.tools.context import CHAIR

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

log = logging.getLogger("roundtable.chair")

ASSIGN_BATCH = 200


async def chair_call(runtime: Runtime, operation: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one of the Chair's operations as the Chair, acting for the run in `args`."""
    return await runtime.call(operation, args, CHAIR.with_run(str(args.get("run_id", ""))))


async def record_error(runtime: Runtime, run_id: str, step: str, item: str, error: str, report: TickReport) -> None:
    """Report a failing item, and record `chair.error` unless its latest one says the same."""
    report.errors.append(f"{step} {item}: {error}".strip())
    log.warning("chair tick %s: %s %s failed: %s", run_id, step, item, error)
    try:
        await chair_call(runtime, "chair.record_error", {"run_id": run_id, "step": step, "item": item, "error": error})
    except Exception:  # the error event itself is best effort; the tick goes on
        log.exception("could not record chair.error for run %s", run_id)


async def _assign_tasks(runtime: Runtime, run_id: str, report: TickReport) -> None:
    async with runtime.db.read() as r:
        implementers = await enabled_with_role(r, "Implementer")
        tasks = await r.all(
            Task,
            "SELECT * FROM tasks WHERE status = 'open' AND coalesce(assigned_agent_id, '') = ''"
            " AND run_id IN (?, '') ORDER BY priority, created_at, id",
            (run_id,),  # the run's own tasks and those of no run; agents' load counts every run
        )
        if not implementers or not tasks:
            return
        # Counted by SQLite: a Python row for every task ever assigned, on every tick, grew with
        # the project's history.
        ids, ended = [a.id for a in implementers], sorted(TERMINAL_TASK_STATUSES)
        rows = await r.fetchall(
            f"SELECT assigned_agent_id, count(*) FROM tasks WHERE assigned_agent_id IN ({', '.join('?' for _ in ids)})"
            f" AND status NOT IN ({', '.join('?' for _ in ended)}) GROUP BY assigned_agent_id",
            (*ids, *ended),
        )
    load = {a.id: 0 for a in implementers}
    for agent_id, count in rows:
        load[str(agent_id)] = int(count)
    agents = [a.id for a in implementers]
    failures: list[dict[str, str]] = []
    # Many assignments share one transaction (a commit each would make a backlog of a thousand
    # tasks take seconds); the operation gives each its own savepoint.
    for start in range(0, len(tasks), ASSIGN_BATCH):
        batch = [t.id for t in tasks[start : start + ASSIGN_BATCH]]
        done = await chair_call(
            runtime, "chair.assign_tasks", {"run_id": run_id, "task_ids": batch, "agents": agents, "load": load}
        )
        load = {str(k): int(v) for k, v in done["load"].items()}
        report.assigned += done["assigned"]
        failures += done["failures"]
    for failure in failures:
        await record_error(runtime, run_id, "assign_task", failure["task_id"], failure["error"], report)


def _revision_key(proposal: Proposal) -> str:
    return proposal.current_revision or f"r{proposal.revision_number}"


# The proposals that still need a review request: the pending ones. Requesting a review moves a
# proposal to `in_review` in the same transaction as its `proposal.review_requested` event, and a
# new revision moves it back to `pending`, so this reads only work still to do (an index range over
# pending proposals), never the run's history of requests.
NEEDS_REVIEW_SQL = "SELECT * FROM proposals WHERE status = ? AND run_id IN (?, '') ORDER BY created_at, id"


async def _request_reviews(runtime: Runtime, run_id: str, report: TickReport) -> None:
    async with runtime.db.read() as r:
        proposals = await r.all(Proposal, NEEDS_REVIEW_SQL, (ProposalStatus.PENDING, run_id))  # and no run's
    for proposal in proposals:
        revision = _revision_key(proposal)
        try:
            roles, reviewers = await _review_via_tool(runtime, proposal)
            marked = await chair_call(
                runtime,
                "chair.mark_in_review",
                {
                    "run_id": run_id,
                    "proposal_id": proposal.id,
                    "task_id": proposal.task_id,
                    "revision": revision,
                    "roles": roles,
                    "reviewers": reviewers,
                },
            )
        except Exception as exc:
            await record_error(runtime, run_id, "request_review", proposal.id, error_text(exc), report)
            continue
        report.reviews_requested.append(marked["review_requested"])


async def _review_via_tool(runtime: Runtime, proposal: Proposal) -> tuple[list[str], list[str]]:
    """Run `proposal.request_review` as the Chair: the roles the policy requires and the agents
    asked (ids, the spec's `reviewers` key, as in the tool's own event)."""
    result = await runtime.call("proposal.request_review", {"proposal_id": proposal.id}, CHAIR)
    roles = [str(x) for x in result.get("review_roles") or []]
    reviewers = [str(x["agent_id"]) for x in result.get("reviewers") or [] if isinstance(x, dict) and x.get("agent_id")]
    return roles, reviewers


async def _sweep_claims(runtime: Runtime, run_id: str, now: str, report: TickReport) -> None:
    try:
        swept = await chair_call(runtime, "chair.sweep_claims", {"run_id": run_id, "now": now})
    except Exception as exc:
        await record_error(runtime, run_id, "sweep_claims", "", error_text(exc), report)
        return
    report.claims_expired += [str(c) for c in swept["expired"]]


async def _sweep_workspaces(runtime: Runtime, run_id: str, report: TickReport) -> None:
    """Remove the run's workspaces whose task ended (the policy may keep them for days)."""
    try:
        await runtime.call("workspace.sweep", {"run_id": run_id}, CHAIR)
    except Exception as exc:
        await record_error(runtime, run_id, "sweep_workspaces", "", error_text(exc), report)


async def turns(runtime: Runtime, run_id: str, now: str, report: TickReport) -> None:
    """Expire the run's overdue turns, then schedule its next one (each step isolated) — each
    only when a read of the queue finds it due (`chair_steps.turns_due`): this runs on every
    tick and after every turn event, and most of those find nothing to do, while each write
    transaction of theirs would go before every agent's write waiting for the writer."""
    try:
        async with runtime.db.read() as r:
            expire, schedule = await turns_due(r, run_id, now, runtime.config.chair)
    except Exception:  # the operations read (and report) for themselves
        expire = schedule = True
    if expire:
        try:
            expired = await chair_call(runtime, "chair.expire_turns", {"run_id": run_id, "now": now})
            report.turns_expired += expired["expired"]
            schedule = schedule or bool(expired["expired"])
        except Exception as exc:
            await record_error(runtime, run_id, "expire_turns", "", error_text(exc), report)
            schedule = True
    if not schedule:
        return
    try:
        report.scheduled = (await chair_call(runtime, "chair.schedule_turn", {"run_id": run_id}))["scheduled"]
    except Exception as exc:
        await record_error(runtime, run_id, "schedule_turn", "", error_text(exc), report)


async def tick(runtime: Runtime, run_id: str, *, now: str | None = None, shared_steps: bool = True) -> TickReport:
    """One Chair tick for `run_id` (see the module docstring). `now` overrides the clock used
    for claim and turn expiry. Never raises for a failing item; see `TickReport.errors`.

    Task assignment and review requests look at the run's own tasks and proposals and at those
    of no run (which the first run to tick takes); `shared_steps=False` leaves them out."""
    at = now or clock.now()
    report = TickReport(run_id=run_id, at=at)
    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [("turns", lambda: turns(runtime, run_id, at, report))]
    if shared_steps:
        steps += [
            ("assign_tasks", lambda: _assign_tasks(runtime, run_id, report)),
            ("request_reviews", lambda: _request_reviews(runtime, run_id, report)),
        ]
    steps.append(("sweep_claims", lambda: _sweep_claims(runtime, run_id, at, report)))
    if shared_steps:
        steps.append(("sweep_workspaces", lambda: _sweep_workspaces(runtime, run_id, report)))
    for name, step in steps:
        try:
            await step()
        except Exception as exc:  # a step's own read failed; record it and go on
            await record_error(runtime, run_id, name, "", error_text(exc), report)
    return report
