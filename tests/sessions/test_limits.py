"""Limits that stop a runaway agent without the operator: a stub model that loops on refused
calls, and one that never stops calling, are stopped within the configured caps — capability
revoked, process stopped, task blocked with the reason `task.get` shows. Real supervisor, session
endpoint, MCP SDK client in the session's process, SQLite."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio.lowlevel
import pytest
import yaml

from roundtable.runtime import Runtime
from roundtable.services.sessions import adapters
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio

# The stub model: connects to its session endpoint and repeats one call until refused for good.
LOOP = """
import asyncio, os, sys
from contextlib import AsyncExitStack
from roundtable.demo.scripted import connect

async def main():
    tool, args = sys.argv[1], {"title": "x", "summary_md": "x", "affected_resources": [], "risk": "normal", "patch": "junk"}
    async with AsyncExitStack() as stack:
        s = await connect(stack, os.environ["ROUNDTABLE_MCP_SOCKET"], os.environ["ROUNDTABLE_MCP_TOKEN"], direct=True)
        for n in range(1, 2001):
            try:
                refused, text = await s.attempt(tool, **(args if tool == "proposal.create" else {}))
            except Exception as exc:
                print("ENDED", n, type(exc).__name__, flush=True)
                return
            if "stopped by a limit" in text:
                print("STOPPED", n, text, flush=True)
                await asyncio.sleep(60)  # the supervisor stops the process
                return
asyncio.run(main())
"""


def _limits(root: Path, **values: int) -> None:
    path = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.setdefault("limits", {}).update(values)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


async def _stopped_by_limit(  # type: ignore[type-arg]
    project: Path, monkeypatch: pytest.MonkeyPatch, tool: str, script: str = LOOP, **limits: int
) -> dict:
    _limits(project, **limits)
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    runtime = await Runtime.open(project)
    try:
        _run_id, task_id = await make_task(runtime)
        sup = await start_supervisor(runtime, base_dir=project.parent)
        sup.revoke_grace = 0.5
        try:
            started = time.monotonic()
            res = await sup.launch(
                LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"), extra_args=(script, tool)
            )
            session_id = res["session"]["id"]
            await sup.wait(session_id, 60)
            took = time.monotonic() - started
        finally:
            await sup.close()
        got = await runtime.call("task.get", {"task_id": task_id})
        async with runtime.db.read() as r:
            denied = await r.scalar("SELECT count(*) FROM events WHERE type = 'capability.denied'")
            limit = await r.fetchone("SELECT payload_json FROM events WHERE type = 'session.limit_reached'")
            session = await r.fetchone("SELECT status FROM agent_sessions WHERE id = ?", (session_id,))
        log = sup.log_path(session_id).read_text()
        return {
            "task": got["task"],
            "denied": int(denied),
            "limit": json.loads(limit[0]) if limit else None,
            "session_status": session[0],
            "log": log,
            "seconds": took,
        }
    finally:
        await runtime.close()


async def test_a_model_looping_on_refused_calls_is_stopped(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = await _stopped_by_limit(project, monkeypatch, "proposal.create", session_refused_in_a_row=5)
    assert out["limit"] is not None, out["log"]
    assert out["limit"]["reason"] == "5 refused tool calls in a row (limits.session_refused_in_a_row is 5)"
    assert out["denied"] <= 5  # no refusal past the cap reaches the tools
    assert "STOPPED 6 " in out["log"], out["log"]  # the sixth call is refused by the limit itself
    task = out["task"]
    assert task["status"] == "blocked"
    assert "was stopped by a limit: 5 refused tool calls in a row" in task["blocked_reason"]
    assert out["session_status"] == "failed"  # the supervisor stopped the process


async def test_a_model_that_never_stops_calling_is_stopped(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = await _stopped_by_limit(project, monkeypatch, "table.get_state", session_tool_calls=8)
    assert out["limit"] is not None, out["log"]
    assert out["limit"]["reason"] == "8 tool calls (limits.session_tool_calls is 8)"
    assert "STOPPED 9 " in out["log"], out["log"]
    assert out["task"]["status"] == "blocked" and "8 tool calls" in out["task"]["blocked_reason"]
    await anyio.lowlevel.checkpoint()


# An agent that asked for a turn and polls for its start: every "not scheduled yet" is a wait.
POLL = """
import asyncio, json, os
from contextlib import AsyncExitStack
from roundtable.demo.scripted import connect

async def main():
    async with AsyncExitStack() as stack:
        s = await connect(stack, os.environ["ROUNDTABLE_MCP_SOCKET"], os.environ["ROUNDTABLE_MCP_TOKEN"], direct=True)
        req = await s.call("agent.turn_request", reason_md="my turn, please")
        for n in range(1, 21):
            refused, text = await s.attempt("agent.turn_start", request_event_id=req["request_event_id"])
            if "stopped by a limit" in text:
                print("STOPPED", n, text, flush=True)
                return
        print("POLLED", n, "still waiting:", "scheduled" in text, flush=True)
asyncio.run(main())
"""


async def test_polling_for_a_turn_is_waiting_not_refusing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty early `agent.turn_start` polls (no Chair schedules the turn) under a cap of five
    refusals in a row: the session is not stopped, and ends by itself."""
    out = await _stopped_by_limit(project, monkeypatch, "", session_refused_in_a_row=5, script=POLL)
    assert "POLLED 20 still waiting: True" in out["log"], out["log"]
    assert out["limit"] is None and out["task"]["status"] != "blocked"
    assert out["session_status"] == "ended"
