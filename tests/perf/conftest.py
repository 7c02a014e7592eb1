"""Fixtures for the paging tests: agents synced from the default config and one active run."""

from __future__ import annotations

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.services.coordination.agents import sync_agents


@pytest.fixture
async def run_id(runtime: Runtime) -> str:
    await sync_agents(runtime)
    run = await runs.create_run(runtime, "paging")
    return run.id
