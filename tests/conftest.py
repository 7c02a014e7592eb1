"""Shared fixtures: an initialised project in a temp dir and an open runtime on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.scaffold import init_project


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh project root with `roundtable init` applied."""
    root = tmp_path / "project"
    root.mkdir()
    init_project(root)
    return root


@pytest.fixture
async def runtime(project: Path) -> AsyncIterator[Runtime]:
    rt = await Runtime.open(project)
    try:
        yield rt
    finally:
        await rt.close()
