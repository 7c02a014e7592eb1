"""A failing or killed agent is retried with backoff, then its task is blocked with the reason; too
many failures in a row stop the autopilot; a harness that is not installed blocks its task at
once. Real owner (Chair, supervisor, dispatcher), real agent processes, real SQLite."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from roundtable.clock import VirtualClock
from roundtable.owner import Owner
from roundtable.services.coordination.autopilot import blocked_reason
from roundtable.services.coordination.runs import create_run
from roundtable.tools.context import OPERATOR
from tests.autopilot.helpers import (
    demo_project,
    dispatcher_cycles,
    events,
    implementers_run,
    task_status,
    wait_for_events,
)

pytestmark = pytest.mark.anyio

FAILS = "import sys; print('boom', flush=True); sys.exit(3)"
HANGS = "import time; print('working', flush=True); time.sleep(600)"


@asynccontextmanager
async def owner_with_task(root: Path, **options: Any) -> AsyncIterator[tuple[Owner, str]]:
    """An owner with the autopilot on and one task the Chair assigns to implementer-1."""
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2, **options) as owner:
        rt = owner.runtime
        await create_run(rt, "")
        created = await rt.call(
            "task.create",
            {"title": "Add mul()", "body_md": "Add mul() to calc/ops.py.", "readable_paths": ["calc"]},
            OPERATOR,
        )
        owner.dispatcher.wake()  # type: ignore[union-attr]
        yield owner, str(created["task"]["id"])


async def test_a_failing_agent_is_retried_with_backoff_then_blocked(tmp_path: Path) -> None:
    """The backoff is measured on the owner's clock (a virtual one here, for the Chair and the
    dispatcher alike): the retry waits for the test to move it past the 30 s, however long the
    machine takes."""
    root = await demo_project(tmp_path / "p", max_attempts=2, retry_backoff_seconds=30, max_consecutive_failures=5)
    implementers_run(root, "failing", FAILS)
    backoff = VirtualClock()
    async with owner_with_task(root, clock=backoff) as (owner, task_id):
        rt = owner.runtime
        await wait_for_events(rt, "autopilot.session_failed", 1)
        await dispatcher_cycles(owner.dispatcher)  # passes that would retry now have run: they wait
        backoff.advance(29.0)
        await dispatcher_cycles(owner.dispatcher)
        assert len(await events(rt, "autopilot.dispatched")) == 1  # within the backoff: no retry
        backoff.advance(1.0)
        owner.dispatcher.wake()  # type: ignore[union-attr]
        blocked = await wait_for_events(rt, "task.blocked", 1)
        dispatched = await events(rt, "autopilot.dispatched")
        failed = await events(rt, "autopilot.session_failed")
        assert [e["payload"]["attempt"] for e in dispatched] == [1, 2]
        assert [(e["payload"]["attempt"], e["payload"]["exit_code"]) for e in failed] == [(1, 3), (2, 3)]
        assert failed[0]["payload"]["next_retry_seconds"] == 30 and failed[1]["payload"]["next_retry_seconds"] is None
        assert blocked[0]["payload"]["task_id"] == task_id and blocked[0]["principal"] == "dispatcher"
        reason = blocked[0]["payload"]["reason"]
        assert "2 attempt(s) failed for implementer-1" in reason and "exited with code 3" in reason
        assert await task_status(rt, task_id) == "blocked"
        async with rt.db.read() as r:
            assert await blocked_reason(r, task_id) == reason
        got = await rt.call("task.get", {"task_id": task_id}, OPERATOR)
        assert got["task"]["status"] == "blocked" and got["task"]["blocked_reason"] == reason
        await dispatcher_cycles(owner.dispatcher)  # blocked stays blocked: no third launch
        assert len(await events(rt, "autopilot.dispatched")) == 2
        assert owner.dispatcher is not None and owner.dispatcher.status().enabled


async def test_a_killed_agent_is_retried_then_blocked(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p", max_attempts=2, retry_backoff_seconds=0.2, max_consecutive_failures=5)
    implementers_run(root, "hanging", HANGS)
    async with owner_with_task(root) as (owner, task_id):
        rt = owner.runtime
        for attempt in (1, 2):
            dispatched = await wait_for_events(rt, "autopilot.dispatched", attempt)
            session_id = dispatched[-1]["payload"]["session_id"]
            live = owner.supervisor.live[session_id]
            assert live.process is not None  # started before the dispatch was recorded
            os.killpg(live.process.pid, signal.SIGKILL)
            failed = await wait_for_events(rt, "autopilot.session_failed", attempt)
            assert failed[-1]["payload"]["session_id"] == session_id
            assert failed[-1]["payload"]["exit_code"] == -signal.SIGKILL
        blocked = await wait_for_events(rt, "task.blocked", 1)
        assert f"exited with code -{int(signal.SIGKILL)}" in blocked[0]["payload"]["reason"]
        assert await task_status(rt, task_id) == "blocked"
        exited = await events(rt, "session.exited")
        assert [e["payload"]["status"] for e in exited] == ["failed", "failed"]


async def test_a_session_past_its_time_is_stopped_and_counts_as_failed(tmp_path: Path) -> None:
    """Ten minutes of a hanging session on the dispatcher's (virtual) clock, stopped at once."""
    root = await demo_project(tmp_path / "p", max_attempts=1, retry_backoff_seconds=0.1, max_consecutive_failures=5)
    implementers_run(root, "hanging", HANGS)
    timer = VirtualClock()
    options = {"session_timeout": 600.0, "clock": timer}
    async with owner_with_task(root, dispatcher_options=options) as (owner, task_id):
        rt = owner.runtime
        owner.supervisor.revoke_grace = 0.2  # type: ignore[union-attr]
        await wait_for_events(rt, "autopilot.dispatched", 1)
        timer.advance(599.0)
        await dispatcher_cycles(owner.dispatcher)
        assert not await events(rt, "capability.revoked")  # within its time: left running
        timer.advance(1.0)
        owner.dispatcher.wake()  # type: ignore[union-attr]
        blocked = await wait_for_events(rt, "task.blocked", 1, timeout=60)
        assert blocked[0]["payload"]["task_id"] == task_id
        assert "ran longer than 600s and was stopped" in blocked[0]["payload"]["reason"]
        revoked = await events(rt, "capability.revoked")
        assert revoked and revoked[0]["payload"]["reason"] == "autopilot: session timed out"
        assert revoked[0]["principal"] == "supervisor"


async def test_consecutive_failures_stop_the_autopilot(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p", max_attempts=5, retry_backoff_seconds=0.1, max_consecutive_failures=2)
    implementers_run(root, "failing", FAILS)
    async with owner_with_task(root) as (owner, task_id):
        rt = owner.runtime
        stopped = await wait_for_events(rt, "autopilot.stopped", 1)
        assert "2 consecutive failed sessions" in stopped[0]["payload"]["reason"]
        dispatcher = owner.dispatcher
        assert dispatcher is not None
        state = dispatcher.status()
        assert not state.enabled and state.mode == "manual" and state.consecutive_failures == 2
        assert state.stopped_reason == stopped[0]["payload"]["reason"]
        await dispatcher_cycles(dispatcher)
        assert len(await events(rt, "autopilot.dispatched")) == 2  # nothing after the stop
        assert await task_status(rt, task_id) == "in_progress"  # not blocked: the autopilot stopped first
        # The operator turns it back on: the stop is cleared and the work goes on.
        await dispatcher.set_enabled(True)
        assert dispatcher.status().stopped_reason == "" and dispatcher.status().consecutive_failures == 0
        await wait_for_events(rt, "autopilot.dispatched", 3)


async def test_a_harness_that_is_not_installed_blocks_its_task(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p")
    implementers_run(root, "codex", command="codex-not-installed-here exec")
    async with owner_with_task(root) as (owner, task_id):
        rt = owner.runtime
        blocked = await wait_for_events(rt, "task.blocked", 1)
        assert blocked[0]["payload"]["reason"].startswith("codex-not-installed-here not found on PATH")
        assert await task_status(rt, task_id) == "blocked"
        assert not await events(rt, "session.launched")  # blocked at once, nothing launched or retried
        assert not await events(rt, "autopilot.dispatched")


async def test_manual_mode_launches_nothing_until_the_operator_turns_it_on(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p", mode="manual")
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2) as owner:
        rt = owner.runtime
        dispatcher = owner.dispatcher
        assert dispatcher is not None and not dispatcher.enabled
        run = await create_run(rt, "Improve the calculator")
        await dispatcher_cycles(dispatcher)  # it has looked at the new run, and stayed off
        assert not await events(rt, "autopilot.dispatched", "session.launched", "task.created")
        await dispatcher.set_enabled(True)
        enabled = await events(rt, "autopilot.enabled")
        assert [(e["run_id"], e["principal"]) for e in enabled] == [(run.id, "operator")]
        first = await wait_for_events(rt, "autopilot.dispatched", 1)
        assert first[0]["payload"]["agent_id"] == "architect-1" and first[0]["payload"]["reason"] == "plan_goal"
        await dispatcher.set_enabled(False)
        assert not dispatcher.status().enabled
        disabled = await events(rt, "autopilot.disabled")
        assert [e["principal"] for e in disabled] == ["operator"]


async def test_a_goal_without_a_planner_is_recorded_not_guessed(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p", planner_agent="architect-9")  # no such agent
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2) as owner:
        rt = owner.runtime
        run = await create_run(rt, "Improve the calculator")
        skipped = await wait_for_events(rt, "autopilot.skipped", 1)
        assert skipped[0]["run_id"] == run.id and "no enabled planner agent" in skipped[0]["payload"]["reason"]
        await dispatcher_cycles(owner.dispatcher)
        assert not await events(rt, "task.created", "autopilot.dispatched")
        assert len(await events(rt, "autopilot.skipped")) == 1  # once, not every pass


async def test_an_agent_that_dies_at_once_is_still_retried_then_blocked(tmp_path: Path) -> None:
    """A process that exits before its launch has returned is not lost (no session left 'running')."""
    root = await demo_project(tmp_path / "p", max_attempts=2, retry_backoff_seconds=0.1, max_consecutive_failures=5)
    implementers_run(root, "instant", command="false")
    async with owner_with_task(root) as (owner, task_id):
        rt = owner.runtime
        blocked = await wait_for_events(rt, "task.blocked", 1, timeout=60)
        assert blocked[0]["payload"]["task_id"] == task_id
        assert "exited with code 1" in blocked[0]["payload"]["reason"]
        assert [e["payload"]["attempt"] for e in await events(rt, "autopilot.session_failed")] == [1, 2]
        assert owner.dispatcher is not None and not owner.dispatcher.busy


async def test_a_refused_or_missing_model_credential_stops_the_autopilot_at_once(tmp_path: Path) -> None:
    """No retry can give a session a credential: the first such exit stops the autopilot with
    the reason (three attempts used to cost minutes each)."""
    root = await demo_project(tmp_path / "p", max_attempts=3, retry_backoff_seconds=0.2, max_consecutive_failures=5)
    implementers_run(root, "nologin", "import sys; print('Not logged in · Please run /login', flush=True); sys.exit(1)")
    async with owner_with_task(root) as (owner, _task_id):
        rt = owner.runtime
        stopped = await wait_for_events(rt, "autopilot.stopped", 1)
        assert stopped[0]["payload"]["reason"] == "no model credential in the owner's environment"
        assert owner.dispatcher is not None and not owner.dispatcher.status().enabled
        assert owner.dispatcher.status().stopped_reason == stopped[0]["payload"]["reason"]
        await dispatcher_cycles(owner.dispatcher)
        assert len(await events(rt, "autopilot.dispatched")) == 1  # never retried


async def test_a_reopened_task_is_launched_again_with_its_attempts_anew(tmp_path: Path) -> None:
    """The operator reopens a task the autopilot blocked: it is launched again, with its attempts
    counted anew — by the dispatcher that blocked it and by a restarted owner's."""
    root = await demo_project(tmp_path / "p", max_attempts=1, retry_backoff_seconds=0.1, max_consecutive_failures=5)
    implementers_run(root, "failing", FAILS)
    async with owner_with_task(root) as (owner, task_id):
        rt = owner.runtime
        await wait_for_events(rt, "task.blocked", 1)
        await dispatcher_cycles(owner.dispatcher)
        assert len(await events(rt, "autopilot.dispatched")) == 1
        await rt.call("task.update_status", {"task_id": task_id, "status": "open"}, OPERATOR)
        owner.dispatcher.wake()  # type: ignore[union-attr]
        dispatched = await wait_for_events(rt, "autopilot.dispatched", 2)
        assert [e["payload"]["attempt"] for e in dispatched] == [1, 1]
        await wait_for_events(rt, "task.blocked", 2)
        await rt.call("task.update_status", {"task_id": task_id, "status": "open"}, OPERATOR)
    # The next owner counts the dispatches since the task's last block only.
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2) as owner:
        rt = owner.runtime
        owner.dispatcher.wake()  # type: ignore[union-attr]
        dispatched = await wait_for_events(rt, "autopilot.dispatched", 3)
        assert dispatched[-1]["payload"]["task_id"] == task_id and dispatched[-1]["payload"]["attempt"] == 1
