"""The per-session MCP endpoint over a private Unix socket, driven by the official SDK client."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from roundtable.runtime import Runtime
from roundtable.server.sessions import SessionEndpoint
from roundtable.services.sessions import capabilities
from roundtable.services.sessions import records as sessions
from roundtable.store.db import ACTING
from tests.sessions.helpers import Bound, add_proposal, bind, make_task
from tests.support.results import value_of

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def endpoint(runtime: Runtime, b: Bound) -> AsyncIterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="rt-test-"))
    os.chmod(directory, 0o700)
    ep = SessionEndpoint(runtime, b.cap.id, directory / "s.sock")
    await ep.start()
    try:
        yield directory / "s.sock"
    finally:
        await ep.close()
        os.rmdir(directory)


@asynccontextmanager
async def client(sock: Path, token: str) -> AsyncIterator[Any]:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                transport=httpx2.AsyncHTTPTransport(uds=str(sock)), headers={"Authorization": f"Bearer {token}"}
            )
        )
        c = await stack.enter_async_context(
            Client(streamable_http_client("http://localhost/mcp", http_client=http), mode="legacy")
        )
        yield c.session


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def test_socket_is_private_and_requires_this_sessions_token(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    other = await bind(runtime, "implementer-1", run_id, task_id)
    async with endpoint(runtime, b) as sock:
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        async with httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(sock))) as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": f"Bearer {other.token}"}):
                resp = await http.post("http://localhost/mcp", json=body, headers=headers)
                assert resp.status_code == 401
                assert resp.text == "unauthorized"


async def test_tools_list_is_filtered_by_role_and_calls_are_checked(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    pid = await add_proposal(runtime, task_id)
    b = await bind(runtime, "reviewer-1", run_id, task_id, pid)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert "vote_cast" in listed and "table_watch" in listed and "table_get_state" not in listed
        assert "proposal_create" not in listed and "patch_apply" not in listed and "test_run" not in listed
        assert "agent_id" not in (listed["vote_cast"].input_schema.get("required") or [])
        ok = await s.call_tool("task_get", {})
        assert not ok.is_error, text_of(ok)
        assert value_of(ok)["task"]["id"] == task_id
        denied = await s.call_tool("proposal_create", {"task_id": task_id})
        assert denied.is_error
        assert text_of(denied) == "operation proposal.create is not permitted for role reviewer"
        mismatch = await s.call_tool("resource_claim_status", {"agent_id": "implementer-1"})
        assert mismatch.is_error and "argument agent_id does not match" in text_of(mismatch)
        # Revocation refuses the very next call and empties the list.
        async with runtime.db.write() as tx:
            await capabilities.revoke(tx, b.cap.id, "operator")
        after = await s.call_tool("task_get", {})
        assert after.is_error and text_of(after) == "capability expired or revoked"
        assert (await s.list_tools()).tools == []
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT payload_json FROM events WHERE type = 'capability.denied' ORDER BY id")
    reasons = [json.loads(row[0])["reason_code"] for row in rows]
    assert reasons == ["tool_not_permitted", "identity_mismatch"]
    assert all(b.token not in row[0] and task_id not in row[0] for row in rows)


async def test_ended_session_is_refused(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        assert not (await s.call_tool("table_get_state", {})).is_error
        async with runtime.db.write() as tx:
            await sessions.end(tx, b.session_id)
        res = await s.call_tool("table_get_state", {})
        assert res.is_error and text_of(res) == "session is not active"


async def test_denials_are_recorded_as_the_sessions_agent_whoever_launched_it(runtime: Runtime) -> None:
    """A launch over the legacy socket runs as the operator; the endpoint it starts must not
    lend that authority to the session's records: a denial names the agent and the session."""
    run_id, task_id = await make_task(runtime)
    pid = await add_proposal(runtime, task_id)
    b = await bind(runtime, "reviewer-1", run_id, task_id, pid)
    launched_by = ACTING.set(("operator", "socket"))
    try:
        async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
            denied = await s.call_tool("proposal_create", {"task_id": task_id})
            assert denied.is_error
    finally:
        ACTING.reset(launched_by)
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT principal, transport, actor_id FROM events WHERE type = 'capability.denied'")
    assert [tuple(row) for row in rows] == [("agent:reviewer-1", "session", "reviewer-1")]


async def test_a_session_in_a_workspace_is_listed_what_its_own_editor_does_not_do(runtime: Runtime) -> None:
    """An implementer session in its workspace edits, reads and searches with its own tools: it is
    listed as `?tools=workspace` is, yet may still call the rest of its capability's set."""
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id, workspace="/w/ws")
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        listed = await s.list_tools()
        # What a harness hands its model: each tool's name, description and input schema.
        size = len(
            json.dumps(
                [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in listed.tools]
            )
        )
        names = {t.name for t in listed.tools}
        assert "workspace_propose" in names and "agent_turn_complete" in names
        assert not names & {"proposal_create", "repo_read_file", "resource_claim", "patch_validate"}
        assert size <= 3_490, size  # 3,450 now (propose takes its test); 8,026 bytes when it was listed its role's whole list
        # Not listed is not refused: the capability's set decides.
        assert "table_get_state" not in names and "proposal_get" in names
        assert not (await s.call_tool("table_get_state", {})).is_error


async def test_each_session_role_is_listed_what_it_uses_within_its_size(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    pid = await add_proposal(runtime, task_id)
    limits = {"implementer-1": (7_380, ""), "reviewer-1": (4_140, pid)}  # 7,307 and 4,092 now
    for agent, (limit, proposal) in limits.items():
        b = (
            await bind(runtime, agent, run_id, task_id, proposal)
            if proposal
            else await bind(runtime, agent, run_id, task_id)
        )
        async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
            listed = await s.list_tools()
        size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
        assert size <= limit, (agent, size)
        names = {t.name for t in listed.tools}
        # The role's allowed tools cut to what it uses: a reviewer has no repo_symbols or memory_record.
        assert "repo_symbols" not in names and "memory_record" not in names


async def test_a_planner_session_is_listed_what_planning_needs(runtime: Runtime) -> None:
    """The architect's planning session is shown the tools that turn a goal into tasks, including
    the one that closes its own planning task; not the review tools its shared-endpoint listing has."""
    run_id, task_id = await make_task(runtime, agent="architect-1")
    b = await bind(runtime, "architect-1", run_id, task_id)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        names = {t.name for t in (await s.list_tools()).tools}
    assert {"task_create", "task_list", "task_update_status", "memory_record", "table_watch"} <= names
    assert not names & {"vote_cast", "proposal_comment", "proposal_create"}
