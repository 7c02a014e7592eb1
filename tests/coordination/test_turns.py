"""Turn tools through Runtime.call: FIFO, duplicates, lifecycle checks and their exact errors."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from roundtable import chair, clock
from roundtable.chair.report import TickReport
from roundtable.chair.tick import turns
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.services.coordination.turns import NOT_SCHEDULED
from roundtable.store.db import DatabaseBusy
from tests.faults.helpers import db_fingerprint
from tests.helpers import agent

pytestmark = pytest.mark.anyio


async def _request(runtime: Runtime, run_id: str, agent: str, reason: str = "need a turn") -> dict:
    return await runtime.call("agent.turn_request", {"run_id": run_id, "agent_id": agent, "reason_md": reason})


async def _count_events(runtime: Runtime, type_: str = "") -> int:
    async with runtime.db.read() as r:
        if type_:
            return int(await r.scalar("SELECT count(*) FROM events WHERE type = ?", (type_,)))
        return int(await r.scalar("SELECT count(*) FROM events"))


async def test_fifo_with_three_agents_and_a_duplicate(runtime: Runtime, run_id: str) -> None:
    a = await _request(runtime, run_id, "implementer-1", "  first  ")
    b = await _request(runtime, run_id, "implementer-2")
    c = await _request(runtime, run_id, "reviewer-1")
    assert (a["queue_position"], b["queue_position"], c["queue_position"]) == (1, 2, 3)
    assert a["duplicate"] is False and a["queued"] is True and a["agent_id"] == "implementer-1"
    dup = await _request(runtime, run_id, "implementer-2", "a different reason")
    assert dup == {**b, "duplicate": True}
    assert await _count_events(runtime, "agent.turn_requested") == 3
    async with runtime.db.read() as r:
        payload = json.loads(await r.scalar("SELECT payload_json FROM events WHERE id = ?", (a["request_event_id"],)))
    assert payload["reason_md"] == "first" and payload["agent_id"] == "implementer-1" and payload["requested_at"]

    served = []
    for _ in range(3):
        report = await chair.tick(runtime, run_id)
        assert report.scheduled is not None
        # only one turn in flight: a second tick schedules nothing
        assert (await chair.tick(runtime, run_id)).scheduled is None
        agent, rid = report.scheduled["agent_id"], report.scheduled["request_event_id"]
        served.append(agent)
        assert report.scheduled["position"] == 1
        args = {"run_id": run_id, "agent_id": agent, "request_event_id": rid}
        started = await runtime.call("agent.turn_start", args)
        assert started["status"] == "agent.turn_started" and started["event"]["actor_id"] == agent
        done = await runtime.call("agent.turn_complete", args)
        assert done["status"] == "agent.turn_completed" and done["request_event_id"] == rid
    assert served == ["implementer-1", "implementer-2", "reviewer-1"]
    assert (await chair.tick(runtime, run_id)).scheduled is None
    # after completion the agent may ask again, and is first in an empty queue
    again = await _request(runtime, run_id, "implementer-1")
    assert again["duplicate"] is False and again["queue_position"] == 1


async def test_request_validation_messages(runtime: Runtime, run_id: str) -> None:
    before = await _count_events(runtime)
    cases = [
        (
            {"run_id": run_id, "agent_id": "implementer-1", "reason_md": "   "},
            "agent.turn_request: missing reason_md",
        ),
        (
            {"run_id": "", "agent_id": "implementer-1", "reason_md": "x"},
            f"agent.turn_request: missing run_id; the active run is {run_id}: pass run_id {run_id}",
        ),
        (
            {"run_id": run_id, "agent_id": "implementer-1", "reason_md": "x" * 1001},
            "reason_md must be 1000 characters or fewer",
        ),
        ({"run_id": "RUN-nope", "agent_id": "implementer-1", "reason_md": "x"}, "get run RUN-nope: not found"),
        ({"run_id": run_id, "agent_id": "ghost-1", "reason_md": "x"}, "get agent ghost-1: not found"),
        ({"run_id": run_id, "agent_id": "implementer-1"}, "agent.turn_request: missing required argument reason_md"),
        ({"run_id": run_id, "agent_id": 7, "reason_md": "x"}, "agent.turn_request: argument agent_id must be a string"),
    ]
    for args, message in cases:
        with pytest.raises(ToolError) as exc:
            await runtime.call("agent.turn_request", args)
        assert str(exc.value) == message
    # exactly 1000 code points after trimming is fine
    ok = await _request(runtime, run_id, "implementer-1", " " + "é" * 1000 + " ")
    assert ok["queue_position"] == 1
    assert await _count_events(runtime) == before + 1


async def test_request_needs_active_run_and_enabled_agent(runtime: Runtime, run_id: str) -> None:
    async with runtime.db.write() as tx:
        await tx.execute("UPDATE agents SET is_enabled = 0 WHERE id = 'implementer-2'")
    with pytest.raises(ToolError, match=r"^agent implementer-2 is disabled$"):
        await _request(runtime, run_id, "implementer-2")
    await runs.end_run(runtime, run_id, "completed")
    with pytest.raises(ToolError, match=rf"^run {run_id} is completed and cannot accept turn requests$"):
        await _request(runtime, run_id, "implementer-1")
    with pytest.raises(ToolError, match="cannot accept turn lifecycle events"):
        await runtime.call("agent.turn_start", {"run_id": run_id, "agent_id": "implementer-1", "request_event_id": 1})
    assert await _count_events(runtime, "agent.turn_requested") == 0


async def test_a_refused_poll_is_a_point_read_and_takes_no_write_lock(
    runtime: Runtime, run_id: str, project: Path
) -> None:
    first = await _request(runtime, run_id, "implementer-1")
    second = await _request(runtime, run_id, "implementer-2")
    assert (await chair.tick(runtime, run_id)).scheduled is not None  # implementer-1's turn
    poller = await Runtime.open(project, busy_timeout_ms=200)
    holder = sqlite3.connect(runtime.config.sqlite_path(project), isolation_level=None)
    try:
        before = await db_fingerprint(runtime)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock throughout
        waiting = {"run_id": run_id, "agent_id": "implementer-2", "request_event_id": second["request_event_id"]}
        for _ in range(3):
            with pytest.raises(ToolError) as refused:
                await poller.call("agent.turn_start", waiting, agent("implementer-2"))
            assert str(refused.value) == NOT_SCHEDULED.format(run_id=run_id)
        assert "table_watch" in str(refused.value) and f"roundtable://turns/{run_id}" in str(refused.value)
        # The scheduled agent's start does need the write lock, and waits for it (control).
        scheduled = {"run_id": run_id, "agent_id": "implementer-1", "request_event_id": first["request_event_id"]}
        with pytest.raises(DatabaseBusy):
            await poller.call("agent.turn_start", scheduled, agent("implementer-1"))
        holder.execute("ROLLBACK")
        assert await db_fingerprint(runtime) == before
        started = await poller.call("agent.turn_start", scheduled, agent("implementer-1"))
        assert started["status"] == "agent.turn_started"
        with pytest.raises(ToolError, match="already started"):
            await poller.call("agent.turn_start", scheduled, agent("implementer-1"))
    finally:
        holder.close()
        await poller.close()


async def test_lifecycle_errors(runtime: Runtime, run_id: str) -> None:
    req = await _request(runtime, run_id, "implementer-1")
    rid = req["request_event_id"]
    args = {"run_id": run_id, "agent_id": "implementer-1", "request_event_id": rid}

    async def fails(tool: str, call_args: dict, message: str) -> None:
        before = await _count_events(runtime)
        with pytest.raises(ToolError) as exc:
            await runtime.call(tool, call_args)
        assert str(exc.value) == message
        assert await _count_events(runtime) == before

    await fails("agent.turn_start", args, NOT_SCHEDULED.format(run_id=run_id))
    await fails("agent.turn_complete", args, "turn request has not started")
    await fails("agent.turn_start", {**args, "agent_id": "implementer-2"}, "turn request not found for this agent")
    await fails("agent.turn_start", {**args, "request_event_id": rid + 100}, "turn request not found for this agent")
    await fails("agent.turn_start", {**args, "agent_id": ""}, "agent.turn_start: missing agent_id")
    await fails(
        "agent.turn_start",
        {**args, "request_event_id": 0},
        "agent.turn_start: argument request_event_id must be at least 1",
    )
    await fails(
        "agent.turn_start",
        {**args, "request_event_id": 1.5},
        "agent.turn_start: argument request_event_id must be an integer",
    )
    await chair.tick(runtime, run_id)
    await runtime.call("agent.turn_start", args)
    await fails("agent.turn_start", args, "turn request has already started")
    await runtime.call("agent.turn_complete", args)
    await fails("agent.turn_complete", args, "turn request is already complete")
    await fails("agent.turn_start", args, "turn request is already complete")


async def test_turn_expiry(runtime: Runtime, run_id: str) -> None:
    from roundtable import clock

    timings = runtime.config.chair.model_copy(update={"turn_start_timeout": 5.0, "turn_timeout": 60.0})
    runtime.config = runtime.config.model_copy(update={"chair": timings})
    a = await _request(runtime, run_id, "implementer-1")
    b = await _request(runtime, run_id, "implementer-2")
    t0 = clock.now_ns()
    first = await chair.tick(runtime, run_id, now=clock.format_ns(t0))
    assert first.scheduled and first.scheduled["request_event_id"] == a["request_event_id"]
    # not started within turn_start_timeout: expires, and the next request is scheduled
    later = await chair.tick(runtime, run_id, now=clock.format_ns(t0 + 6_000_000_000))
    assert later.turns_expired == [
        {"agent_id": "implementer-1", "request_event_id": a["request_event_id"], "timeout": "turn_start_timeout"}
    ]
    assert later.scheduled and later.scheduled["request_event_id"] == b["request_event_id"]
    args_a = {"run_id": run_id, "agent_id": "implementer-1", "request_event_id": a["request_event_id"]}
    with pytest.raises(ToolError, match=r"^turn request has expired$"):
        await runtime.call("agent.turn_start", args_a)
    # the expired request counts as finished: the agent may ask again
    again = await _request(runtime, run_id, "implementer-1")
    assert again["duplicate"] is False and again["queue_position"] == 2
    # a started turn expires after turn_timeout
    args_b = {"run_id": run_id, "agent_id": "implementer-2", "request_event_id": b["request_event_id"]}
    await runtime.call("agent.turn_start", args_b)
    quiet = await chair.tick(runtime, run_id, now=clock.format_ns(clock.now_ns() + 30_000_000_000))
    assert quiet.turns_expired == [] and quiet.scheduled is None
    late = await chair.tick(runtime, run_id, now=clock.format_ns(clock.now_ns() + 61_000_000_000))
    assert [t["timeout"] for t in late.turns_expired] == ["turn_timeout"]
    assert late.scheduled and late.scheduled["request_event_id"] == again["request_event_id"]
    with pytest.raises(ToolError, match=r"^turn request has expired$"):
        await runtime.call("agent.turn_complete", args_b)
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT actor_id, payload_json FROM events WHERE type = 'agent.turn_expired'")
    assert [row[0] for row in rows] == ["chair-1", "chair-1"]


async def test_disabled_agent_request_is_expired_not_scheduled(runtime: Runtime, run_id: str) -> None:
    a = await _request(runtime, run_id, "implementer-1")
    b = await _request(runtime, run_id, "implementer-2")
    async with runtime.db.write() as tx:
        await tx.execute("UPDATE agents SET is_enabled = 0 WHERE id = 'implementer-1'")
    report = await chair.tick(runtime, run_id)
    assert [t["request_event_id"] for t in report.turns_expired] == [a["request_event_id"]]
    assert report.turns_expired[0]["timeout"] == "agent_disabled"
    assert report.scheduled and report.scheduled["request_event_id"] == b["request_event_id"]


async def test_concurrent_requests_from_two_runtimes_keep_one_each(project: Path, run_id: str) -> None:
    rt1 = await Runtime.open(project)
    rt2 = await Runtime.open(project)
    try:
        calls = []
        for _ in range(5):
            for rt in (rt1, rt2):
                for agent in ("implementer-1", "implementer-2"):
                    calls.append(_request(rt, run_id, agent))
        results = await asyncio.gather(*calls)
    finally:
        await rt1.close()
        await rt2.close()
    by_agent: dict[str, set[int]] = {}
    for res in results:
        by_agent.setdefault(res["agent_id"], set()).add(res["request_event_id"])
    assert all(len(ids) == 1 for ids in by_agent.values()), by_agent
    assert sum(1 for r in results if not r["duplicate"]) == 2
    async with await Runtime.open(project) as rt:
        assert await _count_events(rt, "agent.turn_requested") == 2


async def test_a_turn_without_a_run_says_turns_are_not_needed(runtime: Runtime, run_id: str) -> None:
    """The agent gave agent_id and reason_md but no run: the answer names run_id alone and, with no
    active run, says turns are not needed; with several it names them."""
    await runs.end_run(runtime, run_id, "completed")
    with pytest.raises(ToolError) as exc:
        await runtime.call("agent.turn_request", {"run_id": "", "agent_id": "implementer-1", "reason_md": "x"})
    assert str(exc.value).startswith("agent.turn_request: missing run_id; no run is active")
    assert "turns are needed only inside an active run" in str(exc.value)
    first = await runs.create_run(runtime, "one")
    second = await runs.create_run(runtime, "two")
    with pytest.raises(ToolError) as exc:
        await runtime.call("agent.turn_request", {"run_id": "", "reason_md": ""}, agent("implementer-1"))
    assert str(exc.value) == (
        f"agent.turn_request: missing run_id and reason_md; name one of the active runs: {first.id}, {second.id}"
    )


async def test_open_turns_are_the_unfinished_ones_at_every_step(runtime: Runtime, run_id: str) -> None:
    from roundtable import clock
    from roundtable.services.coordination import turns

    async def same() -> None:
        async with runtime.db.read() as r:
            every = await turns.load_turns(r, run_id)
            assert await turns.load_open_turns(r, run_id) == {k: t for k, t in every.items() if not t.finished}

    await same()
    for round_ in range(3):
        ids = [(await _request(runtime, run_id, who))["request_event_id"] for who in ("implementer-1", "implementer-2")]
        await same()
        report = await chair.tick(runtime, run_id)
        assert report.scheduled is not None
        await same()
        first = {"run_id": run_id, "agent_id": report.scheduled["agent_id"], "request_event_id": ids[0]}
        await runtime.call("agent.turn_start", first)
        await same()
        await runtime.call("agent.turn_complete", first)
        await same()
        await chair.tick(runtime, run_id)  # schedules the second request
        async with runtime.db.write() as tx:  # which is never started: expired
            expired = await turns.expire_overdue(
                tx, run_id, clock.now(), start_timeout=0, turn_timeout=0, enabled={"implementer-1", "implementer-2"}
            )
        assert [e["request_event_id"] for e in expired] == [ids[1]], round_
        await same()
        async with runtime.db.read() as r:
            assert await turns.load_open_turns(r, run_id) == {}


async def test_open_turns_read_only_the_queue_not_the_history(runtime: Runtime, run_id: str) -> None:
    """Turns are scheduled oldest first, one at a time, so requests before the last scheduled one
    are finished: the queue is read from there on. A history row no reader could parse, before
    it, shows that the Chair's every tick no longer walks the run's whole turn history."""
    from roundtable.services.coordination import turns

    async with runtime.db.write() as tx:
        old = await tx.append_event(run_id, "agent.turn_completed", {}, actor_id="x")
    first = await _request(runtime, run_id, "implementer-1")
    report = await chair.tick(runtime, run_id)
    assert report.scheduled is not None and report.scheduled["request_event_id"] == first["request_event_id"]
    async with runtime.db.write() as tx:  # now before the last scheduled request: history
        await tx.execute("UPDATE events SET payload_json = '{not json' WHERE id = ?", (old.id,))
    args = {"run_id": run_id, "agent_id": "implementer-1", "request_event_id": first["request_event_id"]}
    await runtime.call("agent.turn_start", args)
    await runtime.call("agent.turn_complete", args)
    second = await _request(runtime, run_id, "implementer-2")
    report = await chair.tick(runtime, run_id)
    assert report.errors == [] and report.scheduled is not None
    assert report.scheduled["request_event_id"] == second["request_event_id"]
    async with runtime.db.read() as r:
        assert list(await turns.load_open_turns(r, run_id)) == [second["request_event_id"]]


async def test_the_chair_opens_a_turn_transaction_only_for_turn_work(runtime: Runtime, run_id: str) -> None:
    async def step(now: str = "") -> int:
        """One turn step of a tick; how many write transactions it committed."""
        before = runtime.db.commits
        at = now or clock.now()
        await turns(runtime, run_id, at, TickReport(run_id=run_id, at=at))
        return runtime.db.commits - before

    assert await step() == 0  # no turn requested: nothing to expire or schedule
    first = await _request(runtime, run_id, "implementer-1")
    assert await step() == 1  # scheduled
    await _request(runtime, run_id, "implementer-2")
    assert await step() == 0  # one in flight, not overdue: nothing to do
    assert await _count_events(runtime, "agent.turn_scheduled") == 1
    later = clock.format_ns(clock.now_ns() + int(3600 * 1e9))
    assert await step(later) == 2  # the first expired (never started), the second scheduled
    async with runtime.db.read() as r:
        expired = await r.fetchall("SELECT payload_json FROM events WHERE type = 'agent.turn_expired'")
    assert [json.loads(row[0])["request_event_id"] for row in expired] == [first["request_event_id"]]
    assert await _count_events(runtime, "agent.turn_scheduled") == 2
