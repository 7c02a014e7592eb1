"""Fixtures for the evidence tests: a project that is a real git repository, proposals created
through the proposal tools (with stored patch revisions), and callers of each kind."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.store.records import SessionCapability
from roundtable.tools.context import Caller
from tests.support.evidence import AGENT, AUTHOR, add_lines_patch, make_proposal

__all__ = ["AGENT", "AUTHOR", "add_lines_patch", "make_proposal"]  # this directory's tests import them from here
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
