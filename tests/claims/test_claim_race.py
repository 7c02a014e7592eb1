"""Concurrent claimants on separate connections: exactly one wins each round; fences increase."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from tests.claims.conftest import write_tree

pytestmark = pytest.mark.anyio

ROUNDS = 40


async def test_two_runtimes_racing_for_the_same_file(project: Path) -> None:
    write_tree(project)
    one = await Runtime.open(project)
    two = await Runtime.open(project)  # a second Database: its own writer connection
    try:
        task = (await one.call("task.create", {"title": "race", "body_md": "x"}))["task"]["id"]

        async def attempt(runtime: Runtime, agent: str, path: str) -> str | None:
            args = {
                "resource_type": "file",
                "path": path,
                "claim_type": "write",
                "task_id": task,
                "agent_id": agent,
            }
            try:
                out = await runtime.call("resource.claim", args)
            except ToolError as exc:
                assert str(exc).startswith("claim conflict: write claim ")
                return None
            return str(out["claim"]["id"])

        for n in range(ROUNDS):
            path = f"src/race_{n}.py"
            results = await asyncio.gather(
                attempt(one, "implementer-1", path),
                attempt(two, "implementer-2", path),
            )
            winners = [r for r in results if r is not None]
            assert len(winners) == 1, f"round {n}: {results}"
        async with one.db.read() as r:
            active = await r.fetchall(
                "SELECT resource_id, count(*) FROM claims WHERE status = 'active' GROUP BY resource_id"
            )
            fences = [row[0] for row in await r.fetchall("SELECT fence FROM claims ORDER BY created_at, id")]
            contentions = await r.scalar("SELECT count(*) FROM claim_contentions")
        assert len(active) == ROUNDS and all(row[1] == 1 for row in active)
        assert len(set(fences)) == ROUNDS and sorted(fences) == fences
        assert contentions == ROUNDS  # every loser recorded exactly one contention
    finally:
        await one.close()
        await two.close()
