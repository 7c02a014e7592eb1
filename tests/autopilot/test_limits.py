"""The autopilot's limits: concurrent sessions (`max_sessions`), dispatches per run
(`--max-iterations`), and the flags `run` accepts. Real owner, supervisor, scripted agents, SQLite."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable import clock
from roundtable.cli import cli as cli_main
from roundtable.demo import workspace as demo
from roundtable.runtime import Runtime
from roundtable.services.governance import gates
from roundtable.store.records import Proposal
from tests.autopilot.helpers import demo_project, events, to_the_operator

pytestmark = pytest.mark.anyio


async def test_one_session_at_a_time_still_reaches_the_operator(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p", max_sessions=1)
    result, lines = await to_the_operator(root)
    assert result.reason == "awaiting_operator", lines
    rt = await Runtime.open(root)
    try:
        launched = await events(rt, "session.launched")
        exited = await events(rt, "session.exited")
    finally:
        await rt.close()
    assert len(launched) == 5 == len(exited)  # planner, implementer, reviewer, security, tester
    ends = {e["payload"]["session_id"]: e["id"] for e in exited}
    for before, after in itertools.pairwise(launched):
        # The next session is launched only once the one before has exited.
        assert ends[before["payload"]["session_id"]] < after["id"]


async def test_max_iterations_bounds_the_dispatches_of_a_run(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "run",
        "--root",
        str(root),
        "--headless",
        "--autopilot",
        "--goal",
        "Improve the calculator",
        "--max-iterations",
        "1",
        "--retry-backoff",
        "100ms",
        "--max-consecutive-errors",
        "3",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=dict(os.environ),
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    text = out.decode()
    assert process.returncode == 3, text  # the autopilot may launch no more: the operator's turn
    assert "(iteration_limit)" in text and "dispatched architect-1" in text and "implementer-1" not in text
    rt = await Runtime.open(root)
    try:
        dispatched = await events(rt, "autopilot.dispatched")
    finally:
        await rt.close()
    assert [e["payload"]["agent_id"] for e in dispatched] == ["architect-1"]


def test_read_only_never_dispatches() -> None:
    result = CliRunner().invoke(cli_main, ["run", "--read-only", "--autopilot"])
    assert result.exit_code == 2 and "cannot be combined with --autopilot" in result.output
    bad = CliRunner().invoke(cli_main, ["run", "--headless", "--autopilot", "--max-iterations", "-1"])
    assert bad.exit_code == 2 and "--max-iterations" in bad.output
    started = CliRunner().invoke(cli_main, ["start", "--help"])
    assert started.exit_code == 0 and "--autopilot" in started.output


async def test_headless_autopilot_with_real_harnesses_missing_says_why(project: Path) -> None:
    """The default config names real harnesses (claude, codex, gemini): where they are not
    installed, the planning task is blocked with the reason and the run ends blocked, at once."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"}
    if shutil.which("claude", path=env["PATH"]):
        pytest.skip("claude is installed here")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "run",
        "--root",
        str(project),
        "--headless",
        "--autopilot",
        "--goal",
        "Do something",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    text = out.decode()
    assert process.returncode == 3, text  # the run ended blocked
    assert "blocked: claude not found on PATH (adapter claude of architect-1)" in text
    assert "(all_remaining_tasks_blocked)" in text


async def test_reviews_are_completed_to_the_approvals_the_policy_requires(tmp_path: Path) -> None:
    """The starter policy asks for 2 approvals and names only the Reviewer role (one reviewer by
    default): the dispatcher adds the next voter (security) so the revision can be approved."""
    root = await demo_project(tmp_path / "p")
    policy = root / "POLICIES.ROUNDTABLE.md"
    policy.write_text(policy.read_text().replace(demo.DEMO_PROFILE, demo.DEFAULT_PROFILE), encoding="utf-8")
    result, lines = await to_the_operator(root)
    assert result.reason == "awaiting_operator", lines
    rt = await Runtime.open(root)
    try:
        requested = await events(rt, "proposal.review_requested")
        reviews = [e for e in await events(rt, "autopilot.dispatched") if e["payload"]["reason"] == "review_requested"]
        async with rt.db.read() as r:
            proposal = await r.one(Proposal, "SELECT * FROM proposals")
            assert proposal is not None
            report = await gates.evaluate(r, root, rt.policy, proposal, clock.now(), dry_run_error="")
    finally:
        await rt.close()
    assert requested[0]["payload"]["reviewers"] == ["reviewer-1"]  # all the policy named
    assert sorted(e["payload"]["agent_id"] for e in reviews) == ["reviewer-1", "security-1"]
    assert report.ok, report.error


async def test_launches_per_minute_holds_the_next_launch_back(tmp_path: Path) -> None:
    """The minute is the dispatcher's clock's (a virtual one here): the held launch goes once the
    test moves it on, not after a minute of waiting."""
    from roundtable.clock import VirtualClock
    from roundtable.owner import Owner
    from tests.autopilot.helpers import dispatcher_cycles, wait_for_events

    root = await demo_project(tmp_path / "p", launches_per_minute=1)
    minute = VirtualClock()
    async with Owner(
        root,
        http=False,
        socket=False,
        chair=True,
        autopilot=True,
        chair_interval=0.2,
        dispatcher_options={"clock": minute},
    ) as owner:
        rt = owner.runtime
        await rt.call("run.create", {"goal": "Improve the calculator", "run_id": "RUN-rate"})
        held = await wait_for_events(rt, "autopilot.rate_limited", 1, timeout=120)
        await dispatcher_cycles(owner.dispatcher)  # passes that would launch now have run: they hold
        dispatched = await events(rt, "autopilot.dispatched")
        assert [e["payload"]["agent_id"] for e in dispatched] == ["architect-1"]  # one launch in the minute
        minute.advance(59.0)
        await dispatcher_cycles(owner.dispatcher)
        assert len(await events(rt, "autopilot.dispatched")) == 1  # 59 s: still the same minute
        minute.advance(1.0)
        owner.dispatcher.wake()  # type: ignore[union-attr]
        second = await wait_for_events(rt, "autopilot.dispatched", 2, timeout=120)
    assert held[0]["payload"]["reason"] == "1 launches in the last minute (autopilot.launches_per_minute is 1)"
    assert held[0]["run_id"] == "RUN-rate" and held[0]["principal"] == "dispatcher"
    assert second[1]["payload"]["key"] == held[0]["payload"]["key"]  # the launch that was held back
