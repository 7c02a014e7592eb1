"""Streamable HTTP: both protocol eras through the SDK client, errors, security, health, tokens."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from roundtable.errors import ConfigError
from roundtable.owner import Owner
from roundtable.server.stdio import CREDENTIAL_HEADER, credential_id
from roundtable.tools import roles
from roundtable.tools.registry import get_registry
from tests.helpers import sdk_http
from tests.support.results import value_of

from .conftest import AGENT, event_count, make_registry

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_both_eras(owner: Owner, auth: dict[str, str], mode: str) -> None:
    async with Client(sdk_http(owner.http_url, auth), mode=mode) as client:
        session = client.session
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == sorted(
            ["test_echo", "test_empty", "test_fail", "test_crash", "test_write", "test_slow"]
        )
        echo = next(t for t in tools if t.name == "test_echo")
        assert echo.annotations is not None and echo.annotations.read_only_hint is True
        assert echo.output_schema is None  # tools/list leaves output schemas out (tools.schema.json has them)
        for name in ("test_echo", "test.echo"):
            result = await session.call_tool(name, {"text": "hi"})
            assert result.is_error is False
            assert value_of(result) == {
                "args": {"text": "hi"},
                "kind": "agent",
                "transport": "http",
                "agent_id": AGENT,
            }
            # An agent's result is one copy, the compact text a model reads: no structuredContent.
            assert result.structured_content is None and len(result.content) == 1
        bad = await session.call_tool("test_echo", {"bogus": 1})
        assert bad.is_error and "unknown argument bogus" in bad.content[0].text
        failed = await session.call_tool("test_fail", {})
        assert failed.is_error and failed.content[0].text == "refused: the thing is not allowed"
        crashed = await session.call_tool("test_crash", {})
        assert crashed.is_error and "secret" not in crashed.content[0].text
        with pytest.raises(MCPError) as info:
            await session.call_tool("no_such_tool", {})
        assert "unknown tool" in str(info.value)
        wrote = await session.call_tool("test_write", {"n": 3})
        assert value_of(wrote) == {"n": 3}
    assert await event_count(owner) == 1


async def test_real_registry_listing_and_dotted_style(owner: Owner, auth: dict[str, str]) -> None:
    owner.runtime.registry = get_registry()
    async with Client(sdk_http(owner.http_url, auth), mode="legacy") as client:
        names = [t.name for t in (await client.session.list_tools()).tools]
    # An implementer is shown what its role usefully calls (`tools/roles.py`): never the
    # operator's patch_apply and patch_reject.
    listed = roles.listed_for("implementer")
    assert listed is not None and "patch_apply" not in names and len(names) >= 15  # turn tools: in a run
    assert set(names) <= {name.replace(".", "_") for name in listed}
    assert names == sorted(names) and all("." not in n for n in names)
    object.__setattr__(owner.runtime.config.mcp, "tool_names", "dotted")
    async with Client(sdk_http(owner.http_url, auth), mode="legacy") as client:
        names = [t.name for t in (await client.session.list_tools()).tools]
    assert "proposal.create" in names and "proposal_create" not in names


async def test_stateful_session_header_and_delete(owner: Owner, auth: dict[str, str]) -> None:
    async with httpx2.AsyncClient(headers={**HEADERS, **auth}) as http:
        resp = await http.post(owner.http_url, json=INIT)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
        sid = resp.headers["mcp-session-id"]
        assert (
            await http.post(owner.http_url, json={"jsonrpc": "2.0", "method": "tools/list", "id": 2})
        ).status_code == 400
        gone = await http.post(
            owner.http_url, json={"jsonrpc": "2.0", "method": "tools/list", "id": 2}, headers={"mcp-session-id": "nope"}
        )
        assert gone.status_code == 404
        assert (await http.delete(owner.http_url, headers={"mcp-session-id": sid})).status_code == 200
        after = await http.post(
            owner.http_url, json={"jsonrpc": "2.0", "method": "tools/list", "id": 3}, headers={"mcp-session-id": sid}
        )
        assert after.status_code == 404


async def test_protocol_errors_stay_jsonrpc(owner: Owner, auth: dict[str, str]) -> None:
    async with httpx2.AsyncClient(headers={**HEADERS, **auth}) as http:
        resp = await http.post(owner.http_url, json=INIT)
        sid = resp.headers["mcp-session-id"]
        h = {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        resp = await http.post(owner.http_url, json={"jsonrpc": "2.0", "id": 5, "method": "nope/nope"}, headers=h)
        body = _sse_json(resp.text)
        assert body["error"]["code"] == -32601
        resp = await http.post(owner.http_url, content=b"{not json", headers=h)
        assert resp.status_code == 400 and "error" in resp.json()


def _sse_json(text: str) -> dict:
    for line in text.splitlines():
        if line.startswith("data:"):
            return json.loads(line[5:])
    return json.loads(text)


async def test_security_checks(owner: Owner, auth: dict[str, str]) -> None:
    before = await event_count(owner)
    port = owner.http_address.rsplit(":", 1)[1]
    async with httpx2.AsyncClient(headers=HEADERS) as http:
        # Authenticated by default, on loopback too: no credential, no answer.
        assert (await http.post(owner.http_url, json=INIT)).status_code == 401
        assert (await http.post(owner.http_url.replace("/mcp", "/healthz"))).status_code == 200
    async with httpx2.AsyncClient(headers={**HEADERS, **auth}) as http:
        assert (await http.post(owner.http_url, json=INIT, headers={"host": "evil.example"})).status_code == 421
        assert (
            await http.post(owner.http_url, json=INIT, headers={"origin": "http://evil.example"})
        ).status_code == 403
        ok = await http.post(owner.http_url, json=INIT, headers={"origin": f"http://localhost:{port}"})
        assert ok.status_code == 200
        assert (
            await http.post(owner.http_url, content=b"{}", headers={"content-type": "text/plain"})
        ).status_code == 400
        big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (5 * 1024 * 1024) + b'"}}'
        assert (await http.post(owner.http_url, content=big)).status_code == 413
        # Without a credential /healthz says only that this project's owner is ready; its root
        # and pid need a credential /mcp accepts. A credential's public id (which a bridge sends
        # to whatever answers, before the owner proved itself) is not one.
        health_url = owner.http_url.replace("/mcp", "/healthz")
        short = {"status": "ready", "project_id": owner.http.project_id}
        full = {**short, "root": owner.http.root, "pid": os.getpid()}
        health = await http.get(health_url)
        assert health.status_code == 200 and health.json() == full
        async with httpx2.AsyncClient() as anonymous:
            assert (await anonymous.get(health_url)).json() == short
            for wrong in ("Bearer rttok_nope", "Bearer", "Basic abc"):
                assert (await anonymous.get(health_url, headers={"authorization": wrong})).json() == short
            presented = next(v for k, v in auth.items() if k.lower() == "authorization").split(" ", 1)[1]
            named = {CREDENTIAL_HEADER: credential_id(hashlib.sha256(presented.encode()).hexdigest())}
            assert (await anonymous.get(health_url, headers=named)).json() == short
        assert health.headers["roundtable-project"] == owner.http.project_id
        assert (await http.get(owner.http_url.replace("/mcp", "/other"))).status_code == 404
    assert await event_count(owner) == before


async def test_bearer_token(project: Path, sockdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "s3cret-token-value"
    monkeypatch.setenv("ROUNDTABLE_MCP_TOKEN", token)
    logs: list[str] = []
    async with Owner(
        project, http_address="127.0.0.1:0", socket_path=sockdir / "s.sock", chair=False, log=logs.append
    ) as o:
        o.runtime.registry = make_registry()
        async with httpx2.AsyncClient(headers=HEADERS) as http:
            for given in (None, "Bearer wrong", f"Basic {token}", token, "Bearer", f"Bearer {token} x"):
                h = {"authorization": given} if given else {}
                resp = await http.post(o.http_url, json=INIT, headers=h)
                assert resp.status_code == 401 and token not in resp.text
            # The scheme is case-insensitive (RFC 9110).
            assert (
                await http.post(o.http_url, json=INIT, headers={"authorization": f"bEaReR {token}"})
            ).status_code == 200
            assert (await http.get(o.http_url.replace("/mcp", "/healthz"))).status_code == 200
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(o.http_url, http_client=client)) as c:
            r = await c.session.call_tool("test_echo", {})
            # The legacy shared token names nobody: anonymous, read-only tools only.
            assert (value_of(r)["kind"], value_of(r)["agent_id"]) == ("agent", "")
            refused = await c.session.call_tool("test_write", {"n": 1})
            assert refused.is_error and "anonymous" in refused.content[0].text
    assert all(token not in line for line in logs)


async def test_require_tokens_identity_from_token(project: Path, sockdir: Path) -> None:
    cfg = project / ".roundtable" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("require_tokens: false", "require_tokens: true"))
    async with Owner(project, http_address="127.0.0.1:0", socket_path=sockdir / "s.sock", chair=False) as o:
        o.runtime.registry = make_registry()
        async with o.runtime.db.write() as tx:
            for tid, tok, principal, agent in (
                ("t1", "op-token", "operator", None),
                ("t2", "ag-token", "agent", "implementer-1"),
            ):
                digest = hashlib.sha256(tok.encode()).hexdigest()
                await tx.insert(
                    "access_tokens", {"id": tid, "token_sha256": digest, "principal": principal, "agent_id": agent}
                )
        async with httpx2.AsyncClient(headers=HEADERS) as http:
            assert (await http.post(o.http_url, json=INIT)).status_code == 401
            assert (
                await http.post(o.http_url, json=INIT, headers={"authorization": "Bearer unknown"})
            ).status_code == 401
        for tok, kind, agent in (("op-token", "operator", ""), ("ag-token", "agent", "implementer-1")):
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tok}"})
            async with Client(streamable_http_client(o.http_url, http_client=client), mode="legacy") as c:
                r = await c.session.call_tool("test_echo", {})
                assert (value_of(r)["kind"], value_of(r)["agent_id"]) == (kind, agent)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("0.0.0.0:0", "non-loopback MCP HTTP requires TLS"),
        (":7117", "non-loopback MCP HTTP requires TLS"),
        ("127.0.0.1", "invalid MCP HTTP address"),
        ("127.0.0.1:99999", "invalid MCP HTTP address"),
    ],
)
async def test_listener_validation_refuses_to_start(project: Path, sockdir: Path, address: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        async with Owner(project, http_address=address, socket_path=sockdir / "s.sock", chair=False):
            pass
    # Nothing left behind: the lock is free and the socket is gone.
    async with Owner(project, http=False, socket_path=sockdir / "s.sock", chair=False) as o:
        assert o.socket_path is not None and o.socket_path.exists()
