"""Fixtures for the evidence tests: a project that is a real git repository, proposals created
through the proposal tools (with stored patch revisions), and callers of each kind."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable import clock
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.patches import parse_patch
from roundtable.store.records import SessionCapability
from roundtable.tools.context import Caller

AUTHOR = "implementer-1"
AGENT = Caller("agent", "http", agent_id="reviewer-1")
AUTHOR_AGENT = Caller("agent", "http", agent_id=AUTHOR)
ANONYMOUS_AGENT = Caller("agent", "http")

APP_PY = "def add(a, b):\n    return a + b\n"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def repo(project: Path) -> Path:
    """The initialised project as a git repository with one committed source file."""
    (project / "app.py").write_text(APP_PY, encoding="utf-8")
    git(project, "init", "-q", "-b", "main")
    git(project, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "app.py")
    git(project, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "init")
    return project


@pytest.fixture
async def rt(repo: Path) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(repo)
    try:
        yield runtime
    finally:
        await runtime.close()


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
    args = {
        "task_id": task_id,
        "agent_id": AUTHOR,
        "title": "Change",
        "summary_md": "Because.",
        "affected_resources": [],
        "risk": risk,
        "patch": patch,
    }
    out = await rt.call("proposal.create", args, author)
    return str(out["proposal"]["id"])


def session_caller(role: str, agent_id: str, proposal_id: str, session_id: str = "S-1") -> Caller:
    """A caller as the session endpoint builds it, with its capability row."""
    cap = SessionCapability(
        id="CAP-1",
        token_sha256="0" * 64,
        session_id=session_id,
        agent_id=agent_id,
        run_id="R-1",
        role=role,
        task_id="T-1",
        proposal_id=proposal_id,
        issued_at=clock.now(),
        expires_at=clock.now(),
        max_expires_at=clock.now(),
        revoked_at="",
        revoked_reason="",
        created_at=clock.now(),
    )
    return Caller("agent", "session", agent_id=agent_id, session_id=session_id, capability=cap)


async def count(rt: Runtime, table: str) -> int:
    async with rt.db.read() as r:
        return int(await r.scalar(f"SELECT COUNT(*) FROM {table}"))


async def events(rt: Runtime, type_: str) -> list[dict[str, object]]:
    import json

    async with rt.db.read() as r:
        rows = await r.fetchall("SELECT * FROM events WHERE type = ? ORDER BY id", (type_,))
    return [{**dict(row), "payload": json.loads(row["payload_json"])} for row in rows]
