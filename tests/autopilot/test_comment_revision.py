"""The review loop on the demo: the proposal waits for the operator, who leaves a line comment;
the dispatcher relaunches the author with the comment in its briefing, the scripted author makes
revision 2 in its workspace answering it, the reviewers review revision 2 and it waits for the
operator again. Real owner, supervisor, scripted agent processes and SQLite."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from roundtable.owner import Owner
from roundtable.services.coordination.runs import create_run
from roundtable.services.governance.comments import read_revision
from tests.autopilot.helpers import demo_project, events, wait_for_events

pytestmark = pytest.mark.anyio

COMMENT = "Say in a docstring that mul multiplies."


async def test_an_operator_comment_makes_revision_2(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "demo", retry_backoff_seconds=0.2)
    async with Owner(root, http=False, socket=False, chair=True, chair_interval=0.2) as owner:
        rt = owner.runtime
        await create_run(rt, "Improve the calculator")
        (asked,) = await wait_for_events(rt, "approval.requested", 1, timeout=180)
        pid = asked["payload"]["proposal_id"]
        got = await rt.call("proposal.get", {"proposal_id": pid})
        assert got["proposal"]["revision_number"] == 1
        added = [d for d in read_revision(got["patch"]).file_lines()["calc/ops.py"] if d.kind == "added"]
        line = next(d.new for d in added if "return a * b" in d.text)
        await rt.call("proposal.comment", {"proposal_id": pid, "path": "calc/ops.py", "line": line, "body_md": COMMENT})

        started = time.monotonic()
        await wait_for_events(rt, "proposal.revised", 1, timeout=120)
        revised_after = time.monotonic() - started
        relaunch = next(
            e["payload"] for e in await events(rt, "autopilot.dispatched") if e["payload"]["reason"] == "comments_left"
        )
        assert relaunch["agent_id"] == "implementer-1"
        log = owner.supervisor.log_path(relaunch["session_id"]).read_text(encoding="utf-8")
        steps = [json.loads(text) for text in log.splitlines() if text.startswith("{")]
        briefing = next(step["text"] for step in steps if step.get("step") == "briefing")
        assert "comments left" in briefing and f"calc/ops.py:{line} — {COMMENT}" in briefing

        got = await rt.call("proposal.get", {"proposal_id": pid})
        assert got["proposal"]["revision_number"] == 2 and "comments" not in got  # none open on revision 2
        assert f"+    # Review: {COMMENT}" in got["patch"]
        # Revision 2 goes round the loop again and waits for the operator.
        await wait_for_events(rt, "approval.requested", 2, timeout=180)
        report = await rt.call("patch.validate", {"proposal_id": pid})
        failing = [g["name"] for g in report["gates"] if not g["passed"]]
        assert set(failing) <= {"approval"}, report["gates"]
        print(f"comment -> revision 2: {revised_after:.1f}s")
