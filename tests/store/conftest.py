"""The store tests' database: a fresh file, closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
