"""Who owns an operation's transaction: `Runtime.call`, for every operation but those listed in
`OWN_TRANSACTIONS` (each with its reason); the Chair's run ending is one transaction, and its
turn steps take the writer's urgent lane through their declaration."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.tools.context import CHAIR
from roundtable.tools.registry import OWN_TRANSACTIONS, get_registry

pytestmark = pytest.mark.anyio


def test_exactly_the_listed_operations_manage_their_own_transactions() -> None:
    declared = {spec.name for spec in get_registry() if spec.mode == "none"}
    assert declared == set(OWN_TRANSACTIONS)
    for name, reason in OWN_TRANSACTIONS.items():
        assert reason.strip() and "\n" not in reason, name


def test_only_writes_take_the_urgent_lane() -> None:
    urgent = {spec.name for spec in get_registry() if spec.urgent}
    assert urgent == {"chair.expire_turns", "chair.schedule_turn"}
    assert all(spec.mode == "write" for spec in get_registry() if spec.urgent)


async def _commits_of(runtime: Runtime, tool: str, args: dict[str, object]) -> tuple[dict[str, object], int]:
    before = runtime.db.commits
    out = await runtime.call(tool, args, CHAIR)
    return out, runtime.db.commits - before


async def test_ending_a_run_is_one_transaction(runtime: Runtime) -> None:
    run = await runs.create_run(runtime, "goal")
    await runtime.call("task.create", {"title": "t", "body_md": "b", "task_id": "T-1"})
    await runtime.call(
        "resource.claim",
        {"agent_id": "implementer-1", "task_id": "T-1", "claim_type": "write", "resource_type": "file", "path": "README.md"},
    )
    out, commits = await _commits_of(
        runtime, "chair.end_run", {"run_id": run.id, "status": "completed", "iterations": 3, "reason": "done"}
    )
    assert commits == 1
    assert out["status"] == "completed" and len(out["released_claims"]) == 1
    async with runtime.db.read() as r:
        types = [str(row[0]) for row in await r.fetchall("SELECT type FROM events WHERE run_id = ? ORDER BY id", (run.id,))]
        claim_status = await r.scalar("SELECT status FROM claims")
    assert types[-3:] == ["claim.released", "run.ended", "orchestrator.completed"]
    assert claim_status == "released"


async def test_a_refused_run_end_changes_nothing(runtime: Runtime) -> None:
    """The wind-down and the end share one transaction: when the end is refused (an archived
    run), the claims the wind-down released are held again."""
    run = await runs.create_run(runtime, "goal")
    await runtime.call("task.create", {"title": "t", "body_md": "b", "task_id": "T-1"})
    await runtime.call(
        "resource.claim",
        {"agent_id": "implementer-1", "task_id": "T-1", "claim_type": "write", "resource_type": "file", "path": "README.md"},
    )
    async with runtime.db.write() as tx:  # archived behind the loop's back
        await tx.update("runs", {"id": run.id}, {"status": "archived"})
    with pytest.raises(Exception, match="archived"):
        await runtime.call("chair.end_run", {"run_id": run.id, "status": "failed", "iterations": 1}, CHAIR)
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT status FROM claims") == "active"
        assert await r.scalar("SELECT count(*) FROM events WHERE type = 'run.ended'") == 0


async def test_the_turn_hand_over_goes_before_waiting_ordinary_writers(runtime: Runtime) -> None:
    run = await runs.create_run(runtime, "goal")
    order: list[str] = []
    release = asyncio.Event()
    held = asyncio.Event()

    async def holder() -> None:
        async with runtime.db.write(tool="holder") as tx:
            await tx.insert("tasks", {"id": "T-holder", "title": "h", "body_md": "b"})
            held.set()
            await release.wait()

    async def ordinary() -> None:
        await runtime.call("task.create", {"title": "later", "body_md": "b", "task_id": "T-later"})
        order.append("task.create")

    async def hand_over() -> None:
        await runtime.call("chair.schedule_turn", {"run_id": run.id}, CHAIR)
        order.append("chair.schedule_turn")

    first = asyncio.create_task(holder())
    await asyncio.wait_for(held.wait(), 10)
    waiting = [asyncio.create_task(ordinary())]
    await _until(lambda: runtime.db._write_lock.waiting() >= 1)
    waiting.append(asyncio.create_task(hand_over()))
    await _until(lambda: runtime.db._write_lock.waiting() >= 2)
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *waiting), 10)
    assert order == ["chair.schedule_turn", "task.create"]


async def _until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until `condition` holds (bounded: a stuck test fails, not hangs)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")
