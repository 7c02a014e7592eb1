"""The stdio bridge as a subprocess against a real owner, driven by the SDK's own stdio client."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path

import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from roundtable.owner import Owner
from tests.support.results import value_of

from .conftest import AGENT, event_count, make_registry

pytestmark = pytest.mark.anyio
BRIDGE = [sys.executable, "-m", "roundtable", "mcp", "stdio"]


def params(o: Owner, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "roundtable", "mcp", "stdio", "--root", str(o.root), "--url", o.http_url, *extra],
    )


def sessions(o: Owner) -> int:
    return len(o.http.open_sessions())


async def test_sdk_stdio_client_through_bridge(owner: Owner, auth: dict[str, str]) -> None:
    # `auth` gives implementer-1 its credential file; `--agent` makes the bridge present it.
    async with stdio_client(params(owner, "--agent", AGENT)) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "roundtable"
        names = [t.name for t in (await session.list_tools()).tools]
        assert "test_echo" in names
        ok = await session.call_tool("test.echo", {"text": "via stdio"})
        assert value_of(ok)["args"] == {"text": "via stdio"}
        assert value_of(ok)["transport"] == "http"
        failed = await session.call_tool("test_fail", {})
        assert failed.is_error and failed.content[0].text == "refused: the thing is not allowed"
        many = await asyncio.gather(*(session.call_tool("test_write", {"n": i}) for i in range(5)))
        assert sorted(value_of(r)["n"] for r in many) == list(range(5))
        assert sessions(owner) == 1
    assert await event_count(owner) == 5
    for _ in range(50):  # DELETE on EOF frees the session at once
        if sessions(owner) == 0:
            break
        await asyncio.sleep(0.05)
    assert sessions(owner) == 0


async def test_sdk_client_auto_mode_over_bridge(owner: Owner) -> None:
    async with Client(stdio_client(params(owner))) as client:
        result = await client.session.call_tool("test_echo", {"n": 2})
        assert value_of(result)["args"] == {"n": 2}


async def _spawn(*args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *BRIDGE,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


async def _send(proc: asyncio.subprocess.Process, *messages: dict) -> None:
    assert proc.stdin is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    await proc.stdin.drain()


async def _recv(proc: asyncio.subprocess.Process) -> dict:
    assert proc.stdout is not None
    return json.loads(await asyncio.wait_for(proc.stdout.readline(), 20))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_owner_not_running_exits_1_with_reason(project: Path) -> None:
    proc = await _spawn("--root", str(project), "--url", f"http://127.0.0.1:{_free_port()}/mcp")
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1 and out == b""
    lines = err.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("roundtable mcp stdio: coordinator endpoint unavailable: ")
    assert f"start one with: roundtable start --root {project}" in lines[0]


async def test_token_only_to_loopback_or_https(project: Path) -> None:
    env = {**os.environ, "ROUNDTABLE_MCP_TOKEN": "tok-123"}
    proc = await _spawn("--root", str(project), "--url", "http://example.com/mcp", env=env)
    _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1 and b"requires HTTPS" in err and b"tok-123" not in err
    proc = await _spawn("--root", str(project), "--url", "http://127.0.0.1:1/mcp?x=1")
    _out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 1 and b"must be an http(s) URL" in err


async def test_bridge_survives_owner_restart(project: Path, sockdir: Path) -> None:
    address = f"127.0.0.1:{_free_port()}"
    first = Owner(project, http_address=address, socket_path=sockdir / "s.sock", chair=False)
    await first.__aenter__()
    first.runtime.registry = make_registry()
    proc = await _spawn("--root", str(project), "--url", f"http://{address}/mcp")
    try:
        await _send(proc, INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert (await _recv(proc))["result"]["protocolVersion"] == "2025-11-25"
        await _send(
            proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_echo", "arguments": {}}}
        )
        assert (await _recv(proc))["id"] == 2
        await first.__aexit__(None, None, None)
        async with Owner(project, http_address=address, socket_path=sockdir / "s.sock", chair=False) as second:
            second.runtime.registry = make_registry()
            await _send(
                proc,
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "test_echo", "arguments": {"n": 7}},
                },
            )
            got = await _recv(proc)
            assert got["id"] == 3 and value_of(got["result"])["args"] == {"n": 7}
            await _send(proc, {"jsonrpc": "2.0", "id": 4, "method": "nope"}, {"not": "rpc"})
            assert (await _recv(proc))["error"]["code"] == -32601
            assert proc.stdin is not None
            proc.stdin.write(b"{broken\n")
            await proc.stdin.drain()
            assert (await _recv(proc))["error"]["code"] == -32700
            proc.stdin.close()
            assert await asyncio.wait_for(proc.wait(), 20) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_bridge_answers_tools_list_right_after_initialize(owner: Owner) -> None:
    """Spawn → first tools/list answer, pipelined after initialize as harnesses send it. How long
    that takes is measured by `python -m bench startup`, not here."""
    proc = await _spawn("--root", str(owner.root), "--url", owner.http_url)
    await _send(
        proc,
        INIT,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    )
    await _recv(proc)
    listed = await _recv(proc)
    # The project credential is unbound: it is shown the read-only tools, the only ones it may call.
    assert listed["id"] == 2 and [t["name"] for t in listed["result"]["tools"]] == ["test_echo"]
    assert proc.stdin is not None
    proc.stdin.close()
    assert await proc.wait() == 0
