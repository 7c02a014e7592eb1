"""A real harness against the project when one is installed; the SDK client through the stdio
bridge's per-session socket mode always."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.server.sessions import SessionEndpoint
from roundtable.services.sessions.adapters import bridge_argv
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import bind, make_task
from tests.support.results import value_of

pytestmark = pytest.mark.anyio

HARNESSES = ("codex", "claude", "gemini", "opencode")


async def test_sdk_client_through_the_stdio_bridge_socket_mode(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    directory = Path(tempfile.mkdtemp(prefix="rt-e2e-"))
    endpoint = SessionEndpoint(runtime, b.cap.id, directory / "s.sock")
    await endpoint.start()
    try:
        argv = bridge_argv(str(directory / "s.sock"), str(runtime.root))
        env = {"PATH": os.environ.get("PATH", ""), "ROUNDTABLE_MCP_TOKEN": b.token}
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env), mode="legacy") as c:
            names = {t.name for t in (await c.session.list_tools()).tools}
            assert "proposal_create" in names and "vote_cast" not in names
            result = await c.session.call_tool("task_get", {})
            assert not result.is_error
            assert value_of(result)["task"]["id"] == task_id
            refused = await c.session.call_tool("vote_cast", {"vote": "approve", "reason_md": "x"})
            assert refused.is_error
            assert refused.content[0].text == "operation vote.cast is not permitted for role implementer"
    finally:
        await endpoint.close()
        shutil.rmtree(directory, ignore_errors=True)


async def test_real_harness_when_installed(project: Path) -> None:
    installed = [name for name in HARNESSES if shutil.which(name)]
    if not installed:
        pytest.skip(f"no agent harness installed (looked for {', '.join(HARNESSES)} on PATH)")
    name = installed[0]
    async with Owner(project, http=False, socket=False, chair=True) as owner:
        rt: Runtime = owner.runtime
        from roundtable.services.coordination.runs import create_run

        await create_run(rt, "harness smoke test")
        task = await rt.call(
            "task.create",
            {
                "title": "Look around",
                "body_md": "Read the table.",
                "assigned_agent_id": "implementer-1",
                "readable_paths": ["README.md"],
            },
        )
        sup = await start_supervisor(rt, revoke_grace=5)
        try:
            res = await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task["task"]["id"], adapter=name))
            session_id = res["session"]["id"]
            # A harness without credentials may exit at once; either way the session is recorded,
            # its capability revoked and the log free of the token.
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                await sup.wait(session_id, 20)
            await sup.revoke(session_id, "test over")
            await sup.wait(session_id, 30)
        finally:
            await sup.close()
        assert "rtcap_" not in sup.log_path(session_id).read_text()
        async with rt.db.read() as r:
            status = await r.scalar("SELECT status FROM agent_sessions WHERE id = ?", (session_id,))
            revoked = await r.scalar("SELECT revoked_at FROM session_capabilities WHERE session_id = ?", (session_id,))
        assert status in ("ended", "failed") and revoked
