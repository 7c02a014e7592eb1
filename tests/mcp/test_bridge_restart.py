"""The stdio bridge keeps a harness's subscriptions across an owner restart: it re-opens the
session by itself (the harness sits idle, waiting for pushes) and subscribes again, and the
restarted owner notices turn events written by another process (its 1 s tick)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination.runs import create_run
from tests.support.owners import Bridge, OwnerChild, free_port

from .conftest import schedule_turn

pytestmark = pytest.mark.anyio


async def _frame(bridge: Bridge, predicate, timeout: float) -> dict:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, f"no matching frame; got {bridge.frames!r}"
        frame = await bridge.recv(timeout=remaining)
        if predicate(frame):
            return frame


async def test_subscription_survives_an_owner_restart(project: Path) -> None:
    owner = await OwnerChild(project, free_port()).start()
    bridge = await Bridge.spawn("--root", str(project))
    rt = await Runtime.open(project)
    try:
        run = await create_run(rt, "restart")
        uri = f"roundtable://turns/{run.id}"
        assert "result" in await bridge.handshake()
        await bridge.send({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}})
        assert (await bridge.recv())["id"] == 2
        await schedule_turn(rt, run.id)  # another process's write: the owner's tick finds it

        def updated(frame: dict) -> bool:
            return frame.get("method") == "notifications/resources/updated" and frame["params"]["uri"] == uri

        first = await _frame(bridge, updated, 10)
        types = [e["type"] for e in first["params"]["_meta"]["roundtable/events"]]
        assert "agent.turn_requested" in types or "agent.turn_scheduled" in types

        await owner.stop()
        await owner.start()
        # The bridge's GET stream finds the session gone and re-opens it.
        await bridge.wait_stderr(b"reconnected with a new session", timeout=30)
        await schedule_turn(rt, run.id, "implementer-2")
        again = await _frame(bridge, updated, 15)
        assert any(e.get("agent_id") == "implementer-2" for e in again["params"]["_meta"]["roundtable/events"])
        # The replayed subscription's answer never reaches the harness.
        assert not any(isinstance(json.loads(f).get("id"), str) for f in bridge.frames)
        status, _rest, err = await bridge.close()
        assert status == 0 and b"reconnected with a new session" in err
    finally:
        await rt.close()
        await bridge.kill()
        await owner.stop()
