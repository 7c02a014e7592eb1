"""Notifications outside the console: every kind reaches a real webhook listener on loopback, in
each body format; a webhook that hangs delays no tool call (measured); a failing one is logged
once per interval and shown by `doctor`. Real runtime, real SQLite, real HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from roundtable.config import NOTIFY_EVENTS
from roundtable.notify import Notifier
from roundtable.runtime import Runtime
from roundtable.tools.context import DISPATCHER, OPERATOR, SUPERVISOR
from tests.autopilot.helpers import edit_config
from tests.notify.listener import Listener
from tests.sessions.helpers import bind, make_task

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def notifying(project: Path, notify: dict[str, Any], **config: Any) -> AsyncIterator[tuple[Runtime, Notifier]]:
    """A runtime on `project` with `notify:` (and other sections) written to its config file,
    and a started notifier (no desktop notifications)."""

    def change(data: dict[str, Any]) -> None:
        data["notify"].update(notify)
        data.update(config)

    edit_config(project, change)
    rt = await Runtime.open(project)
    notifier = Notifier(rt, desktop=False, poll=0.2)
    await notifier.start()
    try:
        yield rt, notifier
    finally:
        await notifier.close()
        await rt.close()


async def _marker(rt: Runtime, task_id: str) -> None:
    """An `autopilot.stopped` with the reason `marker` in `task_id`'s run: every webhook wants it."""
    async with rt.db.read() as r:
        run_id = str(await r.scalar("SELECT run_id FROM tasks WHERE id = ?", (task_id,)))
    await rt.call(
        "autopilot.record", {"type": "autopilot.stopped", "payload": {"reason": "marker"}, "run_id": run_id}, DISPATCHER
    )


async def _every_kind(rt: Runtime) -> str:
    """Make one event of each kind with the operations that record them; returns the task id."""
    run_id, task_id = await make_task(rt)
    await rt.call("human.request_approval", {"subject": "Ship it?", "reason_md": "r", "task_id": task_id}, OPERATOR)
    await rt.call(
        "autopilot.record",
        {"type": "autopilot.stopped", "payload": {"reason": "5 failed"}, "run_id": run_id},
        DISPATCHER,
    )
    session = await bind(rt, "implementer-1", run_id, task_id)
    await rt.call(
        "session.record_usage",
        {"session_id": session.session_id, "input_tokens": 900, "output_tokens": 200},
        SUPERVISOR,
    )  # over the task budget of 1000: budget.exceeded, then task.blocked
    for state in ("waiting_answer", "working"):  # what its stream said; working again is no news
        await rt.call(
            "session.record_stream",
            {"session_id": session.session_id, "attention": state, "detail": "Shall I go on?"},
            SUPERVISOR,
        )
    async with rt.db.write() as tx:  # what a failed apply and a failed rollback record
        await tx.append_event(
            run_id,
            "patch.apply_failed",
            {"proposal_id": "P-1", "transaction_id": "TX-1", "error": "git apply: patch does not apply"},
        )
        await tx.append_event(
            run_id,
            "patch.rollback_failed",
            {"proposal_id": "P-1", "transaction_id": "TX-2", "needs_attention": ["calc/ops.py"]},
        )
        await tx.append_event(
            run_id,
            "transaction.recovered",
            {"transaction_id": "TX-3", "outcome": "needs_attention", "detail": "files changed since the apply"},
        )
        await tx.append_event(run_id, "transaction.recovered", {"transaction_id": "TX-4", "outcome": "rolled_back"})
    return task_id


async def test_every_kind_reaches_a_webhook_listener(project: Path) -> None:
    async with Listener() as listener:
        hooks = [{"url": listener.url + "/hook", "format": "plain"}]
        async with notifying(project, {"webhooks": hooks}, budgets={"task": {"tokens": 1000, "usd": 0}}) as (rt, _n):
            task_id = await _every_kind(rt)
            # A marker recorded after everything else: the webhook's POSTs go out in event order,
            # so once it arrives nothing earlier is still to come (the recovered-and-settled
            # transaction is no news).
            await _marker(rt, task_id)
            *got, marker = await listener.wait_for(9)
    assert marker.body["message"].endswith("the autopilot stopped: marker") and len(listener.received) == 9
    kinds = [r.body["kind"] for r in got]
    assert sorted(kinds) == sorted([*NOTIFY_EVENTS, "transaction_attention"]) and len(got) == 8
    assert {r.path for r in got} == {"/hook"}
    by_kind = {r.body["kind"]: r.body for r in got}
    assert by_kind["session_needs_you"]["message"].endswith("of implementer-1 waits for your answer: Shall I go on?")
    assert by_kind["budget_exceeded"]["message"].startswith(f"budget: task {task_id} has used 1,100 tokens")
    assert by_kind["task_blocked"]["message"].startswith(f"task {task_id} is blocked: budget:")
    assert by_kind["apply_failed"]["message"] == "applying P-1 failed (TX-1): git apply: patch does not apply"
    assert by_kind["approval_requested"]["message"] == f"{task_id} waits for your approval: Ship it?"
    assert {by_kind[k]["title"] for k in by_kind} >= {"Approval requested", "Budget reached"}
    assert all(b["event_id"] > 0 and b["run_id"] for b in by_kind.values())


async def test_each_body_format_and_event_filter(project: Path) -> None:
    async with Listener() as plain, Listener() as ntfy, Listener() as slack:
        hooks = [
            {"url": plain.url + "/p", "format": "plain", "events": ["approval_requested"]},
            {"url": ntfy.url + "/roundtable-alerts", "format": "ntfy"},
            {"url": slack.url + "/services/T0/B0/SECRET", "format": "slack"},
        ]
        async with notifying(project, {"webhooks": hooks, "events": ["task_blocked", "approval_requested"]}) as (
            rt,
            notifier,
        ):
            run_id, task_id = await make_task(rt)
            await rt.call(
                "autopilot.block_task",
                {"task_id": task_id, "reason": "no harness <!channel>", "run_id": run_id},
                DISPATCHER,
            )
            await rt.call(
                "autopilot.record",
                {"type": "autopilot.stopped", "payload": {"reason": "x"}, "run_id": run_id},
                DISPATCHER,
            )  # not in notify.events
            (to_ntfy,) = await ntfy.wait_for(1)
            (to_slack,) = await slack.wait_for(1)
            # A marker that `plain` does want, recorded last: its POSTs go out in event order.
            await rt.call(
                "human.request_approval", {"subject": "marker", "reason_md": "r", "task_id": task_id}, OPERATOR
            )
            (marker,) = await plain.wait_for(1)
            assert await notifier.webhooks.drained(10)  # every answer read: the counts are final
    assert marker.body["kind"] == "approval_requested"  # it asked for approvals only: nothing before the marker
    # What doctor reads: the webhooks that delivered, and when.
    status = json.loads((project / ".roundtable" / "logs" / "notify-status.json").read_text())
    assert [(w["delivered"], bool(w["last_success_at"]), w["failing_since"]) for w in status["webhooks"]] == [
        (1, True, ""),  # the marker only
        (2, True, ""),
        (2, True, ""),
    ]
    assert to_ntfy.path == "/"
    assert to_ntfy.body["topic"] == "roundtable-alerts" and to_ntfy.body["tags"] == ["task_blocked"]
    assert to_ntfy.body["message"] == f"task {task_id} is blocked: no harness <!channel>"
    assert to_slack.path == "/services/T0/B0/SECRET"
    # An agent's text cannot mention the channel or make a link in Slack.
    assert to_slack.body == {
        "text": f"*Task blocked* — Roundtable: task {task_id} is blocked: no harness &lt;!channel&gt;"
    }


async def test_a_hanging_webhook_delays_no_tool_call(project: Path) -> None:
    async with Listener(hang=True) as stuck, Listener() as fine:
        hooks = [{"url": stuck.url, "timeout": "30s"}, {"url": fine.url}]
        async with notifying(project, {"webhooks": hooks}) as (rt, _n):
            run_id, task_id = await make_task(rt)
            await rt.call("autopilot.block_task", {"task_id": task_id, "reason": "first", "run_id": run_id}, DISPATCHER)
            await stuck.wait_for(1)  # its POST is in flight, unanswered
            took = []
            for i in range(5):
                started = time.perf_counter()
                await rt.call("task.create", {"title": f"t{i}", "body_md": "b", "readable_paths": ["src"]}, OPERATOR)
                took.append(time.perf_counter() - started)
            await rt.call(
                "autopilot.record",
                {"type": "autopilot.stopped", "payload": {"reason": "x"}, "run_id": run_id},
                DISPATCHER,
            )
            await fine.wait_for(2, timeout=5)  # the other webhook is not held up either
            assert len(stuck.received) == 1
    assert max(took) < 0.5, took


async def test_a_failing_webhook_is_logged_once_per_interval_and_shown_by_doctor(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from roundtable.cli.connect_cmd import diagnose

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    hooks = [{"url": f"http://127.0.0.1:{port}/hook?key=secret", "format": "slack"}]
    caplog.set_level(logging.WARNING, logger="roundtable.notify")
    async with notifying(project, {"webhooks": hooks, "retries": 1, "retry_backoff": "10ms"}) as (rt, notifier):
        run_id, _task_id = await make_task(rt)
        for i in range(3):
            await rt.call(
                "autopilot.record",
                {"type": "autopilot.stopped", "payload": {"reason": str(i)}, "run_id": run_id},
                DISPATCHER,
            )
        for _ in range(200):  # up to 10 s for the three to be tried and given up
            if notifier.webhooks.health[0].failures >= 3:
                break
            await asyncio.sleep(0.05)
        assert await notifier.webhooks.drained(10)
        assert notifier.webhooks.health[0].failures == 3
    status = json.loads((project / ".roundtable" / "logs" / "notify-status.json").read_text())
    warnings = [r.getMessage() for r in caplog.records if "webhook" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(f"webhook http://127.0.0.1:{port}/… failed: ConnectError")
    assert "secret" not in json.dumps(status) and status["webhooks"][0]["failing_since"]
    findings = await asyncio.to_thread(diagnose, project)
    (problem,) = [f for f in findings if "webhook" in f.what]
    assert not problem.ok and problem.what.startswith(f"webhook http://127.0.0.1:{port}/… (slack) failing since ")
    assert "ConnectError" in problem.what and "notify.webhooks[0].url" in problem.fix


async def test_a_blocked_task_is_one_notification_however_often_it_is_blocked(project: Path) -> None:
    """Blocking a task that is already blocked records nothing more: every `task.blocked` was a
    webhook, and one blocked task sent the same one three times."""
    async with Listener() as listener:
        hooks = [{"url": listener.url + "/hook", "format": "plain"}]
        async with notifying(project, {"webhooks": hooks}) as (rt, _n):
            run_id, task_id = await make_task(rt)
            for _ in range(3):
                await rt.call(
                    "autopilot.block_task",
                    {"task_id": task_id, "reason": "3 attempt(s) failed", "run_id": run_id},
                    DISPATCHER,
                )
            await _marker(rt, task_id)
            *got, _marker_hook = await listener.wait_for(2)
            async with rt.db.read() as r:
                blocked = await r.scalar("SELECT count(*) FROM events WHERE type = 'task.blocked'")
    assert blocked == 1
    assert [b.body["kind"] for b in got] == ["task_blocked"]
