"""Out-of-range input on streamable HTTP, as raw JSON-RPC bodies on an
initialised session with an operator bearer token: a 5,000-digit integer or nesting past the
parser's limit is a JSON-RPC parse error (HTTP 400); NaN, ±Infinity, 10^30 and 5,000-character
paths reach the tool and come back as a tool error naming the argument — never "internal
error", never a dropped connection — and the database is unchanged. The in-process fuzz
(tests/reliability) covers every tool and argument; this checks the HTTP framing of the same
inputs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from roundtable.owner import Owner
from roundtable.services.sessions import tokens as token_service
from roundtable.tools.registry import INT_MAX

from .conftest import event_count

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bounds", "version": "1"}},
}


@pytest.fixture
async def http_owner(project: Path, sockdir: Path) -> AsyncIterator[Owner]:
    """An owner with the real registry (HTTP and socket, no Chair)."""
    async with Owner(project, http_address="127.0.0.1:0", socket_path=sockdir / "rt.sock", chair=False) as owner:
        yield owner


@pytest.fixture
async def session(http_owner: Owner) -> AsyncIterator[httpx2.AsyncClient]:
    """An httpx2 client on an initialised MCP session, authenticated as the operator."""
    async with http_owner.runtime.db.write(tool="test") as tx:
        _record, token = await token_service.create(tx, token_service.TokenArgs(principal="operator"))
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {token}",
    }
    async with httpx2.AsyncClient(headers=headers, timeout=15) as http:
        resp = await http.post(http_owner.http_url, json=INIT)
        assert resp.status_code == 200, resp.text[:300]
        http.headers["mcp-session-id"] = resp.headers["mcp-session-id"]
        http.headers["mcp-protocol-version"] = "2025-06-18"
        await http.post(http_owner.http_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield http


def _body(resp: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a reply (an SSE `data:` line or plain JSON)."""
    for line in resp.text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[5:]))
    return dict(json.loads(resp.text))


def _call(tool: str, args_json: str) -> bytes:
    return f'{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{tool}","arguments":{args_json}}}}}'.encode()


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        pytest.param(
            _call("table.watch", '{"after_event_id":' + "9" * 5000 + "}"), "number out of range", id="5000-digits"
        ),
        pytest.param(_call("task.create", '{"title":' + "[" * 300 + "]" * 300 + "}"), "recursion limit", id="deep"),
    ],
)
async def test_parser_refusals_are_jsonrpc_parse_errors(
    http_owner: Owner, session: httpx2.AsyncClient, body: bytes, fragment: str
) -> None:
    before = await event_count(http_owner)
    resp = await session.post(http_owner.http_url, content=body)
    assert resp.status_code == 400
    error = _body(resp)["error"]
    assert error["code"] == -32700 and fragment in error["message"]
    assert await event_count(http_owner) == before


@pytest.mark.parametrize(
    ("tool", "args_json", "message"),
    [
        pytest.param(
            "task.create",
            '{"title":"t","body_md":"b","priority":1' + "0" * 30 + "}",
            f"task.create: argument priority must be at most {INT_MAX}",
            id="priority-1e30",
        ),
        pytest.param(
            "table.watch",
            '{"after_event_id":' + "9" * 4300 + "}",
            f"table.watch: argument after_event_id must be at most {INT_MAX}",
            id="4300-digits",
        ),
        pytest.param(
            "table.watch", '{"after_event_id":NaN}', "table.watch: argument after_event_id must be an integer", id="NaN"
        ),
        pytest.param(
            "vote.cast",
            '{"proposal_id":"P","agent_id":"a","vote":"approve","reason_md":"r","confidence":Infinity}',
            "vote.cast: argument confidence must be a finite number",
            id="Infinity",
        ),
        pytest.param(
            "vote.cast",
            '{"proposal_id":"P","agent_id":"a","vote":"approve","reason_md":"r","confidence":-1e999}',
            "vote.cast: argument confidence must be a finite number",
            id="-1e999",
        ),
        pytest.param(
            "repo.read_file",
            json.dumps({"path": "a/" * 2500}),
            "repo.read_file: argument path is too long: 5000 characters, at most 4096 allowed",
            id="5000-char-path",
        ),
    ],
)
async def test_out_of_range_arguments_are_tool_errors(
    http_owner: Owner, session: httpx2.AsyncClient, tool: str, args_json: str, message: str
) -> None:
    before = await event_count(http_owner)
    resp = await session.post(http_owner.http_url, content=_call(tool, args_json))
    assert resp.status_code == 200
    result = _body(resp)["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == message
    assert await event_count(http_owner) == before
    # The session still serves an ordinary call.
    ok = _body(await session.post(http_owner.http_url, content=_call("table.get_state", "{}")))["result"]
    assert ok.get("isError") is not True
