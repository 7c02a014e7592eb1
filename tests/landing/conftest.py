"""Fixtures for landing tests: the governance project (a real git repository, three reviewers)
with the operator's committer identity and a bare repository on the file system as `origin`;
`opened` opens a runtime after writing a `landing:` section into the config."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from tests.governance.conftest import repo  # noqa: F401  (the fixture, reused)
from tests.helpers import git


@pytest.fixture
def origin(repo: Path, tmp_path: Path) -> Path:  # noqa: F811
    """A bare repository as the project's `origin`, holding its main branch."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "config", "user.name", "Olive Operator")
    git(repo, "config", "user.email", "olive@example.com")
    git(repo, "branch", "-M", "main")
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    return bare


@contextlib.asynccontextmanager
async def opened(root: Path, landing_yaml: str = "") -> AsyncIterator[Runtime]:
    """A runtime over `root` whose config ends with `landing_yaml` (a `landing:` section)."""
    if landing_yaml:
        path = root / ".roundtable" / "config.yaml"
        path.write_text(path.read_text() + "\n" + landing_yaml.strip("\n") + "\n")
    runtime = await Runtime.open(root)
    await sync_agents(runtime)
    try:
        yield runtime
    finally:
        await runtime.close()
