"""Fixtures for the MCP surface tests: a real owner (HTTP, no Chair) on an initialised project
with agents, an active run, a task and a proposal, and SDK clients for its principals."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.services.coordination import turns
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.coordination.runs import create_run
from tests.helpers import auth_headers, sdk_http
from tests.sessions.helpers import add_proposal

AGENT = "implementer-1"


@dataclass
class World:
    owner: Owner
    run_id: str
    task_id: str
    other_task_id: str
    proposal_id: str

    @property
    def runtime(self) -> Runtime:
        return self.owner.runtime

    @property
    def url(self) -> str:
        return self.owner.http_url


@pytest.fixture
def sockdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rtm", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def world(project: Path, sockdir: Path) -> AsyncIterator[World]:
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "secret.txt").write_text("not for sessions\n")
    async with Owner(project, http_address="127.0.0.1:0", socket_path=sockdir / "rt.sock", chair=False) as owner:
        rt = owner.runtime
        await sync_agents(rt)
        run = await create_run(rt, "mcp surface")
        task = await rt.call(
            "task.create",
            {"title": "Add mul", "body_md": "do it", "assigned_agent_id": AGENT, "readable_paths": ["src"]},
        )
        other = await rt.call(
            "task.create",
            {"title": "Other", "body_md": "not yours", "assigned_agent_id": "implementer-2", "readable_paths": ["."]},
        )
        proposal_id = await add_proposal(rt, task["task"]["id"])
        yield World(owner, run.id, task["task"]["id"], other["task"]["id"], proposal_id)


@dataclass
class Inbox:
    """Notifications a client received, with a way to wait for one."""

    items: list[Any] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def handler(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.items.append(message)
            self.changed.set()

    async def wait_for(self, predicate: Any, timeout: float = 5.0) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for item in self.items:
                if predicate(item):
                    return item
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"no matching notification within {timeout} s; got {self.items!r}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)

    def updates(self, uri: str) -> list[Any]:
        return [i for i in self.items if isinstance(i, types.ResourceUpdatedNotification) and i.params.uri == uri]


def is_update(uri: str, event_type: str = "") -> Any:
    def match(item: Any) -> bool:
        if not isinstance(item, types.ResourceUpdatedNotification) or item.params.uri != uri:
            return False
        if not event_type:
            return True
        meta = item.params.meta or {}
        return any(e.get("type") == event_type for e in meta.get("roundtable/events", []))

    return match


@contextlib.asynccontextmanager
async def http_client(
    world: World, *, agent_id: str = AGENT, operator: bool = False, mode: str = "legacy", inbox: Inbox | None = None
) -> AsyncIterator[Client]:
    headers = await auth_headers(world.runtime, agent_id=agent_id, operator=operator)
    kwargs: dict[str, Any] = {"mode": mode}
    if inbox is not None:
        kwargs["message_handler"] = inbox.handler
    async with Client(sdk_http(world.url, headers), **kwargs) as client:
        yield client


async def schedule_turn(runtime: Runtime, run_id: str, agent_id: str = AGENT) -> int:
    """Request a turn for `agent_id` and let the Chair's scheduling step run; the request id."""
    async with runtime.db.write() as tx:
        asked = turns.TurnRequestArgs(run_id=run_id, agent_id=agent_id, reason_md="mcp test")
        req = await turns.request_turn(tx, asked)
    async with runtime.db.write() as tx:
        await turns.schedule_next(tx, run_id)
    return int(req["request_event_id"])
