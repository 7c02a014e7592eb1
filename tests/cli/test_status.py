"""`roundtable status`: what needs the operator, the running sessions with their spend and the
runs' state in one screen, and the same as JSON. Real database, the real CLI."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

from roundtable.cli import cli
from roundtable.runtime import Runtime
from roundtable.tools.context import DISPATCHER, OPERATOR, SUPERVISOR
from tests.sessions.helpers import bind, make_task

pytestmark = pytest.mark.anyio


async def _status(runtime: Runtime, *args: str) -> str:
    done = await asyncio.to_thread(CliRunner().invoke, cli, ["status", "--root", str(runtime.root), *args])
    assert done.exit_code == 0, done.output
    return done.output


async def test_status_shows_what_needs_you_running_sessions_and_runs(runtime: Runtime) -> None:
    empty = await _status(runtime)
    assert "owner: not running" in empty and "NEEDS YOU: none" in empty and "RUNNING SESSIONS: none" in empty

    run_id, task_id = await make_task(runtime)
    session = await bind(runtime, "implementer-1", run_id, task_id)
    await runtime.call(
        "session.record_usage",
        {"session_id": session.session_id, "input_tokens": 11000, "output_tokens": 1500, "cost_usd": 0.42},
        SUPERVISOR,
    )
    other = await runtime.call("task.create", {"title": "Docs", "body_md": "b", "readable_paths": ["src"]}, OPERATOR)
    other_id = other["task"]["id"]
    await runtime.call(
        "autopilot.block_task", {"task_id": other_id, "reason": "codex not found on PATH", "run_id": run_id}, DISPATCHER
    )
    await runtime.call("human.request_approval", {"subject": "Ship Docs?", "reason_md": "r", "task_id": task_id})

    text = await _status(runtime)
    lines = text.splitlines()
    assert "NEEDS YOU (2)" in lines
    assert any(line.startswith("  ! approval requested: Ship Docs?") for line in lines)
    assert f"  ! task blocked: Docs — codex not found on PATH  [{other_id}]" in lines
    assert "RUNNING SESSIONS (1)" in lines
    assert f"  {session.session_id}  implementer-1  active  task {task_id}  12k tokens · $0.42" in lines
    (run_line,) = [line for line in lines if line.startswith(f"  {run_id}  [active]")]
    assert "1 blocked, 1 open" in run_line and "12k tokens · $0.42" in run_line
    assert any(line.startswith("TODAY (") and line.endswith("12k tokens · $0.42") for line in lines)
    assert len(lines) <= 24  # one screen

    data = json.loads(await _status(runtime, "--json"))
    assert [n["kind"] for n in data["needs_you"]] == ["approval", "task"]
    (live,) = data["sessions"]
    assert (live["id"], live["usage"]["tokens"], live["usage"]["cost_usd"]) == (session.session_id, 12500, 0.42)
    assert data["runs"][0]["id"] == run_id and data["runs"][0]["tasks"] == {"blocked": 1, "open": 1}
    assert data["today"]["tokens"] == 12500 and data["today"]["budget"] is None and data["owner"]["running"] is False


async def test_status_lists_what_the_gateway_refused(runtime: Runtime) -> None:
    from roundtable.tools.context import GATEWAY

    run_id, task_id = await make_task(runtime)
    session = await bind(runtime, "implementer-1", run_id, task_id)
    assert "REFUSED BY THE GATEWAY" not in await _status(runtime)
    await runtime.call(
        "gateway.record_connection_refused",
        {
            "session_id": session.session_id,
            "host": "evil.example",
            "port": 443,
            "reason": "not on sessions.network.allow",
        },
        GATEWAY,
    )
    await runtime.call(
        "gateway.record_credential_refused",
        {"session_id": session.session_id, "api": "anthropic", "status": 401, "message": "invalid x-api-key"},
        GATEWAY,
    )
    lines = (await _status(runtime)).splitlines()
    assert "REFUSED BY THE GATEWAY (2)" in lines
    refused = [line for line in lines if session.session_id in line and "implementer-1" in line and "refused" in line]
    assert refused[0].endswith("the model API refused the credential (401, invalid x-api-key)")  # newest first
    assert refused[1].endswith("connection to evil.example:443 refused: not on sessions.network.allow")
    data = json.loads(await _status(runtime, "--json"))
    assert [(e["type"], e["session_id"]) for e in data["gateway_refused"]] == [
        ("gateway.credential_refused", session.session_id),
        ("gateway.connection_refused", session.session_id),
    ]


async def test_status_says_which_running_session_waits_for_you_and_why(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    session = await bind(runtime, "implementer-1", run_id, task_id)
    detail = "not allowed: Bash(command=make test)"
    await runtime.call(
        "session.record_stream",
        {
            "session_id": session.session_id,
            "harness_session_id": "h-1",
            "attention": "waiting_permission",
            "detail": detail,
        },
        SUPERVISOR,
    )
    lines = (await _status(runtime)).splitlines()
    assert (
        f"  ! session waits for a permission: implementer-1 (implementer) — {detail}  [{session.session_id}]" in lines
    )
    assert any(
        line.startswith(f"  {session.session_id}  implementer-1  active (waiting permission)  task") for line in lines
    )
    data = json.loads(await _status(runtime, "--json"))
    (live,) = data["sessions"]
    assert (
        live["attention"] == {"state": "waiting_permission", "detail": detail} and live["harness_session_id"] == "h-1"
    )
