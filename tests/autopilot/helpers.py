"""Shared parts of the autopilot tests: the demo project with scripted agents, config edits,
and waiting for events in the real database."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from roundtable import clock
from roundtable.autopilot import Dispatcher
from roundtable.demo import workspace as demo
from roundtable.runtime import Runtime


async def demo_project(root: Path, **autopilot: Any) -> Path:
    """The `make run` demo workspace (git repository, scripted agents, autopilot on), with the
    `autopilot` settings given."""
    await asyncio.to_thread(demo.prepare, root)
    if autopilot:
        edit_config(root, lambda data: data["autopilot"].update(autopilot))
    return root


def edit_config(root: Path, change: Any) -> None:
    path = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def implementers_run(root: Path, name: str, code: str = "", command: str = "") -> None:
    """One implementer, running adapter `name`: `python -c <code>` (a harness that fails, hangs…)
    or `command` as given."""
    command = command or f"{sys.executable} -c {json.dumps(code)}"

    def change(data: dict[str, Any]) -> None:
        data["adapters"][name] = {"command": command, "supports_mcp": True}
        data["agents"]["implementers"]["adapter"] = name
        data["agents"]["implementers"]["count"] = 1

    edit_config(root, change)


async def events(rt: Runtime, *types: str) -> list[dict[str, Any]]:
    """Every event of these types, oldest first, payload decoded."""
    marks = ", ".join("?" for _ in types)
    async with rt.db.read() as r:
        rows = await r.fetchall(
            f"SELECT id, run_id, type, actor_id, task_id, payload_json, principal, created_at FROM events"
            f" WHERE type IN ({marks}) ORDER BY id",
            types,
        )
    return [
        {
            "id": row[0],
            "run_id": row[1],
            "type": row[2],
            "actor_id": row[3],
            "task_id": row[4],
            "payload": json.loads(row[5]),
            "principal": row[6],
            "at": clock.parse(str(row[7])) / 1e9,
        }
        for row in rows
    ]


async def wait_for_events(rt: Runtime, kind: str, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
    """Wait until at least `count` events of type `kind` exist; returns them."""
    deadline = time.monotonic() + timeout
    while True:
        found = await events(rt, kind)
        if len(found) >= count:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{len(found)} {kind} event(s) after {timeout}s, wanted {count}")
        await asyncio.sleep(0.1)


async def dispatcher_cycles(dispatcher: Dispatcher | None, count: int = 2, timeout: float = 60.0) -> None:
    """Wait until the dispatcher's loop has gone round `count` more times (woken each time): a
    pass that would act on the state as it is now has then run — the sync point before asserting
    that nothing more happened."""
    assert dispatcher is not None
    goal = dispatcher.cycles + count
    deadline = time.monotonic() + timeout
    while dispatcher.cycles < goal:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the dispatcher went round {dispatcher.cycles - goal + count} of {count} times in {timeout}s"
            )
        dispatcher.wake()
        await asyncio.sleep(0.02)


async def task_status(rt: Runtime, task_id: str) -> str:
    async with rt.db.read() as r:
        return str(await r.scalar("SELECT status FROM tasks WHERE id = ?", (task_id,)))


async def to_the_operator(root: Path) -> tuple[Any, list[str]]:
    """`run --headless --autopilot --goal "Improve the calculator"` in-process: (its result, the
    lines it printed)."""
    from roundtable.autopilot import Overrides
    from roundtable.cli.run_cmd import headless_autopilot

    lines: list[str] = []
    result = await headless_autopilot(
        root,
        goal="Improve the calculator",
        run_id="",
        resume=False,
        ticks=0,
        interval=0.2,
        overrides=Overrides(),
        echo=lines.append,
    )
    return result, lines
