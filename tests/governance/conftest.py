"""Fixtures for governance tests: a real git repository with roundtable initialised, and
helpers that drive the tools the way agents and the operator do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from tests.helpers import agent, git
from tests.support.governance import AUTHOR, REVIEWERS, Flow, configure_reviewers, make_patch

__all__ = [
    "AUTHOR",
    "REVIEWERS",
    "Flow",
    "agent",
    "configure_reviewers",
    "git",
    "make_patch",
]  # this directory's tests import them from here


@pytest.fixture
def repo(project: Path) -> Path:
    """The project as a git repository with two committed files, three reviewers configured."""
    configure_reviewers(project)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "README.txt").write_text("hello\n")
    (project / ".gitignore").write_text(".roundtable/\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "init")
    return project


@pytest.fixture
async def rt(repo: Path) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(repo)
    await sync_agents(runtime)  # votes count only from registered agents
    try:
        yield runtime
    finally:
        await runtime.close()


@pytest.fixture
def flow(rt: Runtime) -> Flow:
    return Flow(rt)
