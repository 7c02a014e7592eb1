"""`table.watch` for an agent that names no run and no types: what concerns it, in one call.

An agent asks "what happened to my work" at start-up and between steps; the project's whole log
(13 KB to learn of one vote, measured) is what it got before. These tests hold what it is shown
— others' news about its tasks and proposals, its turns, reviews asked of it — and that the
operator, `everything` and a named run or type still see the whole log.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from roundtable.runtime import Runtime
from roundtable.tools.context import Caller
from tests.support.evidence import AUTHOR, add_lines_patch, make_proposal

pytestmark = pytest.mark.anyio

ME = Caller("agent", "http", agent_id=AUTHOR)
OTHER = Caller("agent", "http", agent_id="implementer-2")
REVIEWER = Caller("agent", "http", agent_id="reviewer-1")


def _types(page: dict[str, Any]) -> list[str]:
    return [e["type"] for e in page.get("events", [])]


async def _scene(runtime: Runtime, run_id: str) -> str:
    """implementer-1's proposal on T-1 (asked of reviewer-1), a vote on it, a turn scheduled for it,
    and implementer-2's unrelated work on T-2."""
    (runtime.root / "app.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    pid = await make_proposal(runtime, add_lines_patch("app.py", ["x = 1"]))
    await runtime.call("proposal.request_review", {"proposal_id": pid}, ME)
    await runtime.call(
        "task.create", {"task_id": "T-2", "title": "Other", "body_md": "x", "assigned_agent_id": "implementer-2"}
    )
    other = {"resource_type": "file", "claim_type": "write", "task_id": "T-2", "path": "other.py"}
    await runtime.call("resource.claim", other, OTHER)
    vote = {"proposal_id": pid, "vote": "revise", "reason_md": "Name it.", "confidence": 0.9}
    await runtime.call("vote.cast", vote, REVIEWER)
    async with runtime.db.write() as tx:
        await tx.append_event(
            run_id, "agent.turn_scheduled", {"agent_id": AUTHOR, "request_event_id": 1}, actor_id="chair-1"
        )
        await tx.append_event(
            run_id, "agent.turn_scheduled", {"agent_id": "implementer-2", "request_event_id": 2}, actor_id="chair-1"
        )
    return pid


async def test_an_agent_is_shown_what_concerns_it(runtime: Runtime, run_id: str) -> None:
    pid = await _scene(runtime, run_id)
    await runtime.call("task.update_status", {"task_id": "T-1", "assigned_agent_id": AUTHOR})
    page = await runtime.call("table.watch", {}, ME)
    events = page["events"]
    # Others' news about its task, its proposal and its turn; none of its own actions, nothing of T-2.
    assert "vote.cast" in _types(page) and "agent.turn_scheduled" in _types(page)
    assert all(e["actor_id"] != AUTHOR for e in events)
    assert all(e.get("task_id") != "T-2" for e in events)
    # Each event in brief: its ids and words, not the caller's own id (its turn is on its page).
    turn = next(e for e in events if e["type"] == "agent.turn_scheduled")
    assert turn == {"id": turn["id"], "type": "agent.turn_scheduled", "actor_id": "chair-1", "request_event_id": 1}
    assert [p["id"] for p in page["pending_proposals"]] == [pid]
    # Its own claim on app.py, not implementer-2's; the count goes, its list shows it in full.
    assert "active_claims" not in page and "open_tasks" not in page
    # The start-up questions in the same call: its open tasks, its claims, what is known.
    assert [t["id"] for t in page["tasks"]] == ["T-1"]
    assert [c["resource_id"] for c in page["claims"]] == ["file:app.py"]
    await runtime.call(
        "memory.record", {"title": "Use tabs", "body_md": "x", "kind": "convention", "scope": "project"}, OTHER
    )
    assert [m["title"] for m in (await runtime.call("table.watch", {}, ME))["memory"]] == ["Use tabs"]
    everything = await runtime.call("table.watch", {"everything": True}, ME)
    assert len(everything["events"]) > len(events)
    assert any(e["task_id"] == "T-2" for e in everything["events"]) and everything["active_claims"] == 2
    assert "tasks" not in everything and "claims" not in everything
    # An agent's page keeps what it acts on: no empty lists, no records in full.
    assert "transactions" not in page and "required_approvals" not in page and "run_id" not in page
    assert set(page["pending_proposals"][0]) == {"id", "title", "agent_id", "task_id", "status", "revision_number"}


async def test_a_reviewer_is_shown_the_review_asked_of_it(runtime: Runtime, run_id: str) -> None:
    pid = await _scene(runtime, run_id)
    page = await runtime.call("table.watch", {}, REVIEWER)
    assert [p["id"] for p in page["pending_proposals"]] == [pid]
    # The row is the news: the event that put it up for review is not read beside it.
    assert "proposal.review_requested" not in _types(page)
    assert "vote.cast" not in _types(page)  # its own vote
    bystander = await runtime.call("table.watch", {}, Caller("agent", "http", agent_id="implementer-2"))
    assert pid not in str(bystander.get("events")) and "pending_proposals" not in bystander


async def test_the_operator_a_run_or_types_see_the_whole_log(runtime: Runtime, run_id: str) -> None:
    await _scene(runtime, run_id)
    whole = await runtime.call("table.watch", {"limit": 200})
    assert {"claim.created", "vote.cast", "agent.turn_scheduled"} <= set(_types(whole))
    assert any(e["task_id"] == "T-2" for e in whole["events"])
    by_run = await runtime.call("table.watch", {"run_id": run_id, "limit": 200}, ME)
    assert [e["id"] for e in by_run["events"]] == [e["id"] for e in whole["events"] if e["run_id"] == run_id]
    typed = await runtime.call("table.watch", {"types": ["claim.created"], "limit": 200}, ME)
    assert any(e["task_id"] == "T-2" for e in typed["events"])


async def test_a_long_poll_wakes_only_for_what_concerns_the_agent(runtime: Runtime, run_id: str) -> None:
    await _scene(runtime, run_id)
    last = (await runtime.call("table.watch", {"everything": True}, ME))["next_after_event_id"]
    poll = asyncio.create_task(runtime.call("table.watch", {"after_event_id": last, "wait_ms": 10_000}, ME))
    async with runtime.db.write() as tx:  # not its business: the poll keeps waiting
        await tx.append_event(run_id, "agent.turn_scheduled", {"agent_id": "implementer-2"}, actor_id="chair-1")
    async with runtime.db.write() as tx:
        mine = await tx.append_event(run_id, "agent.turn_scheduled", {"agent_id": AUTHOR}, actor_id="chair-1")
    page = await asyncio.wait_for(poll, 10)
    assert [e["id"] for e in page["events"]] == [mine.id]


async def test_a_start_up_read_looks_for_news_among_the_newest_events_only(
    runtime: Runtime, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start-up read's news comes from the newest `CONCERN_LOOKBACK` events (its cost does not
    grow with the log); its lists stay complete, and a cursor page reads every newer event."""
    from roundtable.services.coordination import state

    pid = await _scene(runtime, run_id)
    async with runtime.db.write() as tx:
        for n in range(5):  # newer events that concern nobody
            await tx.append_event(run_id, "agent.note", {"n": n}, actor_id="implementer-2")
    monkeypatch.setattr(state, "CONCERN_LOOKBACK", 5)
    page = await runtime.call("table.watch", {}, REVIEWER)
    assert "events" not in page or not page["events"]  # its review request is older than 5 events
    assert [p["id"] for p in page["pending_proposals"]] == [pid]  # the list still shows it
    monkeypatch.setattr(state, "CONCERN_LOOKBACK", 100)
    page = await runtime.call("table.watch", {}, REVIEWER)
    assert [p["id"] for p in page["pending_proposals"]] == [pid]  # (its request: the row says it)
    cursor = await runtime.call("table.watch", {"after_event_id": 0}, REVIEWER)
    async with runtime.db.read() as r:
        asked = await r.scalar("SELECT id FROM events WHERE type = 'proposal.review_requested'")
    # A cursor page reads every newer event, beyond the look-back: past the review request (its
    # row, listed beside, says it).
    assert cursor["next_after_event_id"] >= asked and [p["id"] for p in cursor["pending_proposals"]] == [pid]
