"""A task budget governs the autopilot: with a budget of N tokens per task, the session that
crosses it is stopped at its next tool call, the task is blocked with `budget` as the reason, the
autopilot launches nothing more for it, and a webhook listener on loopback hears of it once.
Real owner (Chair, supervisor, dispatcher, notifier), real agent processes, real SQLite, real HTTP."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from roundtable.owner import Owner
from roundtable.services.coordination.runs import create_run
from roundtable.tools.context import OPERATOR
from tests.autopilot.helpers import demo_project, edit_config, events, implementers_run, task_status, wait_for_events
from tests.notify.listener import Listener

pytestmark = pytest.mark.anyio

# A Claude Code stream captured from the real harness: 7,200 tokens, $0.027495.
STREAM = Path(__file__).parents[1] / "sessions" / "streams" / "claude-code-2.1.197.jsonl"
BUDGET = 5000


async def test_a_task_budget_stops_the_session_blocks_the_task_and_notifies_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="roundtable.server.sessions")
    root = await demo_project(tmp_path / "p", max_attempts=3, retry_backoff_seconds=0.2)
    # The implementer's harness reports the spend of its first model turn before its first call.
    implementers_run(root, "costly", command=f"{sys.executable} -m roundtable.demo.scripted --usage-stream {STREAM}")
    async with Listener() as listener:

        def change(data: dict) -> None:  # type: ignore[type-arg]
            data["budgets"]["task"]["tokens"] = BUDGET
            data["sessions"]["read_paths"] = [str(STREAM.parent)]  # the captured stream, inside the sandbox
            data["notify"]["webhooks"] = [{"url": listener.url + "/alerts", "events": ["budget_exceeded"]}]

        edit_config(root, change)
        async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2, autopilot=True) as owner:
            rt = owner.runtime
            await create_run(rt, "")
            created = await rt.call(
                "task.create",
                {"title": "Add mul()", "body_md": "Add mul() to calc/ops.py.", "readable_paths": ["calc"]},
                OPERATOR,
            )
            task_id = str(created["task"]["id"])
            assert owner.dispatcher is not None
            owner.dispatcher.wake()
            blocked = await wait_for_events(rt, "task.blocked", 1)
            exceeded = await wait_for_events(rt, "budget.exceeded", 1)
            exited = await wait_for_events(rt, "session.exited", 1)
            await listener.wait_for(1)
            for _ in range(30):  # let the dispatcher pass a few times: it must launch nothing more
                await asyncio.sleep(0.1)
                owner.dispatcher.wake()
            dispatched = await events(rt, "autopilot.dispatched")
            status = await task_status(rt, task_id)
            async with rt.db.read() as r:
                revoked = await r.scalar(
                    "SELECT revoked_reason FROM session_capabilities WHERE session_id = ?",
                    (dispatched[0]["payload"]["session_id"],),
                )
                spent = await r.scalar("SELECT input_tokens + output_tokens FROM session_usage")
            log = root / ".roundtable" / "logs" / "sessions" / f"{dispatched[0]['payload']['session_id']}.log"
            text = log.read_text(encoding="utf-8")
    # Launched once; the budget stopped it — no retry even though attempts were left.
    assert [e["payload"]["task_id"] for e in dispatched] == [task_id]
    assert spent == 7200
    reason = blocked[0]["payload"]["reason"]
    assert status == "blocked" and blocked[0]["payload"]["task_id"] == task_id
    assert reason == f"budget: task {task_id} has used 7,200 tokens ($0.03) of its task budget of 5,000 tokens"
    assert exceeded[0]["payload"]["scope"] == "task" and exceeded[0]["payload"]["limit_tokens"] == BUDGET
    assert revoked == reason
    assert exited[0]["payload"]["session_id"] == dispatched[0]["payload"]["session_id"]
    # Refused at its next tool call, with why, and stopped there.
    assert any(f"stopped: {reason}" in r.getMessage() for r in caplog.records)
    assert '"step": "done"' not in text
    # The operator heard of it once, on the webhook.
    assert [(r.path, r.body["kind"]) for r in listener.received] == [("/alerts", "budget_exceeded")]
    assert listener.received[0].body["message"] == reason


async def test_a_run_over_its_budget_launches_nothing_and_says_so_once(tmp_path: Path) -> None:
    from roundtable.tools.context import SUPERVISOR
    from tests.sessions.helpers import bind

    root = await demo_project(tmp_path / "p")
    edit_config(root, lambda data: data["budgets"]["run"].update({"usd": 1.0}))
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2, autopilot=True) as owner:
        rt = owner.runtime
        run = await create_run(rt, "")
        # An earlier session of this run (an operator's launch, say) spent the run's budget.
        earlier = await bind(rt, "reviewer-1", run.id, "")
        await rt.call("session.record_usage", {"session_id": earlier.session_id, "cost_usd": 1.25}, SUPERVISOR)
        created = await rt.call(
            "task.create",
            {"title": "Add mul()", "body_md": "Add mul() to calc/ops.py.", "readable_paths": ["calc"]},
            OPERATOR,
        )
        assert owner.dispatcher is not None
        skipped = await wait_for_events(rt, "autopilot.skipped", 1)
        for _ in range(20):  # passes go by: still nothing launched, nothing said twice
            await asyncio.sleep(0.1)
            owner.dispatcher.wake()
        assert await events(rt, "autopilot.dispatched") == []
        assert len(await events(rt, "autopilot.skipped")) == 1
        exceeded = await events(rt, "budget.exceeded")
        assert await owner.dispatcher.idle()  # a headless run does not wait on held work
        assert await task_status(rt, str(created["task"]["id"])) != "blocked"  # it waits; the task is not to blame
    assert skipped[0]["payload"]["scope"] == "run"
    assert (
        skipped[0]["payload"]["reason"] == f"budget: run {run.id} has used 0 tokens ($1.25) of its run budget of $1.00"
    )
    assert [(e["payload"]["scope"], e["payload"]["key"]) for e in exceeded] == [("run", run.id)]
