"""A revision requested relaunches the author with the reason in its briefing: the
reviewer asks for a revision, the dispatcher launches the implementer again, and the implementer's
session reads why (BRIEFING.md) before it attaches its patch again. Real owner, supervisor,
scripted agent processes and SQLite."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from roundtable.demo.scripted import REVISE_REASON
from roundtable.owner import Owner
from roundtable.services.coordination.runs import create_run
from tests.autopilot.helpers import demo_project, edit_config, events, wait_for_events

pytestmark = pytest.mark.anyio


async def test_a_revision_request_relaunches_the_author_with_the_reason(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p", max_attempts=2, retry_backoff_seconds=0.2)

    def reviewers_ask_for_revisions(data: dict) -> None:  # type: ignore[type-arg]
        command = f"{sys.executable} -m roundtable.demo.scripted --vote revise"
        data["adapters"]["revising"] = {"command": command, "supports_mcp": True}
        data["agents"]["reviewers"]["adapter"] = "revising"

    edit_config(root, reviewers_ask_for_revisions)
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2) as owner:
        rt = owner.runtime
        await create_run(rt, "Improve the calculator")
        deadline = asyncio.get_running_loop().time() + 120
        while True:
            relaunches = [
                e for e in await events(rt, "autopilot.dispatched") if e["payload"]["reason"] == "revision_requested"
            ]
            if relaunches:
                break
            assert asyncio.get_running_loop().time() < deadline, await events(rt, "autopilot.dispatched")
            await asyncio.sleep(0.1)
        relaunch = relaunches[0]["payload"]
        assert relaunch["agent_id"] == "implementer-1" and relaunch["session_id"]
        await owner.supervisor.wait(relaunch["session_id"], 60)
        await wait_for_events(rt, "session.exited", 1)
        log = owner.supervisor.log_path(relaunch["session_id"]).read_text(encoding="utf-8")
        steps = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
        briefing = next(step["text"] for step in steps if step.get("step") == "briefing")
        assert "revision requested" in briefing and REVISE_REASON in briefing and "reviewer-1 voted revise" in briefing
        assert any(step.get("step") == "revised" for step in steps), steps
