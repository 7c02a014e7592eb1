"""The scripted agents wait for the turn queue's update instead of polling `table.watch`: a real
owner with its Chair, the supervisor, and a scripted implementer over its capability socket
(through the stdio bridge)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundtable.owner import Owner
from roundtable.services.coordination.runs import create_run
from roundtable.supervisor import start_supervisor
from tests.e2e.test_sessions_workflow import TASK_BODY, finish, launch, log_lines
from tests.helpers import make_git_project

pytestmark = pytest.mark.anyio


async def test_scripted_implementer_is_told_its_turn(project: Path) -> None:
    make_git_project(project, {"src/app.py": "print('v1')\n"})
    async with Owner(project, http=False, socket=False, chair=True) as owner:
        rt = owner.runtime
        sup = await start_supervisor(rt, heartbeat_interval=0.5, revoke_grace=10)
        try:
            await create_run(rt, "Greet people")
            task = await rt.call(
                "task.create",
                {
                    "title": "Add greet()",
                    "body_md": TASK_BODY,
                    "assigned_agent_id": "implementer-1",
                    "readable_paths": ["src"],
                },
            )
            owner.chair.pause()  # so the turn is surely scheduled after the agent waits for it
            session_id = await launch(sup, "implementer-1", task["task"]["id"])
            for _ in range(600):
                if any(line.get("step") == "turn_requested" for line in log_lines(sup, session_id)):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            owner.chair.resume()
            lines = await finish(sup, session_id)
        finally:
            await sup.close()
    steps = [line.get("step") for line in lines]
    assert "turn_subscribe_failed" not in steps
    scheduled = next(line for line in lines if line.get("step") == "turn_scheduled")
    assert steps.index("turn_requested") < steps.index("turn_scheduled") < steps.index("turn_started")
    # The Chair schedules the turn after the request: the agent learned it from the push.
    assert scheduled["notified"] is True, lines
    assert "proposed" in steps and "turn_completed" in steps
