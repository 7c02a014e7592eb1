"""Every request forwarded by the bridge gets exactly one answer, also when the owner goes away
mid-reply: its answer, an error ("SSE stream ended without a response"), or — for a read-only
tool the bridge saw annotated as such in `tools/list` — one retry once the owner is back.

The owner is a real `roundtable mcp serve` child, stopped with SIGTERM (a graceful stop answers
a long poll at once with the page as it stands) or SIGKILL (a crash breaks its stream at once).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.owners import Bridge, OwnerChild, call, free_port
from tests.support.results import value_of

pytestmark = pytest.mark.anyio
FAR = 10**9  # a cursor beyond every event, so table_watch long-polls


async def _no_more_frames(bridge: Bridge, params: dict[str, Any] | None = None) -> None:
    """A ping, answered next: no frame was owed before it (`bridge.close()` then checks that none
    comes after either). Its answer is the sync point, whatever it says (the per-request protocol
    has no `ping`: a method-not-found error serves as well)."""
    ping: dict[str, Any] = {"jsonrpc": "2.0", "id": "sync", "method": "ping"}
    if params is not None:
        ping["params"] = params
    await bridge.send(ping)
    frame = await bridge.recv(timeout=30)
    assert frame.get("id") == "sync", f"unexpected extra frame: {frame!r}"


async def test_a_long_poll_is_answered_at_once_by_a_stopping_owner(project: Path) -> None:
    owner = await OwnerChild(project, free_port()).start()
    bridge = await Bridge.spawn("--root", str(project))
    try:
        assert "result" in await bridge.handshake()
        await bridge.send(call(2, "table_watch", {"after_event_id": FAR, "wait_ms": 20000}))
        await asyncio.sleep(1.0)  # the long poll reaches the owner (no sign of it is sent back)
        await owner.stop()  # SIGTERM: the long poll is answered, not held until the drain's deadline
        reply = await bridge.recv(timeout=30)
        assert reply["id"] == 2 and value_of(reply["result"])["next_after_event_id"] == FAR
        assert "events" not in value_of(reply["result"])
        await owner.start()  # the next request re-opens a session
        await bridge.send(call(3, "table_watch", {}))
        got = await bridge.recv(timeout=30)
        assert got["id"] == 3 and "next_after_event_id" in value_of(got["result"])
        await _no_more_frames(bridge)
        status, rest, err = await bridge.close()
        assert status == 0 and rest == b""
        assert b"reconnected with a new session" in err
    finally:
        await bridge.kill()
        await owner.stop()


async def test_a_stream_broken_by_a_crash_is_answered_once_with_an_error(project: Path) -> None:
    """Without `tools/list` the bridge cannot know `table_watch` is read-only: no retry."""
    owner = await OwnerChild(project, free_port()).start()
    bridge = await Bridge.spawn("--root", str(project))
    try:
        assert "result" in await bridge.handshake()
        await bridge.send(call(2, "table_watch", {"after_event_id": FAR, "wait_ms": 20000}))
        await asyncio.sleep(1.0)  # the long poll reaches the owner (no sign of it is sent back)
        await owner.kill()
        reply = await bridge.recv(timeout=30)
        assert reply == {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {"code": -32000, "message": "SSE stream ended without a response"},
        }
        await owner.start()  # today's recovery: the next request re-opens a session
        await bridge.send(call(3, "table_watch", {}))
        got = await bridge.recv(timeout=30)
        assert got["id"] == 3 and "next_after_event_id" in value_of(got["result"])
        await _no_more_frames(bridge)
        status, rest, err = await bridge.close()
        assert status == 0 and rest == b""
        assert b"reconnected with a new session" in err and b"sending it once more" not in err
    finally:
        await bridge.kill()
        await owner.stop()


async def test_read_only_request_is_retried_once_after_a_crash(project: Path) -> None:
    owner = await OwnerChild(project, free_port()).start()
    bridge = await Bridge.spawn("--root", str(project))
    try:
        await bridge.handshake()
        await bridge.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = {t["name"]: t for t in (await bridge.recv())["result"]["tools"]}
        assert tools["table_watch"]["annotations"]["readOnlyHint"] is True
        await bridge.send(call(3, "table_watch", {"after_event_id": FAR, "wait_ms": 3000}))
        await asyncio.sleep(0.5)
        await owner.kill()
        await owner.start()
        got = await bridge.recv(timeout=40)
        # No event after the cursor (an agent is not shown the empty list): the cursor stands.
        assert got["id"] == 3 and value_of(got["result"])["next_after_event_id"] == FAR
        assert "events" not in value_of(got["result"])
        await _no_more_frames(bridge)
        status, rest, err = await bridge.close()
        assert status == 0 and rest == b""
        text = err.decode()
        assert "reply to tools/call broke off; sending it once more" in text
        assert text.count("sending it once more") == 1
    finally:
        await bridge.kill()
        await owner.stop()


async def test_every_frame_is_one_answer_under_concurrency(project: Path) -> None:
    owner = await OwnerChild(project, free_port()).start()
    bridge = await Bridge.spawn("--root", str(project))
    try:
        await bridge.handshake()
        ids = list(range(10, 40))
        await bridge.send(*(call(i, "table_get_state") for i in ids), b'"just a string"\n', b"{not json\n")
        seen = [await bridge.recv() for _ in range(len(ids) + 1)]
        answered = sorted(m["id"] for m in seen if m.get("id") is not None)
        assert answered == ids
        assert [m["error"]["code"] for m in seen if m.get("id") is None] == [-32700]
        status, rest, _err = await bridge.close()
        assert status == 0 and all(json.loads(line) for line in rest.splitlines()) is True
    finally:
        await bridge.kill()
        await owner.stop()


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}


def modern_call(rid: int, tool: str, arguments: dict[str, object]) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": MODERN_META},
    }


async def test_modern_cancellation_closes_the_request_and_owes_no_answer(project: Path) -> None:
    owner = await OwnerChild(project, free_port()).start()
    bridge = await Bridge.spawn("--root", str(project))
    try:
        await bridge.send(modern_call(1, "table_watch", {"after_event_id": FAR, "wait_ms": 20000}))
        await asyncio.sleep(0.5)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        await bridge.send(cancel, modern_call(2, "table_get_state", {}))
        got = await bridge.recv(timeout=10)
        assert got["id"] == 2 and "counts" in value_of(got["result"])
        await _no_more_frames(bridge, {"_meta": MODERN_META})  # id 1 is never answered: the client gave it up
        status, rest, _err = await bridge.close(timeout=30)
        assert status == 0 and rest == b""
    finally:
        await bridge.kill()
        await owner.stop()
