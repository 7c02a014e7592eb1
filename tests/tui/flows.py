"""A real git project driven through the tools, so console actions change real state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roundtable.chair import sync_agents
from roundtable.runtime import Runtime
from roundtable.tools.context import OPERATOR
from tests.helpers import agent, git

AUTHOR = "implementer-1"


def make_repo(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "src" / "other.py").write_text("x = 1\n")
    (project / ".gitignore").write_text(".roundtable/\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "init")
    return project


def one_line_patch(path: str, old: str, new: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


async def ready_proposal(
    rt: Runtime, path: str = "src/app.py", old: str = "print('v1')", new: str = "print('v2')"
) -> dict[str, Any]:
    """Task, claim, proposal, two approving votes and a passing test run; returns the proposal.
    Votes count only from registered agents of a voting role: the config's agents are synced."""
    await sync_agents(rt)
    task = await rt.call("task.create", {"title": f"Change {path}", "body_md": "Do it."}, OPERATOR)
    task_id = task["task"]["id"]
    await rt.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": path, "agent_id": AUTHOR},
        agent(AUTHOR),
    )
    created = await rt.call(
        "proposal.create",
        {
            "task_id": task_id,
            "agent_id": AUTHOR,
            "title": f"Change {path}",
            "summary_md": "Because.",
            "affected_resources": [],
            "risk": "normal",
            "patch": one_line_patch(path, old, new),
        },
        agent(AUTHOR),
    )
    proposal: dict[str, Any] = created["proposal"]
    for who in ("reviewer-1", "architect-1"):
        await rt.call(
            "vote.cast",
            {"proposal_id": proposal["id"], "agent_id": who, "vote": "approve", "reason_md": "ok"},
            agent(who),
        )
    await rt.call("test.run", {"command": "printf ok", "proposal_id": proposal["id"]}, OPERATOR)
    return proposal


async def request_approval(rt: Runtime, proposal_id: str, subject: str = "apply") -> dict[str, Any]:
    out = await rt.call(
        "human.request_approval",
        {"subject": subject, "reason_md": "please", "proposal_id": proposal_id},
        agent(AUTHOR),
    )
    return out["approval"]  # type: ignore[no-any-return]


async def scalar(rt: Runtime, sql: str, params: tuple[Any, ...] = ()) -> Any:
    async with rt.db.read() as r:
        return await r.scalar(sql, params)
