"""Audiences: one field of each registered operation decides who may call it, on every transport.

An agent (HTTP, agent token) may not run operator operations; no transport can even name an
internal one (the Chair's, the supervisor's, the dispatcher's) — to outsiders it does not exist;
the operator's CLI writes go through `Runtime.call` and are audited with principal and transport.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from roundtable.errors import PermissionDenied, ToolError
from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.server.socket_client import call_socket
from roundtable.tools.context import CHAIR, DISPATCHER, OPERATOR, SUPERVISOR, Caller
from roundtable.tools.registry import get_registry
from tests.helpers import agent

from .conftest import client, snapshot

pytestmark = pytest.mark.anyio


def _internal_names() -> list[str]:
    names = [s.name for s in get_registry().for_audience("internal")]
    assert names, "the Chair, supervisor and dispatcher register internal operations"
    return names


def test_internal_callers_are_their_own_principals() -> None:
    assert [c.principal for c in (CHAIR, SUPERVISOR, DISPATCHER)] == ["chair", "supervisor", "dispatcher"]
    assert all(c.is_internal and c.is_operator for c in (CHAIR, SUPERVISOR, DISPATCHER))
    assert not OPERATOR.is_internal and OPERATOR.principal == "operator"
    assert SUPERVISOR.actor == "supervisor" and CHAIR.actor == "chair-1"


def test_no_internal_or_operator_operation_is_advertised() -> None:
    advertised = {s.name for s in get_registry().exposed()}
    hidden = {s.name for s in get_registry().for_audience("internal", "operator")}
    assert hidden and not advertised & hidden


@pytest.mark.parametrize("caller", [OPERATOR, agent("implementer-1"), Caller("agent", "http")])
async def test_an_internal_operation_does_not_exist_for_outsiders(runtime: Runtime, caller: Caller) -> None:
    before = await snapshot(runtime)
    for name in _internal_names():
        with pytest.raises(ToolError, match=re.escape(f"tool not implemented: {name}")):
            await runtime.call(name, {}, caller)
    assert await snapshot(runtime) == before


async def test_an_agent_may_not_run_operator_operations(runtime: Runtime) -> None:
    before = await snapshot(runtime)
    for name in ("claim.revoke", "token.create", "patch.rollback"):
        with pytest.raises(PermissionDenied, match="reserved for the operator"):
            await runtime.call(name, {"claim_id": "C-1", "principal": "agent", "transaction_id": "X"}, agent())
    assert await snapshot(runtime) == before


async def test_session_operations_need_a_capability(runtime: Runtime) -> None:
    with pytest.raises(PermissionDenied, match="only available to capability sessions"):
        await runtime.call("test.evidence.submit", {}, agent())
    with pytest.raises(PermissionDenied, match="only available to capability sessions"):
        await runtime.call("test.evidence.submit", {}, OPERATOR)


async def test_operator_tokens_are_audited_operations(runtime: Runtime) -> None:
    created = await runtime.call("token.create", {"principal": "agent", "agent_id": "implementer-1"})
    assert created["secret"] and "token_sha256" in created["token"]
    listed = await runtime.call("token.list", {})
    assert [t["id"] for t in listed["tokens"]] == [created["token"]["id"]]
    assert all("token_sha256" not in t for t in listed["tokens"])
    revoked = await runtime.call("token.revoke", {"token_id": created["token"]["id"]})
    assert revoked["token"]["revoked_at"]
    with pytest.raises(ToolError, match="must be one of agent, operator"):
        await runtime.call("token.create", {"principal": "root"})


async def test_over_http_an_agent_cannot_reach_operator_or_internal_operations(owner: Owner) -> None:
    assert owner.runtime is not None
    before = await snapshot(owner.runtime)
    async with client(owner, "implementer-1") as c:
        for name in ("claim.revoke", "token.create"):
            result = await c.call_tool(name, {"claim_id": "C-1", "principal": "agent"})
            assert result.is_error and "reserved for the operator" in str(result.content), name
        for name in _internal_names()[:3]:
            with pytest.raises(MCPError, match=re.escape(f"unknown tool: {name}")):
                await c.call_tool(name, {})
    assert await snapshot(owner.runtime) == before


async def test_over_the_legacy_socket_internal_operations_do_not_exist(owner: Owner) -> None:
    assert owner.socket_path is not None
    for name in _internal_names()[:3]:
        reply = await anyio.to_thread.run_sync(call_socket, owner.socket_path, name, {})
        assert reply["ok"] is False and "tool not implemented" in reply["error"]


async def test_cli_revoke_is_an_operation_with_principal_and_transport(owner: Owner, repo: Path) -> None:
    runtime = owner.runtime
    assert runtime is not None
    task = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]
    claimed = await runtime.call(
        "resource.claim",
        {"resource_type": "file", "path": "src/app.py", "claim_type": "write", "task_id": task["id"]},
        agent("implementer-1"),
    )
    claim_id = claimed["claim"]["id"]
    result = await runtime.call("claim.revoke", {"claim_id": claim_id, "reason": "stuck"})
    assert result["claim"]["status"] == "revoked" and result["changed"] is True
    async with runtime.db.read() as r:
        row = await r.fetchone("SELECT principal, transport, payload_json FROM events WHERE type = 'claim.revoked'")
    assert row is not None and (row["principal"], row["transport"]) == ("operator", "cli")
    assert json.loads(row["payload_json"])["claim_id"] == claim_id


async def test_an_operator_token_creates_and_ends_runs_over_mcp(owner: Owner) -> None:
    from mcp import Client

    from tests.helpers import sdk_http

    assert owner.runtime is not None
    secret = (await owner.runtime.call("token.create", {"principal": "operator"}))["secret"]
    operator = Client(sdk_http(owner.http_url, {"Authorization": f"Bearer {secret}"}), mode="legacy")
    async with operator as c:
        made = await c.call_tool("run_create", {"goal": "from MCP", "run_id": "RUN-mcp"})
        assert not made.is_error, made.content
        ended = await c.call_tool("run.end", {"run_id": "RUN-mcp", "status": "blocked"})
        assert not ended.is_error, ended.content
    async with client(owner, "implementer-1") as c:
        refused = await c.call_tool("run_create", {"goal": "not mine"})
        assert refused.is_error and "reserved for the operator" in str(refused.content)
    async with owner.runtime.db.read() as r:
        rows = await r.fetchall("SELECT type, principal, transport FROM events WHERE run_id = 'RUN-mcp' ORDER BY id")
        status = await r.scalar("SELECT status FROM runs WHERE id = 'RUN-mcp'")
    assert status == "blocked" and [row[0] for row in rows] == ["run.created", "run.ended"]
    assert {row[1] for row in rows} == {"operator"} and {row[2] for row in rows} != {"cli"}
