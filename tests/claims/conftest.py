"""Fixtures for the claims tests: a runtime with a task and a small source tree."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from roundtable.runtime import Runtime
from roundtable.tools.context import Caller

SOURCE = "def f():\n    return 1\n\n\nclass K:\n    def m(self):\n        pass\n\n    def n(self):\n        pass\n"


@dataclass
class Env:
    runtime: Runtime
    root: Path
    task_id: str

    async def claim(
        self, agent: str, mode: str = "write", caller: Caller | None = None, **extra: Any
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"resource_type": "file", "claim_type": mode, "task_id": self.task_id, "agent_id": agent}
        args.update(extra)
        if caller is None:
            return await self.runtime.call("resource.claim", args)
        return await self.runtime.call("resource.claim", args, caller)

    async def count(self, table: str) -> int:
        async with self.runtime.db.read() as r:
            return int(await r.scalar(f"SELECT count(*) FROM {table}"))

    async def snapshot(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], int]:
        async with self.runtime.db.read() as r:
            claims = [tuple(row) for row in await r.fetchall("SELECT * FROM claims ORDER BY id")]
            resources = [tuple(row) for row in await r.fetchall("SELECT * FROM resources ORDER BY id")]
            events = int(await r.scalar("SELECT count(*) FROM events"))
        return claims, resources, events


def write_tree(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "a.py").write_text(SOURCE)
    (root / "src" / "b.py").write_text("x = 1\n")
    (root / "src" / "pkg" / "c.py").write_text("y = 2\n")
    (root / "srcx").mkdir()
    (root / "srcx" / "d.py").write_text("z = 3\n")


@pytest.fixture
async def env(project: Path) -> AsyncIterator[Env]:
    write_tree(project)
    runtime = await Runtime.open(project)
    try:
        task = await runtime.call("task.create", {"title": "work", "body_md": "do it"})
        yield Env(runtime, project, task["task"]["id"])
    finally:
        await runtime.close()
