"""The supervisor's launch validation, failure handling and clean-up (no OCI runtime)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from roundtable.errors import PermissionDenied, ToolError, ValidationError
from roundtable.runtime import Runtime
from roundtable.services.sessions import capabilities
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import NOT_RUNNING, Supervisor, start_supervisor
from roundtable.tools.context import OPERATOR, Caller
from tests.helpers import eventually
from tests.sessions.helpers import add_proposal, make_task

pytestmark = pytest.mark.anyio


async def test_launch_is_validated(runtime: Runtime, tmp_path: Path) -> None:
    _run_id, task_id = await make_task(runtime)
    base = tmp_path / "sockets"
    base.mkdir()
    sup = Supervisor(runtime, base_dir=base)
    cases = [
        ({"agent_id": "implementer-2", "task_id": task_id}, "is not assigned to implementer-2"),
        ({"agent_id": "chair-1", "task_id": task_id}, "not of a launchable family"),
        ({"agent_id": "reviewer-1", "task_id": task_id}, "needs --proposal"),
        ({"agent_id": "reviewer-1", "task_id": task_id, "proposal_id": "P-x"}, "is not an open proposal"),
        ({"agent_id": "implementer-1", "task_id": "T-none"}, "does not exist or is closed"),
        (
            {"agent_id": "implementer-1", "task_id": task_id, "adapter": "generic"},
            "adapter generic does not support MCP",
        ),
        ({"agent_id": "implementer-1", "task_id": task_id, "adapter": "nope"}, "unknown adapter nope"),
        ({"agent_id": "implementer-1", "task_id": task_id, "run_id": "RUN-x"}, "run RUN-x does not exist; create one"),
    ]
    for args, text in cases:
        with pytest.raises(ValidationError, match=text):
            await sup.launch(LaunchArgs(**args))
    async with runtime.db.read() as r:
        assert await sessions.list_sessions(r) == []
        assert await r.scalar("SELECT count(*) FROM session_capabilities") == 0
    assert list(base.iterdir()) == []
    pid = await add_proposal(runtime, task_id, status="accepted")
    with pytest.raises(ValidationError, match="not an open proposal"):
        await sup.launch(LaunchArgs(agent_id="tester-1", task_id=task_id, proposal_id=pid))


async def test_environment_is_scrubbed_and_token_redacted(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable.services.sessions import adapters

    monkeypatch.setenv("SECRET_THING", "leak-me")
    script = (
        "import os,sys; print(' '.join(sorted(os.environ)));"
        "print('tok ' + os.environ['ROUNDTABLE_MCP_TOKEN'], flush=True); import time; time.sleep(1); sys.exit(3)"
    )
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"), extra_args=(script,)
        )
        session_id = res["session"]["id"]
        assert "rtcap_" not in json.dumps(res)
        directory = sup.live[session_id].directory
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(directory / "s.sock").st_mode) == 0o600
        await sup.wait(session_id, 30)
        assert not directory.exists()
    finally:
        await sup.close()
    log = sup.log_path(session_id).read_text().splitlines()
    names = set(log[0].split())
    assert "SECRET_THING" not in names
    assert {
        "HOME",
        "PATH",
        "ROUNDTABLE_MCP_TOKEN",
        "ROUNDTABLE_MCP_SOCKET",
        "ROUNDTABLE_SESSION_ID",
        "ROUNDTABLE_AGENT_ID",
        "ROUNDTABLE_RUN_ID",
        "ROUNDTABLE_TASK_ID",
    } <= names
    assert log[1] == "tok [REDACTED]"
    async with runtime.db.read() as r:
        session = await sessions.get(r, session_id)
        exited = await r.fetchone("SELECT payload_json FROM events WHERE type = 'session.exited'")
    assert session.status == "failed"
    meta = sessions.metadata(session)
    assert meta["isolation"] in ("bwrap", "landlock") and meta["role"] == "implementer"
    assert session.mcp_socket.endswith("/s.sock")
    async with runtime.db.read() as r:
        caps = await capabilities.for_session(r, session_id)
    assert caps and all(c.revoked_at for c in caps)
    assert stat.S_IMODE(os.stat(sup.log_path(session_id)).st_mode) == 0o600
    assert json.loads(exited[0]) == {"session_id": session_id, "exit_code": 3, "status": "failed"}


async def test_session_operations_need_a_supervisor(runtime: Runtime) -> None:
    """`session.launch` / `session.revoke` are operator operations run by the hosted supervisor;
    the supervisor's bookkeeping operations exist only for in-process components."""
    with pytest.raises(ToolError, match=NOT_RUNNING):
        await runtime.call("session.launch", {"agent_id": "implementer-1", "task_id": "T"}, OPERATOR)
    sup = await start_supervisor(runtime)
    try:
        with pytest.raises(ValidationError, match="unknown argument token"):
            await runtime.call("session.launch", {"agent_id": "a", "task_id": "T", "token": "x"}, OPERATOR)
        with pytest.raises(ValidationError, match="missing required argument session_id"):
            await runtime.call("session.revoke", {}, OPERATOR)
        agent = Caller("agent", "http", agent_id="implementer-1")
        with pytest.raises(PermissionDenied, match="reserved for the operator"):
            await runtime.call("session.revoke", {"session_id": "S"}, agent)
        with pytest.raises(ToolError, match=r"tool not implemented: session\.record_exit"):
            await runtime.call("session.record_exit", {"session_id": "S", "reason": "x"}, OPERATOR)
    finally:
        await sup.close()
    assert runtime.supervisor is None
    with pytest.raises(ToolError, match=NOT_RUNNING):
        await runtime.call("session.revoke", {"session_id": "S"}, OPERATOR)


async def test_a_session_killed_while_holding_its_turn_hands_it_back_at_once(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn of a session whose process died is expired as `session_exited` when its exit is
    recorded, and the Chair schedules the next agent's request then, not after turn_timeout."""
    import asyncio
    import signal
    import time

    from roundtable.chair import ChairLoop
    from roundtable.services.sessions import adapters

    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    timings = runtime.config.chair.model_copy(update={"tick_interval": 30.0, "turn_timeout": 600.0})
    runtime.config = runtime.config.model_copy(update={"chair": timings})
    run_id, task_id = await make_task(runtime)
    loop = ChairLoop(runtime)
    chair = asyncio.create_task(loop.run())
    sup = await start_supervisor(runtime, base_dir=tmp_path)

    async def scheduled_for(agent: str) -> list[dict[str, object]]:
        async with runtime.db.read() as r:
            rows = await r.fetchall("SELECT payload_json FROM events WHERE type = 'agent.turn_scheduled'")
        return [p for p in (json.loads(row[0]) for row in rows) if p["agent_id"] == agent]

    async def until(check: object, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not await check():  # type: ignore[operator]
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.02)

    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"),
            extra_args=("import time; time.sleep(120)",),
        )
        session_id = res["session"]["id"]
        first = await runtime.call(
            "agent.turn_request", {"run_id": run_id, "agent_id": "implementer-1", "reason_md": "mine"}
        )
        await until(lambda: scheduled_for("implementer-1"))
        await runtime.call(
            "agent.turn_start",
            {"run_id": run_id, "agent_id": "implementer-1", "request_event_id": first["request_event_id"]},
        )
        second = await runtime.call(
            "agent.turn_request", {"run_id": run_id, "agent_id": "implementer-2", "reason_md": "next"}
        )
        os.killpg(res["pid"], signal.SIGKILL)
        killed = time.monotonic()
        await until(lambda: scheduled_for("implementer-2"))
        handed_over = time.monotonic() - killed
    finally:
        await sup.close()
        chair.cancel()
        with pytest.raises(asyncio.CancelledError):
            await chair
    async with runtime.db.read() as r:
        expired = [
            json.loads(row[0])
            for row in await r.fetchall("SELECT payload_json FROM events WHERE type = 'agent.turn_expired'")
        ]
    assert expired == [
        {
            "agent_id": "implementer-1",
            "request_event_id": first["request_event_id"],
            "timeout": "session_exited",
            "session_id": session_id,
        }
    ]
    assert (await scheduled_for("implementer-2"))[0]["request_event_id"] == second["request_event_id"]
    assert handed_over < 10.0  # not chair.turn_timeout (600 s); the e2e tier checks it is under a second


@pytest.mark.parametrize("reaped_first", [False, True], ids=["exits-while-watched", "already-reaped"])
async def test_a_harness_that_leaves_a_process_holding_its_output_still_ends(
    tmp_path: Path, reaped_first: bool
) -> None:
    # Here `sh` exits at once while the `sleep` it started keeps stdout open. The session's end
    # must not wait for the sleep's 300 s, and the sleep must not outlive it. `already-reaped` is
    # what a loaded machine does: asyncio has reaped `sh` before the supervisor looks, and then
    # asyncio's Process.wait() returns at once, pipes open or not (CI failed on that once).
    from roundtable.supervisor import exit_status

    marker = tmp_path / "pid"
    process = await asyncio.create_subprocess_exec(
        "sh",
        "-c",
        f"sleep 300 & echo $! > {marker}; exit 7",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    if reaped_first:

        async def reaped() -> bool:
            return process.returncode is not None

        await eventually(reaped, timeout=30, what="asyncio to reap sh")
    assert await asyncio.wait_for(exit_status(process, linger=0.2), 30) == 7
    left = int(marker.read_text())
    assert process.stdout is not None and await asyncio.wait_for(process.stdout.read(), 30) == b""  # EOF: no holder
    assert await asyncio.wait_for(process.wait(), 30) == 7  # and asyncio's own wait is over too
    status = Path(f"/proc/{left}/status")

    def gone() -> bool:  # killed: a zombie its new parent has yet to reap, or reaped
        try:
            return "State:\tZ" in status.read_text()
        except FileNotFoundError:
            return True

    for _ in range(1500):  # up to 30 s for the kill to take effect
        if gone():
            break
        await asyncio.sleep(0.02)
    assert gone(), f"the sleep {left} it left behind is still alive"
