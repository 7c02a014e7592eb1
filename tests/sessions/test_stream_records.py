"""What a supervised harness's stream says is recorded: its own session id and whether the session
needs the operator (`session.record_stream`), from a real process printing a recorded stream (the
scripted agent's `--usage-stream`) under the real supervisor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio

STREAMS = Path(__file__).parent / "streams"


async def _supervised(runtime: Runtime, tmp_path: Path, stream: Path) -> tuple[str, str]:
    sandboxed = runtime.config.sessions.model_copy(update={"read_paths": (str(stream.parent),)})
    runtime.config = runtime.config.model_copy(update={"sessions": sandboxed})
    run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"),
            extra_args=("--usage-stream", str(stream), "--turn-timeout", "0.5"),
        )
        session_id = res["session"]["id"]
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    return run_id, session_id


async def test_a_refused_tool_in_the_stream_is_recorded_as_waiting_for_a_permission(
    runtime: Runtime, tmp_path: Path
) -> None:
    run_id, session_id = await _supervised(runtime, tmp_path, STREAMS / "claude-code-2.1.197-refused-and-asks.jsonl")
    async with runtime.db.read() as r:
        row = await r.fetchone("SELECT * FROM agent_sessions WHERE id = ?", (session_id,))
        events = await r.fetchall(
            "SELECT payload_json FROM events WHERE type = 'session.attention' AND run_id = ?", (run_id,)
        )
    assert row is not None and row["external_session_id"] == "737e9f07-360e-469f-9311-f2ec5999bf4f"
    attention = json.loads(row["metadata_json"])["attention"]
    assert attention["state"] == "waiting_permission"
    assert attention["detail"] == "not allowed: Bash(command=ls /, description=list the root)"
    (event,) = [json.loads(e[0]) for e in events]
    assert (event["session_id"], event["agent_id"], event["state"]) == (
        session_id,
        "implementer-1",
        "waiting_permission",
    )


async def test_a_session_whose_process_fails_after_its_turn_is_failed(runtime: Runtime, tmp_path: Path) -> None:
    # The stream's turn ended cleanly; then the scripted agent, with no Chair to schedule its turn,
    # gives up and exits 1: the exit decides.
    run_id, session_id = await _supervised(runtime, tmp_path, STREAMS / "codex-0.171.0.jsonl")
    async with runtime.db.read() as r:
        row = await r.fetchone("SELECT * FROM agent_sessions WHERE id = ?", (session_id,))
        news = await r.fetchall(
            "SELECT payload_json FROM events WHERE type = 'session.attention' AND run_id = ?", (run_id,)
        )
    assert row is not None and row["external_session_id"] == "01a23232-f712-7b51-ac60-0cb175581bdd"
    assert row["status"] == "failed"
    assert json.loads(row["metadata_json"])["attention"] == {
        "state": "failed",
        "detail": "the harness exited with 1",
        "at": json.loads(row["metadata_json"])["attention"]["at"],
    }
    (event,) = [json.loads(e[0]) for e in news]
    assert (event["state"], event["previous"]) == ("failed", "finished")
