"""Governance helpers shared by the test directories: one-hunk patches, reviewer counts, and
`Flow`, which drives one proposal through the tools the way agents and the operator do."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roundtable.runtime import Runtime
from roundtable.tools.context import OPERATOR, Caller
from tests.helpers import agent

AUTHOR = "implementer-1"
REVIEWERS = ("reviewer-1", "reviewer-2")


def make_patch(path: str, old: str, new: str) -> str:
    """A one-hunk git diff replacing a one-line file `old` with `new`."""
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


def configure_reviewers(project: Path, count: int = 3) -> None:
    """Configure `count` reviewers, so `reviewer-1`..`reviewer-<count>` are registered voters."""
    path = project / ".roundtable" / "config.yaml"
    text = path.read_text()
    old = "  reviewers:\n    count: 1\n"
    assert old in text
    path.write_text(text.replace(old, f"  reviewers:\n    count: {count}\n"))


@dataclass
class Flow:
    """Drives one proposal through the tools."""

    rt: Runtime
    task_id: str = ""

    async def call(self, tool: str, args: dict[str, Any], caller: Caller = OPERATOR) -> dict[str, Any]:
        return await self.rt.call(tool, args, caller)

    async def task(self) -> str:
        out = await self.call("task.create", {"title": "Change app", "body_md": "Do it."})
        self.task_id = out["task"]["id"]
        return self.task_id

    async def claim(self, path: str, who: str = AUTHOR, resource_type: str = "file") -> dict[str, Any]:
        return await self.call(
            "resource.claim",
            {
                "resource_type": resource_type,
                "claim_type": "write",
                "task_id": self.task_id,
                "path": path,
                "agent_id": who,
            },
            agent(who),
        )

    async def propose(self, patch: str, **extra: Any) -> dict[str, Any]:
        args = {
            "task_id": self.task_id,
            "agent_id": AUTHOR,
            "title": "Change",
            "summary_md": "Because.",
            "affected_resources": [],
            "risk": "normal",
            "patch": patch,
            **extra,
        }
        out = await self.call("proposal.create", args, agent(AUTHOR))
        return out["proposal"]  # type: ignore[no-any-return]

    async def approve_votes(self, proposal_id: str, vote: str = "approve") -> None:
        for who in REVIEWERS:
            await self.call(
                "vote.cast", {"proposal_id": proposal_id, "agent_id": who, "vote": vote, "reason_md": "ok"}, agent(who)
            )

    async def security(self, proposal_id: str) -> dict[str, Any]:
        return await self.call("security.review", {"proposal_id": proposal_id})

    async def test_run(self, proposal_id: str, command: str = "printf ok") -> dict[str, Any]:
        out = await self.call("test.run", {"command": command, "proposal_id": proposal_id})
        return out["test_run"]  # type: ignore[no-any-return]

    async def approve_human(self, proposal_id: str, override: bool = False) -> dict[str, Any]:
        req = await self.call(
            "human.request_approval",
            {"subject": "apply", "reason_md": "please", "proposal_id": proposal_id},
            agent(AUTHOR),
        )
        out = await self.call(
            "human.request_approval",
            {
                "subject": "apply",
                "reason_md": "please",
                "approval_id": req["approval"]["id"],
                "proposal_id": proposal_id,
                "status": "approved",
                "override_policy": override,
            },
        )
        return out["approval"]  # type: ignore[no-any-return]

    async def ready(self, patch: str, path: str = "src/app.py", **extra: Any) -> dict[str, Any]:
        """Task, claim, proposal, two approvals and a passing test run: every default gate met."""
        if not self.task_id:
            await self.task()
        await self.claim(path)
        proposal = await self.propose(patch, **extra)
        await self.approve_votes(proposal["id"])
        await self.test_run(proposal["id"])
        return proposal
