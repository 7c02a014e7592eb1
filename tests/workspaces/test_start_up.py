"""The start-up read of an author whose workspace the operator made (`table.watch`, no arguments):
what it needs to start in one call — its task in full and its workspace — and the event that made
it in brief, as its model reads it; the reviewer's read says the proposal asked of it once."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from roundtable.server.mcp_adapter import tool_result
from roundtable.tools.registry import get_registry
from tests.helpers import AUTHOR, agent
from tests.workspaces.conftest import Work

pytestmark = pytest.mark.anyio


def as_read(page: dict[str, Any], agent_id: str) -> str:
    """`page` as the agent's model reads it over MCP (its one text block)."""
    spec = get_registry().lookup("table.watch")
    assert spec is not None
    text = tool_result(spec, page, structured=False, args={}, agent_id=agent_id).content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str) and yaml.safe_load(text) is not None
    return text


async def test_an_author_starts_from_its_task_and_workspace_in_one_read(work: Work) -> None:
    page = await work.rt.call("table.watch", {}, agent(AUTHOR))
    # Its task is not assigned to it: its workspace makes it its own, with the workspace's path.
    [task] = page["tasks"]
    assert task == {
        "id": work.task_id,
        "title": "Change app",
        "body_md": "Do it.",
        "status": "open",
        "priority": 100,
        "workspace": {"id": work.workspace_id, "path": str(work.path)},
    }
    # The event that made the workspace only says what the listed workspace says: it is not
    # read again; the cursor is past it.
    assert "events" not in page
    async with work.rt.db.read() as r:
        made = await r.scalar("SELECT max(id) FROM events WHERE type = 'workspace.created'")
    assert page["next_after_event_id"] == made
    text = as_read(page, AUTHOR)
    assert text == (
        f"next_after_event_id: {made}\n"
        f"tasks:\n- id: {work.task_id}\n  title: Change app\n  body_md: Do it.\n  status: open\n"
        f"  workspace:\n    id: {work.workspace_id}\n    path: {work.path}\n"
    )
    # What others do on its task later is news: a vote on its proposal, in brief.
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    pid = (await work.propose())["proposal"]["id"]
    vote = {"proposal_id": pid, "vote": "revise", "reason_md": "Name it.", "confidence": 0.9}
    await work.rt.call("vote.cast", vote, agent("reviewer-1"))
    later = await work.rt.call("table.watch", {"after_event_id": made}, agent(AUTHOR))
    [cast] = [e for e in later["events"] if e["type"] == "vote.cast"]
    assert {k: v for k, v in cast.items() if k not in ("id", "vote_id")} == {
        "type": "vote.cast",
        "actor_id": "reviewer-1",
        "proposal_id": pid,
        "vote": "revise",
        "revision_number": 1,
    }


async def test_a_reviewer_reads_the_review_asked_of_it_once(work: Work) -> None:
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    proposed = await work.propose()
    pid = proposed["proposal"]["id"]
    page = await work.rt.call("table.watch", {}, agent("reviewer-1"))
    # The pending proposal's row is the request: the event that made it (its task, reviewers and
    # revision hash the row's or the reviewer's own) is not read again beside it.
    assert "events" not in page
    [row] = page["pending_proposals"]
    assert (row["id"], row["task_id"], row["agent_id"]) == (pid, work.task_id, AUTHOR)
    text = as_read(page, "reviewer-1")
    assert text.count(work.task_id) == 1 and text.count(pid) == 1 and len(text.encode()) < 300
