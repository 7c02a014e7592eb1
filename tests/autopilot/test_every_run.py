"""Every run the owner hosts is ticked, assigned and dispatched, whichever way it was created:
`run.create` from the console (its caller) or from another process (the CLI's `runs create`)
while the owner runs, and a second `run --headless --autopilot` after a first one. A launch with
no run says so and how to create one. Real owner, supervisor, scripted agents, SQLite."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from roundtable.autopilot import Overrides
from roundtable.cli import cli
from roundtable.cli.run_cmd import headless_autopilot
from roundtable.errors import RoundtableError
from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.tui.base import CONSOLE
from tests.autopilot.helpers import demo_project, events, to_the_operator

pytestmark = pytest.mark.anyio


async def _implementer_dispatched(rt: Runtime, run_id: str, timeout: float = 120.0) -> dict[str, object]:
    """The first `task_assigned` dispatch of `run_id` (its planned task, assigned and launched)."""
    deadline = time.monotonic() + timeout
    while True:
        for event in await events(rt, "autopilot.dispatched"):
            if event["run_id"] == run_id and event["payload"]["reason"] == "task_assigned":
                return event
        assert time.monotonic() < deadline, f"no task of {run_id} was dispatched"
        await anyio.sleep(0.1)


async def test_runs_created_while_the_owner_runs_are_assigned_and_dispatched(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p")
    async with Owner(root, http=False, socket=False, chair=True, autopilot=True, chair_interval=0.2) as owner:
        rt = owner.runtime
        with pytest.raises(RoundtableError, match="no run is active; create one with `roundtable runs create"):
            await rt.call("session.launch", {"agent_id": "implementer-1", "task_id": "T-none"})

        console_run = (await rt.call("run.create", {"goal": "Improve the calculator"}, CONSOLE))["run"]["id"]
        first = await _implementer_dispatched(rt, console_run)

        runner = CliRunner()  # another process's write: the CLI opens its own runtime
        created = await anyio.to_thread.run_sync(
            lambda: runner.invoke(cli, ["runs", "create", "--root", str(root), "--goal", "Second goal", "--json"])
        )
        assert created.exit_code == 0, created.output
        cli_run = json.loads(created.output)["run"]["id"]
        second = await _implementer_dispatched(rt, cli_run)
        async with rt.db.read() as r:
            rows = await r.fetchall(
                "SELECT run_id, assigned_agent_id FROM tasks WHERE id IN (?, ?)", (first["task_id"], second["task_id"])
            )
            created_by = await r.fetchall(
                "SELECT principal, transport FROM events WHERE type = 'run.created' ORDER BY id"
            )
        assert {str(a) for a, _ in rows} == {console_run, cli_run}
        assert all(str(b).startswith("implementer-") for _, b in rows)  # the least loaded implementer each
        assert [tuple(row) for row in created_by] == [("operator", "tui"), ("operator", "cli")]


async def test_a_second_headless_run_gets_its_task_assigned(tmp_path: Path) -> None:
    # One attempt: the second run's implementer meets the first run's claim and fails; its
    # retries (two more sessions and backoffs, half a minute) would show nothing more here.
    root = await demo_project(tmp_path / "p", max_attempts=1)
    result, lines = await to_the_operator(root)
    assert result.reason == "awaiting_operator", lines

    more: list[str] = []
    second = await headless_autopilot(
        root,
        goal="A second goal",
        run_id="RUN-2",
        resume=False,
        ticks=0,
        interval=0.2,
        overrides=Overrides(),
        echo=more.append,
    )
    # The demo's implementer cannot claim the file the first run's proposal holds, so this run
    # may end blocked; what matters here is that its task was assigned and launched at all.
    assert second.reason != "idle", more
    rt = await Runtime.open(root)
    try:
        event = await _implementer_dispatched(rt, "RUN-2", timeout=1)
        async with rt.db.read() as r:
            assigned = await r.scalar("SELECT assigned_agent_id FROM tasks WHERE id = ?", (event["task_id"],))
    finally:
        await rt.close()
    assert str(assigned).startswith("implementer-")
