"""The MCP surface through the stdio bridge and on capability session sockets: turn-queue
subscriptions arrive on both, a session sees only its own run, task, proposals and readable
files, its tool list changes (with a notification) when its capability is revoked, an
anonymous principal reads but never writes, and 2026-07-28 clients listen instead of subscribing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from roundtable.server.sessions import SessionEndpoint
from roundtable.services.sessions import capabilities
from roundtable.services.sessions.adapters import bridge_argv
from tests.helpers import credential, sdk_http
from tests.sessions.helpers import bind

from .conftest import AGENT, Inbox, World, http_client, is_update, schedule_turn

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


def _bridge_env(**extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    env.update(extra)
    return env


async def test_turn_update_through_the_stdio_bridge(world: World) -> None:
    token = await credential(world.runtime, agent_id=AGENT)
    argv = [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", str(world.runtime.root), "--url", world.url]
    inbox = Inbox()
    uri = f"roundtable://turns/{world.run_id}"
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_bridge_env(ROUNDTABLE_MCP_TOKEN=token))
    async with Client(params, mode="legacy", message_handler=inbox.handler) as client:
        assert "agent_turn_request" in (client.instructions or "")
        await client.session.subscribe_resource(uri)
        request_id = await schedule_turn(world.runtime, world.run_id)
        note = await inbox.wait_for(is_update(uri, "agent.turn_scheduled"))
        assert any(e.get("request_event_id") == request_id for e in note.params.meta["roundtable/events"])
        prompts = (await client.session.list_prompts()).prompts
        assert len(prompts) == 6
        listed = (await client.session.list_resources()).resources
        assert any(r.uri == uri for r in listed)


@contextlib.asynccontextmanager
async def session_endpoint(world: World, agent: str, task_id: str, proposal_id: str = "") -> AsyncIterator[Any]:
    b = await bind(world.runtime, agent, world.run_id, task_id, proposal_id)
    directory = Path(tempfile.mkdtemp(prefix="rtms-", dir="/tmp"))
    endpoint = SessionEndpoint(world.runtime, b.cap.id, directory / "s.sock")
    await endpoint.start()
    try:
        yield b, directory / "s.sock"
    finally:
        await endpoint.close()
        shutil.rmtree(directory, ignore_errors=True)


def _direct(socket_path: Path, token: str) -> Any:
    http = httpx2.AsyncClient(
        transport=httpx2.AsyncHTTPTransport(uds=str(socket_path)),
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0, read=None),
    )
    return streamable_http_client("http://localhost/mcp", http_client=http)


async def test_session_sees_only_its_own_resources(world: World) -> None:
    async with session_endpoint(world, AGENT, world.task_id) as (b, sock):
        async with Client(_direct(sock, b.token), mode="legacy") as client:
            instructions = client.instructions or ""
            assert f"This session is {AGENT} on task {world.task_id}" in instructions
            uris = {r.uri for r in (await client.session.list_resources()).resources}
            assert f"roundtable://task/{world.task_id}" in uris
            assert f"roundtable://task/{world.other_task_id}" not in uris
            assert f"roundtable://turns/{world.run_id}" in uris
            assert f"roundtable://proposal/{world.proposal_id}" in uris
            own = json.loads(
                (await client.session.read_resource(f"roundtable://task/{world.task_id}")).contents[0].text
            )
            assert own["task"]["id"] == world.task_id
            for forbidden in (
                f"roundtable://task/{world.other_task_id}",  # another task
                "roundtable://file/secret.txt",  # outside its readable paths
                "roundtable://file/src/calc.py",  # readable, but not claimed yet
                "roundtable://run/RUN-other",  # another run
            ):
                with pytest.raises(MCPError):
                    await client.session.read_resource(forbidden)
                with pytest.raises(MCPError):
                    await client.session.subscribe_resource(forbidden)
            claimed = await client.session.call_tool(
                "resource_claim",
                {
                    "resource_type": "file",
                    "resource_id": "file:src/calc.py",
                    "path": "src/calc.py",
                    "claim_type": "read",
                },
            )
            assert not claimed.is_error, claimed.content
            source = (await client.session.read_resource("roundtable://file/src/calc.py")).contents[0]
            assert "def add" in source.text
            # Completion offers only what the session may read.
            done = await client.session.complete(
                types.PromptReference(name="implementer"), {"name": "task_id", "value": ""}
            )
            assert done.completion.values == [world.task_id]
            done = await client.session.complete(
                types.ResourceTemplateReference(uri="roundtable://file/{+path}"), {"name": "path", "value": ""}
            )
            assert done.completion.values == ["src/"]
            done = await client.session.complete(
                types.PromptReference(name="resume"), {"name": "agent_id", "value": ""}
            )
            assert done.completion.values == [AGENT]
            prompt = await client.session.get_prompt("implementer", {})
            assert world.task_id in prompt.messages[0].content.text
            with pytest.raises(MCPError):
                await client.session.get_prompt("implementer", {"task_id": world.other_task_id})
            with pytest.raises(MCPError):
                await client.session.get_prompt("resume", {"agent_id": "implementer-2"})
    async with world.runtime.db.read() as reader:
        denied = await reader.fetchall("SELECT payload_json FROM events WHERE type = 'capability.denied'")
    reasons = {json.loads(row[0])["reason_code"] for row in denied}
    assert {"identity_mismatch", "path_not_readable", "no_claim"} <= reasons


async def test_reviewer_session_reads_only_its_proposal(world: World) -> None:
    async with session_endpoint(world, "reviewer-1", world.task_id, world.proposal_id) as (b, sock):
        async with Client(_direct(sock, b.token), mode="legacy") as client:
            got = await client.session.read_resource(f"roundtable://proposal/{world.proposal_id}")
            assert json.loads(got.contents[0].text)["proposal"]["id"] == world.proposal_id
            from tests.sessions.helpers import add_proposal

            stranger = await add_proposal(world.runtime, world.other_task_id, agent="implementer-2")
            with pytest.raises(MCPError):
                await client.session.read_resource(f"roundtable://proposal/{stranger}")


async def test_session_turn_update_and_tools_list_changed(world: World) -> None:
    inbox = Inbox()
    uri = f"roundtable://turns/{world.run_id}"
    async with session_endpoint(world, AGENT, world.task_id) as (b, sock):
        argv = bridge_argv(str(sock), str(world.runtime.root))
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=_bridge_env(ROUNDTABLE_MCP_TOKEN=b.token))
        async with Client(params, mode="legacy", message_handler=inbox.handler) as client:
            assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
            tools = (await client.session.list_tools()).tools
            assert "proposal_create" in {t.name for t in tools}
            await client.session.subscribe_resource(uri)
            await schedule_turn(world.runtime, world.run_id)
            await inbox.wait_for(is_update(uri, "agent.turn_scheduled"))
            # Revoking the capability changes the tool set: the client is told, and lists nothing.
            async with world.runtime.db.write() as tx:
                await capabilities.revoke(tx, b.cap.id, "test")
            await inbox.wait_for(lambda i: isinstance(i, types.ToolListChangedNotification))
            assert (await client.session.list_tools()).tools == []
            # No more resource updates for a revoked session.
            seen = len(inbox.updates(uri))
            await schedule_turn(world.runtime, world.run_id, "implementer-2")
            await client.session.send_ping()
            assert len(inbox.updates(uri)) == seen


async def test_anonymous_principal_reads_but_never_writes(world: World) -> None:
    token = await credential(world.runtime)  # the project's unbound credential
    inbox = Inbox()
    headers = {"Authorization": f"Bearer {token}"}
    async with Client(sdk_http(world.url, headers), mode="legacy", message_handler=inbox.handler) as client:
        assert "an unbound one may only read" in (client.instructions or "")
        got = await client.session.read_resource(f"roundtable://task/{world.task_id}")
        assert json.loads(got.contents[0].text)["task"]["id"] == world.task_id
        refused = await client.session.call_tool("agent_turn_request", {"run_id": world.run_id, "reason_md": "x"})
        assert refused.is_error and "anonymous" in refused.content[0].text
        with pytest.raises(MCPError):  # the briefing needs a named agent
            await client.session.get_prompt("resume", {})
        await client.session.set_logging_level("debug")
        await client.session.subscribe_resource(f"roundtable://turns/{world.run_id}")
        await schedule_turn(world.runtime, world.run_id)
        await inbox.wait_for(is_update(f"roundtable://turns/{world.run_id}"))
        # Turn events concern agents, not an anonymous caller: no log message for them.
        assert not [i for i in inbox.items if isinstance(i, types.LoggingMessageNotification)]


async def test_modern_client_listens_for_the_turn(world: World) -> None:
    uri = f"roundtable://turns/{world.run_id}"
    async with http_client(world, mode="auto") as client:
        assert client.session.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[uri, "roundtable://task/T-nope"]) as sub:
            assert sub.honored.resource_subscriptions == [uri]
            await schedule_turn(world.runtime, world.run_id)
            event = await anext(aiter(sub))
            assert event.uri == uri


async def test_shutdown_ends_listen_streams_at_once(world: World) -> None:
    """A 2026-07-28 listen stream is a POST that never ends by itself: stopping the listener
    ends it gracefully instead of waiting out the drain timeout."""
    import time

    uri = f"roundtable://turns/{world.run_id}"
    http = world.owner.http
    assert http is not None
    elapsed: list[float] = []
    honoured: list[Any] = []
    with contextlib.suppress(Exception):  # the client's own teardown meets a stopped server
        async with http_client(world, mode="auto") as client:
            async with client.listen(resource_subscriptions=[uri]) as sub:
                honoured = list(sub.honored.resource_subscriptions or [])
                started = time.monotonic()
                await http.stop(drain_timeout=5.0)
                elapsed.append(time.monotonic() - started)
    assert honoured == [uri]
    assert elapsed and elapsed[0] < 2.5, elapsed


async def test_modern_listen_through_the_stdio_bridge(world: World) -> None:
    token = await credential(world.runtime, agent_id=AGENT)
    argv = [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", str(world.runtime.root), "--url", world.url]
    uri = f"roundtable://turns/{world.run_id}"
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_bridge_env(ROUNDTABLE_MCP_TOKEN=token))
    async with Client(params, mode="auto") as client:
        assert client.session.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[uri]) as sub:
            await schedule_turn(world.runtime, world.run_id)
            event = await asyncio.wait_for(anext(aiter(sub)), 10)
            assert event.uri == uri


async def test_both_endpoints_are_one_server(world: World) -> None:
    """The shared endpoint and a session endpoint are built by the one builder: the same name and
    the installed package's version, and the same answer to a tool nobody may call there."""
    import importlib.metadata

    version = importlib.metadata.version("roundtable")
    async with http_client(world) as shared, session_endpoint(world, AGENT, world.task_id) as (b, sock):
        async with Client(_direct(sock, b.token), mode="legacy") as session:
            for client in (shared, session):
                assert client.server_info is not None
                assert (client.server_info.name, client.server_info.version) == ("roundtable", version)
            errors = []
            for client in (shared, session):
                with pytest.raises(MCPError) as info:
                    await client.session.call_tool("no_such_tool", {})
                errors.append((info.value.error.code, str(info.value)))
            assert errors[0] == errors[1] == (types.INVALID_PARAMS, "unknown tool: no_such_tool")
            # An operator operation is no session's tool at all; over HTTP an agent is refused it.
            with pytest.raises(MCPError, match="unknown tool: patch_rollback"):
                await session.session.call_tool("patch_rollback", {"proposal_id": world.proposal_id})
            refused = await shared.session.call_tool("patch_rollback", {"proposal_id": world.proposal_id})
            assert refused.is_error and "operator" in refused.content[0].text


async def test_the_bridge_on_a_session_socket_makes_no_refused_request(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """The bridge's first request (its /healthz probe) carries the session's credential: a session
    endpoint refused it, and every launch logged "session endpoint refused a request"."""
    caplog.set_level("INFO", logger="roundtable")
    async with session_endpoint(world, AGENT, world.task_id) as (b, sock):
        argv = bridge_argv(str(sock), str(world.runtime.root))
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=_bridge_env(ROUNDTABLE_MCP_TOKEN=b.token))
        async with Client(params, mode="legacy") as client:
            assert "proposal_create" in {t.name for t in (await client.session.list_tools()).tools}
    refused = [r.getMessage() for r in caplog.records if "refused a request" in r.getMessage()]
    assert refused == []
