"""The store tests' database (a fresh file, closed after the test) and their wait on the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from roundtable.store.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "rt.db")
    try:
        yield database
    finally:
        await database.close()


async def until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until `condition` holds (bounded: a stuck test fails, not hangs)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")
