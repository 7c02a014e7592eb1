"""`table.get_state` and `table.watch` through Runtime.call, including the `wait_ms` long poll."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.coordination.state import LISTS, STATE_KEYS, page_sql, watch_list_sql

pytestmark = pytest.mark.anyio


async def _events(runtime: Runtime, run_id: str, n: int, type_: str = "test.event") -> list[int]:
    ids = []
    async with runtime.db.write() as tx:
        for i in range(n):
            ids.append((await tx.append_event(run_id, type_, {"i": i})).id)
    return ids


async def test_get_state_empty_and_filled(runtime: Runtime, run_id: str) -> None:
    state = await runtime.call("table.get_state")
    assert list(state)[: len(STATE_KEYS)] == list(STATE_KEYS)
    assert state["has_more"] is False and state["next_cursor"] == "" and state["counts"]["tasks"] == 0
    assert state["tasks"] == [] and state["claims"] == [] and state["memory"] == []
    assert [r["id"] for r in state["runs"]] == [run_id]
    assert {"chair-1", "implementer-1", "implementer-2", "reviewer-1"} <= {a["id"] for a in state["agents"]}
    await runtime.call("task.create", {"title": "b", "body_md": "x", "priority": 200, "readable_paths": ["src"]})
    await runtime.call("task.create", {"title": "a", "body_md": "x", "priority": 1})
    state = await runtime.call("table.get_state")
    assert [t["title"] for t in state["tasks"]] == ["a", "b"]
    assert state["tasks"][1]["readable_paths"] == ["src"]
    with pytest.raises(ToolError, match="unknown argument x"):
        await runtime.call("table.get_state", {"x": 1})


async def test_get_state_shows_claim_expiry_at_read_time(runtime: Runtime, run_id: str) -> None:
    async with runtime.db.write() as tx:
        await tx.insert(
            "claims",
            {
                "id": "C-old",
                "resource_id": "file:a.py",
                "agent_id": "implementer-1",
                "task_id": "T-1",
                "claim_type": "write",
                "status": "active",
                "expires_at": "2000-01-01T00:00:00.000000000Z",
            },
        )
    state = await runtime.call("table.get_state")
    assert state["claims"][0]["status"] == "expired"
    page = await runtime.call("table.watch", {})
    assert page["active_claims"] == 0


async def test_watch_snapshot_and_cursor_modes(runtime: Runtime, run_id: str) -> None:
    ids = await _events(runtime, run_id, 15)
    await _events(runtime, "RUN-other", 3)
    page = await runtime.call("table.watch", {"run_id": run_id})
    assert [e["id"] for e in page["events"]] == ids[-10:]
    assert page["has_more_events"] is False and page["next_after_event_id"] == ids[-1]
    assert page["run_id"] == run_id and page["active_agents"] >= 8
    for key in ("transactions", "blocked_tasks", "pending_proposals", "required_approvals"):
        assert page[key] == []
    page = await runtime.call("table.watch", {"run_id": run_id, "after_event_id": 0, "limit": 4})
    assert [e["id"] for e in page["events"]] == ids[:4] and page["has_more_events"] is True
    seen = [e["id"] for e in page["events"]]
    while page["has_more_events"]:
        page = await runtime.call(
            "table.watch", {"run_id": run_id, "after_event_id": page["next_after_event_id"], "limit": 4}
        )
        seen += [e["id"] for e in page["events"]]
    assert seen == ids
    empty = await runtime.call("table.watch", {"run_id": run_id, "after_event_id": ids[-1]})
    assert empty["events"] == [] and empty["next_after_event_id"] == ids[-1] and empty["has_more_events"] is False
    everything = await runtime.call("table.watch", {"after_event_id": 0, "limit": 200})
    assert len(everything["events"]) == 18  # all runs
    default = await runtime.call("table.watch", {"after_event_id": 0, "limit": -5})
    assert len(default["events"]) == 10


async def test_watch_argument_errors(runtime: Runtime) -> None:
    for args, message in [
        ({"after_event_id": -1}, "argument after_event_id must be at least 0"),
        ({"after_event_id": None}, "argument after_event_id must be an integer"),
        ({"after_event_id": "3"}, "argument after_event_id must be an integer"),
        ({"wait_ms": 30001}, "argument wait_ms must be at most 30000"),
        ({"limit": 2.5}, "argument limit must be an integer"),
        ({"limit": 201}, "argument limit must be at most 200"),
    ]:
        with pytest.raises(ToolError) as exc:
            await runtime.call("table.watch", args)
        assert message in str(exc.value)


async def test_watch_wait_returns_promptly_when_an_event_arrives(runtime: Runtime, run_id: str) -> None:
    (last,) = await _events(runtime, run_id, 1)

    async def later() -> None:
        await asyncio.sleep(0.15)
        await _events(runtime, run_id, 1, "late.event")

    started = time.monotonic()
    writer = asyncio.create_task(later())
    page = await runtime.call("table.watch", {"run_id": run_id, "after_event_id": last, "wait_ms": 10_000})
    elapsed = time.monotonic() - started
    await writer
    assert [e["type"] for e in page["events"]] == ["late.event"]
    assert 0.1 <= elapsed < 5.0  # woken by the event, not by the 10 s wait's end


async def test_watch_wait_times_out_with_an_empty_page(runtime: Runtime, run_id: str) -> None:
    (last,) = await _events(runtime, run_id, 1)
    await _events(runtime, "RUN-other", 1)  # another run's event does not end the wait
    started = time.monotonic()
    page = await runtime.call("table.watch", {"run_id": run_id, "after_event_id": last, "wait_ms": 400})
    elapsed = time.monotonic() - started
    assert page["events"] == [] and page["next_after_event_id"] == last
    assert 0.38 <= elapsed < 5.0  # it waited, and ended with its 0.4 s wait
    # snapshot mode never waits
    started = time.monotonic()
    await runtime.call("table.watch", {"run_id": run_id, "wait_ms": 5000})
    assert time.monotonic() - started < 2.5  # well under the 5 s wait it would have been


async def test_watch_types_filter_the_page_and_what_ends_the_wait(runtime: Runtime, run_id: str) -> None:
    (last,) = await _events(runtime, run_id, 1)
    args = {"run_id": run_id, "after_event_id": last, "wait_ms": 10_000, "types": ["wanted.event"]}
    poll = asyncio.create_task(runtime.call("table.watch", args))
    await _events(runtime, run_id, 3, "other.event")  # commits the poll does not wait for
    for _ in range(20):  # let every woken task run: none is, so the poll still waits
        await asyncio.sleep(0)
    assert not poll.done()
    (wanted,) = await _events(runtime, run_id, 1, "wanted.event")
    page = await asyncio.wait_for(poll, 5)
    assert [e["id"] for e in page["events"]] == [wanted] and page["next_after_event_id"] == wanted
    # without waiting, `types` filters the events of both modes too
    snapshot = await runtime.call("table.watch", {"run_id": run_id, "types": ["other.event"]})
    assert [e["type"] for e in snapshot["events"]] == ["other.event"] * 3


async def test_a_stopping_owner_ends_the_long_polls_with_the_page_as_it_stands(runtime: Runtime, run_id: str) -> None:
    (last,) = await _events(runtime, run_id, 1)
    args = {"run_id": run_id, "after_event_id": last, "wait_ms": 30_000}
    poll = asyncio.create_task(runtime.call("table.watch", args))
    other = runtime.bus.subscribe()  # e.g. the console's: not a long poll, not woken
    try:
        for _ in range(50):  # until the poll waits on the bus
            await asyncio.sleep(0)
        assert not poll.done()
        runtime.bus.end_long_polls()
        page = await asyncio.wait_for(poll, 5)  # not after its 30 s
        assert page["events"] == [] and page["next_after_event_id"] == last
        assert other.drain() == []
        # a long poll asked for while the owner stops answers at once
        page = await asyncio.wait_for(runtime.call("table.watch", args), 5)
        assert page["next_after_event_id"] == last
    finally:
        other.close()


async def test_watch_lists_are_bounded_by_limit(runtime: Runtime, run_id: str) -> None:
    async with runtime.db.write() as tx:
        for i in range(5):
            await tx.insert(
                "tasks", {"id": f"T-b{i}", "title": f"b{i}", "body_md": "x", "status": "blocked", "priority": 100}
            )
    page = await runtime.call("table.watch", {"run_id": run_id, "limit": 3})
    assert [t["id"] for t in page["blocked_tasks"]] == ["T-b0", "T-b1", "T-b2"]
    page = await runtime.call("table.watch", {"run_id": run_id, "limit": 6})
    assert len(page["blocked_tasks"]) == 5


async def test_watch_pending_proposals_are_the_oldest_of_both_statuses_read_by_index(
    runtime: Runtime, run_id: str
) -> None:
    """Pending and in-review proposals interleave oldest first, cut at `limit`; each status is an
    index range read up to the limit, never every open proposal sorted on each call."""
    statuses = ["in_review", "pending", "accepted", "pending", "in_review", "in_review", "pending"]
    async with runtime.db.write() as tx:
        for i, status in enumerate(statuses):
            await tx.insert(
                "proposals",
                {
                    "id": f"P-{i}",
                    "task_id": "T-1",
                    "agent_id": "implementer-1",
                    "title": f"p{i}",
                    "summary_md": "s",
                    "patch_path": "x.diff",
                    "status": status,
                    "created_at": f"2026-01-01T00:00:0{i}.000000000Z",
                },
            )
    page = await runtime.call("table.watch", {"run_id": run_id, "limit": 4})
    assert [p["id"] for p in page["pending_proposals"]] == ["P-0", "P-1", "P-3", "P-4"]
    page = await runtime.call("table.watch", {"run_id": run_id, "limit": 10})
    assert [p["id"] for p in page["pending_proposals"]] == ["P-0", "P-1", "P-3", "P-4", "P-5", "P-6"]
    sql, params = watch_list_sql(None, "proposals", ("status = 'pending'", "status = 'in_review'"), "created_at, id", 4)
    async with runtime.db.read() as r:
        plan = [str(row[3]) for row in await r.fetchall("EXPLAIN QUERY PLAN " + sql, params)]
    assert plan.count("SEARCH proposals USING INDEX idx_proposals_status (status=?)") == 2, plan
    assert not any(step.startswith("SCAN proposals") for step in plan), plan


async def test_watch_wait_sees_writes_from_another_process(project: Path, runtime: Runtime, run_id: str) -> None:
    (last,) = await _events(runtime, run_id, 1)
    other = await Runtime.open(project)  # its own bus: the store's commit watch announces this write

    async def later() -> None:
        await asyncio.sleep(0.2)
        await _events(other, run_id, 1, "remote.event")

    try:
        started = time.monotonic()
        writer = asyncio.create_task(later())
        page = await runtime.call("table.watch", {"run_id": run_id, "after_event_id": last, "wait_ms": 10_000})
        elapsed = time.monotonic() - started
        await writer
    finally:
        await other.close()
    assert [e["type"] for e in page["events"]] == ["remote.event"]
    assert elapsed < 5.0  # woken by the other process's commit, not by the 10 s wait's end


async def test_state_rows_equal_record_dicts(runtime: Runtime, run_id: str) -> None:
    """The snapshot's fast row conversion gives exactly the records' `to_dict()` shapes."""
    from roundtable.services.coordination.tasks import task_dict
    from roundtable.store.records import Agent, MemoryEntry, Run, Task

    await runtime.call("task.create", {"title": "t", "body_md": "b", "readable_paths": ["src"]})
    await runtime.call("task.create", {"title": "u", "body_md": "b"})
    await runtime.call("memory.record", {"scope": "p", "kind": "k", "title": "t", "body_md": "b"})
    state = await runtime.call("table.get_state")
    async with runtime.db.read() as r:
        tasks = [task_dict(t) for t in await r.all(Task, "SELECT * FROM tasks ORDER BY priority, created_at, id")]
        agents = [a.to_dict() for a in await r.all(Agent, "SELECT * FROM agents ORDER BY created_at, id")]
        runs = [x.to_dict() for x in await r.all(Run, "SELECT * FROM runs ORDER BY started_at, id")]
        memory = [m.to_dict() for m in await r.all(MemoryEntry, "SELECT * FROM memory_entries")]
    assert state["tasks"] == tasks and state["agents"] == agents and state["runs"] == runs
    assert state["memory"] == memory
    assert isinstance(state["agents"][0]["is_enabled"], bool) and state["memory"][0]["confidence"] == 0.5


async def test_the_first_page_of_every_list_is_read_in_index_order_not_sorted(runtime: Runtime) -> None:
    """A default `table.get_state` must not sort a table that grows with history (every claim
    ever made) to show its first page: each list's unfiltered page walks an index in its order."""
    async with runtime.db.read() as r:
        for spec in LISTS:
            sql = page_sql(spec, [])
            plan = " | ".join(str(row[3]) for row in await r.fetchall("EXPLAIN QUERY PLAN " + sql, (10,)))
            assert "TEMP B-TREE" not in plan and spec.table in plan, (spec.key, plan)
