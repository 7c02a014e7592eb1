"""Proposals through the real tools, shared by the test directories: a patch adding lines to
`app.py` (or a new file), and a proposal created (or revised) the way an author does it."""

from __future__ import annotations

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.repository.patches import parse_patch
from roundtable.tools.context import Caller

AUTHOR = "implementer-1"
AGENT = Caller("agent", "http", agent_id="reviewer-1")


def add_lines_patch(path: str, lines: list[str], *, new_file: bool = False) -> str:
    """A git-format patch adding `lines` (to the end of app.py, or as a new file)."""
    body = "".join(f"+{line}\n" for line in lines)
    if new_file:
        return (
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}"
        )
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -1,2 +1,{2 + len(lines)} @@\n def add(a, b):\n     return a + b\n{body}"
    )


async def make_proposal(
    rt: Runtime, patch: str, *, proposal_id: str = "", task_id: str = "T-1", risk: str = "normal"
) -> str:
    """A proposal through the real tools: the operator creates the task, the author claims every
    touched file and proposes; with an existing `proposal_id` the patch becomes a new revision."""
    author = Caller("agent", "http", agent_id=AUTHOR)
    try:
        await rt.call("task.get", {"task_id": task_id})
    except ToolError:
        await rt.call("task.create", {"task_id": task_id, "title": "Change app", "body_md": "Do it."})
    for path in parse_patch(patch, rt.root).touched:
        async with rt.db.read() as r:
            held = await r.scalar(
                "SELECT 1 FROM claims WHERE resource_id = ? AND agent_id = ? AND status = 'active'",
                (f"file:{path}", AUTHOR),
            )
        if not held:
            args = {
                "resource_type": "file",
                "claim_type": "write",
                "task_id": task_id,
                "path": path,
                "agent_id": AUTHOR,
            }
            await rt.call("resource.claim", args, author)
    if proposal_id:
        out = await rt.call("proposal.attach_patch", {"proposal_id": proposal_id, "patch": patch}, author)
        return str(out["proposal"]["id"])
    proposal: dict[str, object] = {
        "task_id": task_id,
        "agent_id": AUTHOR,
        "title": "Change",
        "summary_md": "Because.",
        "affected_resources": [],
        "risk": risk,
        "patch": patch,
    }
    out = await rt.call("proposal.create", proposal, author)
    return str(out["proposal"]["id"])
