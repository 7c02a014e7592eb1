"""Which run a change belongs to, and so which run its events are filed under.

The run is never guessed from "the latest active run". It comes, first match wins, from:

1. the call's arguments: `run_id`, where the tool has one (`patch.apply`, `resource.claim`,
   `resource.release`, the turn tools);
2. the session capability's run (a capability is issued for one run);
3. the object acted on: a task's run (`tasks.run_id`, fixed when the task is created); a
   proposal's run (`proposals.run_id`, fixed when it is created: its task's run unless 1-2 named
   one). Votes, decisions, security reviews, test runs, approvals, validations, applies and memory
   entries about a proposal or a task take that object's run;
4. the caller's own run (`Caller.run_id`): the run the console has selected, the one the Chair is
   ticking, the owner's; in-process callers set it with `Caller.with_run(run_id)`;
5. when none of these names a run: the active run, if exactly one run is active.

Otherwise — no run is active, or several are and nothing names one — the change is filed under
`""`, the unscoped run (`table.watch` with `run_id ""` lists it with every other run); the rule
is the same for every operation, so where an event goes never depends on which run started last.
One operation refuses the ambiguous case (several active runs) instead, because its record must
belong to a run: `patch.apply` (the transaction row carries the run) names the active runs and
asks for `run_id`; with no active run at all it files under `""` like everything else.

`RunHint` is what a call says (1-2 as `named`, 4 as `caller`); the object's run (3) is read by
the service that loads the object, and `resolve`/`resolve_sync` apply the order.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from roundtable.errors import ToolError
from roundtable.store.db import Reader, Tx

_ACTIVE_RUNS = "SELECT id FROM runs WHERE status = 'active' ORDER BY started_at, id"


@dataclass(frozen=True)
class RunHint:
    """What a call says about its run: `named` is the call's `run_id` argument, else its session
    capability's run; `caller` is the caller's own run (`Caller.run_id`)."""

    named: str = ""
    caller: str = ""


NO_HINT = RunHint()


def choose(hint: RunHint, owner: str, active: list[str], *, required: str = "") -> str:
    """The run by the module's order, from the hint, the object's run (`owner`) and the ids of
    the active runs. With `required` (the operation's name) an ambiguous case is refused."""
    run = hint.named or owner or hint.caller
    if run:
        return run
    if len(active) == 1:
        return active[0]
    if required and active:
        raise ToolError(
            f"{required}: {len(active)} runs are active ({', '.join(active)}) and nothing names the run "
            "this belongs to; pass run_id"
        )
    return ""


async def active_runs(q: Reader | Tx) -> list[str]:
    """Ids of the active runs, oldest first."""
    return [str(row[0]) for row in await q.fetchall(_ACTIVE_RUNS)]


async def resolve(q: Reader | Tx, hint: RunHint, *, owner: str = "", required: str = "") -> str:
    """The run a change belongs to (see the module docstring); reads the active runs only when
    nothing names one."""
    if hint.named or owner or hint.caller:
        return choose(hint, owner, [])
    return choose(hint, owner, await active_runs(q), required=required)


def resolve_sync(conn: sqlite3.Connection, hint: RunHint, *, owner: str = "") -> str:
    """`resolve` for code on the writer's thread (`Tx.run`)."""
    if hint.named or owner or hint.caller:
        return choose(hint, owner, [])
    return choose(hint, owner, [str(row[0]) for row in conn.execute(_ACTIVE_RUNS).fetchall()])


async def task_run(q: Reader | Tx, task_id: str) -> str:
    """The run of task `task_id` (`""` when it has none or does not exist)."""
    if not task_id:
        return ""
    value = await q.scalar("SELECT run_id FROM tasks WHERE id = ?", (task_id,))
    return str(value) if value else ""


async def proposal_run(q: Reader | Tx, proposal_id: str) -> str:
    """The run of proposal `proposal_id` (`""` when it has none or does not exist)."""
    if not proposal_id:
        return ""
    value = await q.scalar("SELECT run_id FROM proposals WHERE id = ?", (proposal_id,))
    return str(value) if value else ""


async def object_run(q: Reader | Tx, *, proposal_id: str = "", task_id: str = "") -> str:
    """The run of the object a record concerns: the proposal's, else the task's."""
    return await proposal_run(q, proposal_id) or await task_run(q, task_id)
