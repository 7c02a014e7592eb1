"""Fixtures for workspace tests: a git project whose workspaces live in a private directory
outside it, an open runtime with its agents registered, and a task for the author."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.tools.context import OPERATOR
from tests.helpers import AUTHOR, agent, git

OTHER = "implementer-2"


@pytest.fixture
def ws_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rtws"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def repo(project: Path, ws_dir: Path) -> Path:
    """The project as a git repository (committed, uncommitted and untracked files), its
    workspaces under `ws_dir`."""
    config = project / ".roundtable" / "config.yaml"
    config.write_text(config.read_text() + f"workspaces:\n  dir: {ws_dir}\n")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "README.txt").write_text("hello\n")
    (project / ".gitignore").write_text(".roundtable/\n*.log\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "init")
    (project / "README.txt").write_text("hello\nuncommitted\n")
    (project / "notes.md").write_text("untracked\n")
    (project / "debug.log").write_text("ignored\n")
    return project


@pytest.fixture
async def rt(repo: Path) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(repo)
    await sync_agents(runtime)
    try:
        yield runtime
    finally:
        await runtime.close()


@dataclass
class Work:
    rt: Runtime
    task_id: str
    path: Path
    workspace_id: str

    async def call(self, tool: str, args: dict[str, Any], who: str = AUTHOR) -> dict[str, Any]:
        return await self.rt.call(tool, args, agent(who) if who else OPERATOR)

    async def propose(self, **extra: Any) -> dict[str, Any]:
        args = {"task_id": self.task_id, "title": "Change", "summary_md": "Because.", **extra}
        return await self.call("workspace.propose", args)

    async def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        async with self.rt.db.read() as r:
            for table in ("events", "proposals", "patch_revisions", "claims", "claim_contentions"):
                out[table] = int(await r.scalar(f"SELECT COUNT(*) FROM {table}"))
            out["ws_updated"] = hash(await r.scalar("SELECT updated_at || state FROM workspaces"))
        return out


@pytest.fixture
async def work(rt: Runtime) -> Work:
    task = await rt.call("task.create", {"title": "Change app", "body_md": "Do it."}, OPERATOR)
    task_id = task["task"]["id"]
    made = await rt.call("workspace.create", {"agent_id": AUTHOR, "task_id": task_id}, OPERATOR)
    ws = made["workspace"]
    return Work(rt, task_id, Path(ws["path"]), ws["id"])
