"""Fixtures for the authority tests: a real git project, a real owner on an ephemeral port with
its agents registered and their credentials written, and SDK clients bound to one agent."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.store.schema import TABLES
from tests.helpers import make_git_project, sdk_http, stored_auth

pytestmark = pytest.mark.anyio

PATCH = "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('v1')\n+print('v2')\n"
OTHER_PATCH = (
    "diff --git a/src/other.py b/src/other.py\n--- a/src/other.py\n+++ b/src/other.py\n"
    "@@ -1 +1 @@\n-print('o1')\n+print('o2')\n"
)


@pytest.fixture
def repo(project: Path) -> Path:
    return make_git_project(project, {"src/app.py": "print('v1')\n", "src/other.py": "print('o1')\n"})


@pytest.fixture
def sockdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rta", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def owner(repo: Path, sockdir: Path) -> AsyncIterator[Owner]:
    async with Owner(repo, http_address="127.0.0.1:0", socket_path=sockdir / "rt.sock", chair=False) as o:
        yield o


def client(owner: Owner, agent_id: str) -> Client:
    """The official MCP SDK client over real HTTP, presenting `agent_id`'s stored credential."""
    return Client(sdk_http(owner.http_url, stored_auth(owner.root, agent_id)), mode="legacy")


async def snapshot(runtime: Runtime) -> dict[str, Any]:
    """Every table's rows: a refused call must leave all of them (events included) unchanged."""
    out: dict[str, Any] = {}
    async with runtime.db.read() as r:
        for table in TABLES:
            rows = await r.fetchall(f"SELECT * FROM {table}")
            out[table] = sorted(tuple(row) for row in rows)
    return out


async def events(runtime: Runtime, kind: str) -> list[dict[str, Any]]:
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT * FROM events WHERE type = ? ORDER BY id", (kind,))
    return [dict(row) for row in rows]
