"""Fixtures for the coordination tests: a runtime with the configured agents and one active run."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable import chair
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs


@pytest.fixture
async def run_id(runtime: Runtime) -> str:
    """Agents synced from the default config (implementer-1..2, reviewer-1, …) and an active run."""
    await chair.sync_agents(runtime)
    run = await runs.create_run(runtime, "test goal")
    return run.id


def set_config(project: Path, text: str) -> None:
    """Append YAML to the project's config (tests use it for short Chair timeouts)."""
    path = project / ".roundtable" / "config.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + text, encoding="utf-8")
