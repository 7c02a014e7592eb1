"""The Chair: tick steps, failure isolation, agent sync, the loop's wake-ups, convergence."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from roundtable import chair, clock
from roundtable.chair.tick import NEEDS_REVIEW_SQL
from roundtable.clock import VirtualClock
from roundtable.config import PoolConfig
from roundtable.runtime import Runtime
from roundtable.services.coordination import chair_steps, runs

pytestmark = pytest.mark.anyio

PATCH = "--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n line\n+more\n"


async def _task(runtime: Runtime, task_id: str, priority: int = 100, **extra: object) -> None:
    await runtime.call(
        "task.create", {"title": task_id, "body_md": "do it", "task_id": task_id, "priority": priority, **extra}
    )


async def _proposal(runtime: Runtime, project: Path, proposal_id: str, risk: str = "normal") -> str:
    """A pending proposal row with a stored patch revision (as the proposal tools store them)."""
    sha = hashlib.sha256(PATCH.encode()).hexdigest()
    path = project / ".roundtable" / "patches" / f"{sha}.diff"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PATCH, encoding="utf-8")
    async with runtime.db.write() as tx:
        await tx.insert(
            "proposals",
            {
                "id": proposal_id,
                "task_id": "T-1",
                "agent_id": "implementer-1",
                "title": proposal_id,
                "summary_md": "s",
                "patch_path": f".roundtable/patches/{sha}.diff",
                "status": "pending",
                "risk": risk,
                "current_revision": sha,
                "revision_number": 1,
                "created_at": clock.now(),
            },
        )
    return sha


async def _events(runtime: Runtime, type_: str) -> list[dict]:
    async with runtime.db.read() as r:
        rows = await r.fetchall(
            "SELECT actor_id, task_id, payload_json FROM events WHERE type = ? ORDER BY id", (type_,)
        )
    return [{"actor": row[0], "task": row[1], **json.loads(row[2])} for row in rows]


async def test_assigns_open_tasks_round_robin_to_enabled_implementers(runtime: Runtime, run_id: str) -> None:
    for i in range(3):
        await _task(runtime, f"T-{i}", priority=i + 1)
    await _task(runtime, "T-mine", assigned_agent_id="architect-1")
    await _task(runtime, "T-blocked", status="blocked")
    report = await chair.tick(runtime, run_id)
    assert report.assigned == [
        {"task_id": "T-0", "agent_id": "implementer-1"},
        {"task_id": "T-1", "agent_id": "implementer-2"},
        {"task_id": "T-2", "agent_id": "implementer-1"},
    ]
    tasks = {t["id"]: t for t in (await runtime.call("task.list"))["tasks"]}
    assert tasks["T-1"]["status"] == "in_progress" and tasks["T-1"]["assigned_agent_id"] == "implementer-2"
    assert tasks["T-mine"]["status"] == "open" and tasks["T-blocked"]["assigned_agent_id"] == ""
    events = await _events(runtime, "task.assigned")
    assert events[0] == {"actor": "chair-1", "task": "T-0", "task_id": "T-0", "assigned_agent_id": "implementer-1"}
    # the next assignment goes to the least loaded implementer; disabled ones get nothing
    async with runtime.db.write() as tx:
        await tx.execute("UPDATE agents SET is_enabled = 0 WHERE id = 'implementer-2'")
    await _task(runtime, "T-3")
    assert (await chair.tick(runtime, run_id)).assigned == [{"task_id": "T-3", "agent_id": "implementer-1"}]
    assert (await chair.tick(runtime, run_id)).assigned == []


async def test_load_counts_only_unfinished_tasks_of_each_implementer(runtime: Runtime, run_id: str) -> None:
    """Finished tasks (any spelling of finished) weigh nothing; any other status, free text
    included, is load."""
    for task_id, status, agent in (
        ("T-a", "completed", "implementer-1"),
        ("T-b", "done", "implementer-1"),
        ("T-c", "cancelled", "implementer-1"),
        ("T-d", "waiting for review", "implementer-2"),
    ):
        await _task(runtime, task_id, status=status, assigned_agent_id=agent)
    await _task(runtime, "T-new")
    assert (await chair.tick(runtime, run_id)).assigned == [{"task_id": "T-new", "agent_id": "implementer-1"}]


async def test_requests_review_once_per_revision(runtime: Runtime, project: Path, run_id: str) -> None:
    sha = await _proposal(runtime, project, "P-1")
    report = await chair.tick(runtime, run_id)
    assert [r["proposal_id"] for r in report.reviews_requested] == ["P-1"]
    assert "Reviewer" in report.reviews_requested[0]["roles"]
    state = await runtime.call("table.get_state")
    assert state["proposals"][0]["status"] == "in_review"
    events = await _events(runtime, "proposal.review_requested")
    assert len(events) == 1 and events[0]["proposal_id"] == "P-1" and events[0]["revision"] == sha
    assert (await chair.tick(runtime, run_id)).reviews_requested == []
    assert len(await _events(runtime, "proposal.review_requested")) == 1


async def test_review_requests_read_only_proposals_still_waiting(runtime: Runtime, project: Path, run_id: str) -> None:
    """The step reads the pending proposals only, and a request checks its revision with one index
    probe: proposals already in review and the history of requests are not read on every tick
    (that work grew with the run's history)."""
    for n in range(40):
        await _proposal(runtime, project, f"P-old-{n:02d}")
    first = await chair.tick(runtime, run_id)
    assert len(first.reviews_requested) == 40
    sha = await _proposal(runtime, project, "P-new")
    report = await chair.tick(runtime, run_id)
    assert report.errors == []
    assert [r["proposal_id"] for r in report.reviews_requested] == ["P-new"]
    # A new revision puts a proposal back to pending (as `proposal.attach_patch` does): asked again.
    async with runtime.db.write() as tx:
        await tx.execute(
            "UPDATE proposals SET status = 'pending', revision_number = 2 WHERE id = 'P-old-07'",
        )
    again = await chair.tick(runtime, run_id)
    assert [(r["proposal_id"], r["revision"]) for r in again.reviews_requested] == [("P-old-07", sha)]
    assert (await chair.tick(runtime, run_id)).reviews_requested == []
    # Both reads are index ranges: the pending proposals, then one probe for the revision's request.
    async with runtime.db.read() as r:
        for sql, args, index in (
            (NEEDS_REVIEW_SQL, ("pending", run_id), "SEARCH proposals USING INDEX idx_proposals_"),
            (chair_steps.ANNOUNCED_SQL, ("P-new", sha), "SEARCH events USING INDEX idx_events_review_requested"),
        ):
            plan = " ".join(str(row[3]) for row in await r.fetchall("EXPLAIN QUERY PLAN " + sql, args))
            assert index in plan and "=?" in plan and "SCAN" not in plan, plan


async def test_tick_continues_past_failing_items(runtime: Runtime, project: Path, run_id: str) -> None:
    # Real SQLite triggers make exactly these rows fail to update.
    async with runtime.db.write() as tx:
        await tx.execute(
            "CREATE TRIGGER no_bad_task BEFORE UPDATE ON tasks WHEN NEW.id = 'T-bad'"
            " BEGIN SELECT RAISE(ABORT, 'task T-bad is broken'); END"
        )
        await tx.execute(
            "CREATE TRIGGER no_bad_proposal BEFORE UPDATE ON proposals WHEN NEW.id = 'P-bad'"
            " BEGIN SELECT RAISE(ABORT, 'proposal P-bad is broken'); END"
        )
        await tx.insert(
            "claims",
            {
                "id": "C-old",
                "resource_id": "file:a.py",
                "agent_id": "implementer-1",
                "task_id": "T-good",
                "claim_type": "write",
                "status": "active",
                "expires_at": "2000-01-01T00:00:00.000000000Z",
                "created_at": clock.now(),
            },
        )
    await _task(runtime, "T-bad", priority=1)
    await _task(runtime, "T-good", priority=2)
    await _proposal(runtime, project, "P-bad")
    await _proposal(runtime, project, "P-good")
    request = await runtime.call(
        "agent.turn_request", {"run_id": run_id, "agent_id": "implementer-1", "reason_md": "go"}
    )
    report = await chair.tick(runtime, run_id)
    assert [a["task_id"] for a in report.assigned] == ["T-good"]
    assert [r["proposal_id"] for r in report.reviews_requested] == ["P-good"]
    assert report.claims_expired == ["C-old"]
    assert report.scheduled and report.scheduled["request_event_id"] == request["request_event_id"]
    assert len(report.errors) == 2 and "T-bad" in report.errors[0] and "P-bad" in report.errors[1]
    errors = await _events(runtime, "chair.error")
    assert [(e["step"], e["item"]) for e in errors] == [("assign_task", "T-bad"), ("request_review", "P-bad")]
    assert all(e["actor"] == "chair-1" for e in errors)
    expired = await _events(runtime, "claim.expired")
    assert expired == [
        {
            "actor": "system",
            "task": "T-good",
            "claim_id": "C-old",
            "resource_id": "file:a.py",
            "status": "expired",
            "reason": "ttl elapsed",
        }
    ]
    # the same failure on the next tick is reported but not logged again
    again = await chair.tick(runtime, run_id)
    assert len(again.errors) == 2
    assert len(await _events(runtime, "chair.error")) == 2
    lines = report.lines()
    assert "assigned T-good to implementer-1" in lines and any(line.startswith("error:") for line in lines)


async def test_sync_agents_from_config(runtime: Runtime) -> None:
    await chair.sync_agents(runtime)
    state = await runtime.call("table.get_state")
    ids = {a["id"]: a for a in state["agents"]}
    assert set(ids) == {
        "chair-1",
        "architect-1",
        "tester-1",
        "security-1",
        "memory-oracle-1",
        "implementer-1",
        "implementer-2",
        "reviewer-1",
    }
    assert ids["implementer-1"]["role"] == "Implementer" and ids["implementer-1"]["command"] == "codex"
    assert ids["chair-1"]["name"] == "Chair 1" and all(a["is_enabled"] for a in ids.values())
    # shrink the implementer pool: implementer-2 is kept but disabled; a manual disable is undone
    async with runtime.db.write() as tx:
        await tx.execute("UPDATE agents SET is_enabled = 0 WHERE id = 'reviewer-1'")
    agents = runtime.config.agents.model_copy(update={"implementers": PoolConfig(count=1, adapter="codex")})
    runtime.config = runtime.config.model_copy(update={"agents": agents})
    await chair.sync_agents(runtime)
    ids = {a["id"]: a for a in (await runtime.call("table.get_state"))["agents"]}
    assert ids["implementer-2"]["is_enabled"] is False and ids["reviewer-1"]["is_enabled"] is True
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM adapter_capabilities") >= 5


async def test_convergence_and_headless_loop(runtime: Runtime, run_id: str) -> None:
    assert await chair.converge(runtime, run_id) == ("active", "awaiting_initial_work")
    await _task(runtime, "T-1")
    assert await chair.converge(runtime, run_id) == ("active", "work_remains")
    await runtime.call("task.update_status", {"task_id": "T-1", "status": "blocked"})
    result = await chair.run_loop(runtime, run_id, max_iterations=3, interval=0.01)
    assert (result.status, result.reason, result.iterations) == ("blocked", "all_remaining_tasks_blocked", 1)
    async with runtime.db.read() as r:
        run = await runs.get_run(r, run_id)
    assert run.status == "blocked" and run.ended_at
    assert (await _events(runtime, "orchestrator.blocked"))[0]["reason"] == "all_remaining_tasks_blocked"


async def test_runs_service(runtime: Runtime) -> None:
    from roundtable.errors import ToolError

    with pytest.raises(ToolError, match="no run available to resume"):
        await runs.resume_run(runtime)
    first = await runs.create_run(runtime, "one")
    assert first.id.startswith("RUN-") and first.status == "active" and first.goal == "one"
    with pytest.raises(ToolError, match=f"run {first.id} already exists; use --resume"):
        await runs.create_run(runtime, "again", run_id=first.id)
    await runs.end_run(runtime, first.id, "completed")
    async with runtime.db.read() as r:
        assert (await runs.get_run(r, first.id)).status == "completed"
    resumed = await runs.resume_run(runtime)
    assert resumed.id == first.id and resumed.status == "active" and resumed.ended_at == ""
    snapshot = await runs.write_snapshot(runtime, first.id)
    async with runtime.db.read() as r:
        data = json.loads(await r.scalar("SELECT snapshot_json FROM run_snapshots WHERE id = ?", (snapshot,)))
    assert data["runs"][0]["id"] == first.id and data["tasks"] == []


async def test_chair_loop_wakes_on_turn_request_and_on_wake(runtime: Runtime, run_id: str) -> None:
    timings = runtime.config.chair.model_copy(update={"tick_interval": 30.0})
    runtime.config = runtime.config.model_copy(update={"chair": timings})
    # Virtual time that never moves: whatever the loop does after its first cycle, a wake did.
    loop = chair.ChairLoop(runtime, clock=VirtualClock())
    task = asyncio.create_task(loop.run())
    try:
        for _ in range(100):
            if loop.state.ticks >= 1:
                break
            await asyncio.sleep(0.01)
        assert loop.state.ticks == 1 and loop.health() == "ready"
        req = await runtime.call(
            "agent.turn_request", {"run_id": run_id, "agent_id": "implementer-1", "reason_md": "x"}
        )
        for _ in range(200):
            if await _events(runtime, "agent.turn_scheduled"):
                break
            await asyncio.sleep(0.01)
        scheduled = await _events(runtime, "agent.turn_scheduled")
        assert scheduled[0]["request_event_id"] == req["request_event_id"]
        loop.pause()
        assert loop.paused and loop.state.paused

        async def round_trip() -> None:
            """Wake the loop and wait until it has gone round once (it plans its next tick anew)."""
            planned = loop.state.next_tick_at
            loop.wake()
            for _ in range(500):
                if loop.state.next_tick_at != planned:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("the woken loop did not go round")

        await round_trip()  # a cycle already under way when paused finishes
        ticks = loop.state.ticks
        await round_trip()
        assert loop.state.ticks == ticks  # paused: woken but no tick
        loop.resume()
        for _ in range(100):
            if loop.state.ticks > ticks:
                break
            await asyncio.sleep(0.01)
        assert loop.state.ticks > ticks and loop.state.last_tick_at and loop.state.next_tick_at
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_chair_loop_converges_its_run(runtime: Runtime, run_id: str) -> None:
    await _task(runtime, "T-1", status="blocked")
    loop = chair.ChairLoop(runtime, interval=0.05, converge_run_id=run_id)
    await asyncio.wait_for(loop.run(), timeout=5)
    assert loop.converged == ("blocked", "all_remaining_tasks_blocked")
    async with runtime.db.read() as r:
        assert (await runs.get_run(r, run_id)).status == "blocked"
    idle = chair.ChairLoop(runtime)
    await idle.tick_all()
    assert idle.health() == "healthy-idle" and idle.state.ticks == 1


async def test_a_loop_cycle_costs_what_changed(runtime: Runtime, run_id: str, project: Path) -> None:
    """Nothing committed since the last cycle → no tick at all; a commit by another connection
    (another process, the CLI) → a full cycle that does the work; a sweep comes when it is due."""
    await chair.sync_agents(runtime)
    virtual = VirtualClock()
    loop = chair.ChairLoop(runtime, interval=30.0, clock=virtual)
    try:
        first = await loop.cycle()
        assert [r.run_id for r in first] == [run_id]
        await loop.cycle()  # the first cycle's own writes (if any) are seen once
        before = loop.skipped_cycles
        assert await loop.cycle() == []
        assert loop.skipped_cycles == before + 1
        # A task created through a separate runtime (its own connections), like another process.
        version = runtime.bus.version
        other = await Runtime.open(project)
        try:
            await _task(other, "T-elsewhere")
        finally:
            await other.close()
        # The store's commit watch announces it on this process's bus within a poll or two.
        assert await runtime.bus.wait_for_change(version, 5.0)
        reports = await loop.cycle()
        assert [a for r in reports for a in r.assigned] == [{"task_id": "T-elsewhere", "agent_id": "implementer-1"}]
        await loop.cycle()
        assert await loop.cycle() == []
        virtual.advance(9.9)  # the sweep (every 5 periods, at most 10 s) is not due yet
        assert await loop.cycle() == []
        virtual.advance(0.1)  # now it is: time alone may have expired something
        assert [r.run_id for r in await loop.cycle()] == [run_id]
        assert await loop.cycle() == []
    finally:
        await loop.close()


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Let the loop's task run until `condition` holds (a bounded wall-clock wait: virtual time
    does not move by itself, so this never waits out a period)."""
    deadline = asyncio.get_running_loop().time() + 10
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} did not happen")
        await asyncio.sleep(0.005)


async def test_the_loop_goes_round_once_per_period_of_its_clock(runtime: Runtime, run_id: str) -> None:
    """A period in virtual time: no cycle before it has passed, one when it has; idle cycles
    read nothing until the sweep (five periods) is due."""
    virtual = VirtualClock()
    loop = chair.ChairLoop(runtime, interval=1.0, clock=virtual)
    task = asyncio.create_task(loop.run())
    try:
        await _until(lambda: loop.state.ticks == 1 and virtual.sleeping >= 1, "the first cycle")
        virtual.advance(0.9)
        for _ in range(50):  # the loop is free to run: it must still be waiting
            await asyncio.sleep(0)
        assert loop.state.ticks == 1
        for tick in range(2, 5):
            virtual.advance(0.1 if tick == 2 else 1.0)
            await _until(lambda n=tick: loop.state.ticks == n and virtual.sleeping >= 1, f"cycle {tick}")
        skipped = loop.skipped_cycles
        assert skipped >= 1  # nothing was committed: nothing read
        virtual.advance(10.0)  # past any sweep deadline (at most five periods after a full cycle)
        await _until(lambda: loop.state.ticks == 5 and virtual.sleeping >= 1, "the sweep")
        assert loop.skipped_cycles == skipped
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_shared_steps_run_once_per_cycle(runtime: Runtime, project: Path) -> None:
    await chair.sync_agents(runtime)
    first = (await runs.create_run(runtime, "one")).id
    second = (await runs.create_run(runtime, "two")).id
    await _task(runtime, "T-1")
    await _proposal(runtime, project, "P-1")
    reports = {r.run_id: r for r in await chair.ChairLoop(runtime).tick_all()}
    assert set(reports) == {first, second}
    assigned = [a for r in reports.values() for a in r.assigned]
    reviews = [p for r in reports.values() for p in r.reviews_requested]
    assert [a["task_id"] for a in assigned] == ["T-1"] and [p["proposal_id"] for p in reviews] == ["P-1"]
