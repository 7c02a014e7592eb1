"""Start-up of the stdio bridge: no owner, an owner of another project, refused credentials.

Each case ends with exit status 1, exactly one stderr line that names the problem and its fix,
and a JSON-RPC error for any request the harness had already sent — and never a credential sent
to an owner that is not this project's.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from roundtable import credentials
from roundtable.owner import Owner
from roundtable.server.http import HttpError
from tests.support.owners import INIT, Bridge, call, free_port
from tests.support.projects import initialised_project

pytestmark = pytest.mark.anyio
PREFIX = "roundtable mcp stdio: "


async def test_no_owner_fails_fast_and_answers_the_pending_request(project: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    started = time.monotonic()
    bridge = await Bridge.spawn("--root", str(project), "--url", url)
    await bridge.send(INIT)  # the harness speaks first, as Claude Code and the Inspector do
    status, out, err = await bridge.close()
    elapsed = time.monotonic() - started
    assert status == 1
    assert elapsed < 10.0  # fails fast (~1 s idle) rather than waiting out a harness's 30 s connect timeout
    lines = err.decode().splitlines()
    assert len(lines) == 1
    assert lines[0] == (
        f"{PREFIX}coordinator endpoint unavailable: no roundtable owner answers at {url} for project "
        f"{project}; start one with: roundtable start --root {project}"
    )
    frames = out.splitlines()
    assert len(frames) == 1
    reply = json.loads(frames[0])
    assert reply["id"] == 1 and reply["error"]["code"] == -32000
    assert "start one with: roundtable start" in reply["error"]["message"]


async def test_no_owner_and_silent_client_exits_within_a_second_or_so(project: Path) -> None:
    started = time.monotonic()
    bridge = await Bridge.spawn("--root", str(project), "--url", f"http://127.0.0.1:{free_port()}/mcp")
    status = await asyncio.wait_for(bridge.proc.wait(), 20)  # stdin left open: the harness waits
    assert bridge.proc.stdout is not None and bridge.proc.stderr is not None
    out, err = await bridge.proc.stdout.read(), await bridge.proc.stderr.read()
    assert status == 1 and out == b"" and len(err.splitlines()) == 1
    assert time.monotonic() - started < 3.0


async def test_owner_of_another_project_is_refused_naming_its_project(tmp_path: Path, project: Path) -> None:
    other = initialised_project(tmp_path / "other")
    credentials.write_credential(project, "rt_secret_of_project_b_0123456789")
    async with Owner(other, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        bridge = await Bridge.spawn("--root", str(project), "--url", owner.http_url)
        await bridge.send(INIT)
        status, out, err = await bridge.close()
    assert status == 1
    lines = err.decode().splitlines()
    assert len(lines) == 1
    # Another project's owner tells its root only to its own callers: the bridge names its id.
    theirs = credentials.read_project_id(other)
    assert f"serves another project (project id {theirs}), not {project}" in lines[0]
    assert "mcp.http_address" in lines[0] and str(other) not in lines[0]
    assert json.loads(out.splitlines()[0])["id"] == 1
    assert b"rt_secret" not in err + out


async def _recording_server(body: dict[str, object]) -> tuple[asyncio.Server, list[bytes]]:
    """A plain HTTP listener that answers every request with `body` and keeps what it was sent:
    what an unrelated program (or an owner squatting on the port) would see."""
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head)
        data = json.dumps(body).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n")
        writer.write(b"content-length: %d\r\n\r\n%s" % (len(data), data))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, seen


@pytest.mark.parametrize("who", ["another project", "not roundtable", "squatter repeating our id and root"])
async def test_no_credential_reaches_a_stranger(project: Path, who: str) -> None:
    credentials.write_credential(project, "rt_secret_of_this_project_0123456789")
    body: dict[str, object] = {
        "another project": {"status": "ready", "project_id": "rtp_" + "0" * 32, "root": "/somewhere/else", "pid": 1},
        "not roundtable": {"status": "ok"},
        "squatter repeating our id and root": {
            "status": "ready",
            "project_id": credentials.read_project_id(project),
            "root": str(project),
            "pid": 1,
        },
    }[who]
    server, seen = await _recording_server(body)
    port = server.sockets[0].getsockname()[1]
    async with server:
        bridge = await Bridge.spawn("--root", str(project), "--url", f"http://127.0.0.1:{port}/mcp")
        await bridge.send(INIT, call(2, "task_list"))
        status, out, err = await bridge.close()
    assert status == 1 and len(err.splitlines()) == 1
    assert [json.loads(f)["id"] for f in out.splitlines()] in ([1, 2], [1])
    assert seen and all(head.startswith(b"GET /healthz ") for head in seen)
    assert not any(b"authorization" in head.lower() or b"rt_secret" in head for head in seen)
    if who.startswith("squatter"):
        assert b"does not know the project's credential" in err and b"was not sent" in err


async def test_refused_credential_names_the_file_and_the_fix(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUNDTABLE_MCP_TOKEN", "rt_the_owner_shared_token_0123456789")
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        monkeypatch.delenv("ROUNDTABLE_MCP_TOKEN")
        env = {k: v for k, v in os.environ.items() if k != "ROUNDTABLE_MCP_TOKEN"}
        bridge = await Bridge.spawn("--root", str(project), "--url", owner.http_url, "--agent", "ghost", env=env)
        await bridge.send(INIT)
        status, out, err = await bridge.close()
    assert status == 1
    lines = err.decode().splitlines()
    assert len(lines) == 1
    path = credentials.credential_path(project, agent_id="ghost")
    assert f"refused agent ghost's credential ({path}, which does not exist)" in lines[0]
    assert "fix: roundtable connect HARNESS --agent ghost --force" in lines[0]
    reply = json.loads(out.splitlines()[0])
    assert reply["id"] == 1 and "refused" in reply["error"]["message"]


async def test_agent_credential_file_and_environment_token(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "rt_the_owner_shared_token_0123456789"
    monkeypatch.setenv("ROUNDTABLE_MCP_TOKEN", token)
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        monkeypatch.delenv("ROUNDTABLE_MCP_TOKEN")
        credentials.write_credential(project, token, agent_id="implementer-1")
        env = {k: v for k, v in os.environ.items() if k != "ROUNDTABLE_MCP_TOKEN"}
        bridge = await Bridge.spawn(
            "--root", str(project), "--url", owner.http_url, "--agent", "implementer-1", env=env
        )
        assert (await bridge.handshake())["result"]["serverInfo"]["name"] == "roundtable"
        assert (await bridge.close())[0] == 0
        # An explicit ROUNDTABLE_MCP_TOKEN wins over the file (here: a wrong one, so refused).
        credentials.write_credential(project, token)
        bridge = await Bridge.spawn(
            "--root", str(project), "--url", owner.http_url, env={**env, "ROUNDTABLE_MCP_TOKEN": "rt_wrong_0123456789"}
        )
        await bridge.send(INIT)
        status, _out, err = await bridge.close()
        assert status == 1 and b"the token in ROUNDTABLE_MCP_TOKEN" in err and b"rt_wrong" not in err


async def test_invalid_agent_id_is_refused_before_anything(project: Path) -> None:
    bridge = await Bridge.spawn("--root", str(project), "--agent", "../../etc/passwd")
    status, out, err = await bridge.close()
    assert status == 1 and out == b"" and b"invalid agent id" in err


async def test_port_held_by_another_owner_is_named(tmp_path: Path, project: Path) -> None:
    other = initialised_project(tmp_path / "other")
    async with Owner(other, http_address="127.0.0.1:0", socket=False, chair=False) as first:
        with pytest.raises(HttpError) as info:
            async with Owner(project, http_address=first.http_address, socket=False, chair=False):
                pass
    text = str(info.value)
    # Another project's owner tells its root and pid only to that project's callers.
    held = f"{first.http_address} is held by a roundtable owner (project {credentials.read_project_id(other)})"
    assert held in text
    assert "mcp.http_address" in text


async def test_owner_creates_a_missing_project_id(project: Path) -> None:
    credentials.project_id_path(project).unlink()
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        assert credentials.read_project_id(project) == owner.http.project_id
    bridge_id = credentials.read_project_id(project)
    assert bridge_id is not None and bridge_id.startswith("rtp_")


async def test_session_socket_missing_fails_fast(project: Path, tmp_path: Path) -> None:
    sock = tmp_path / "gone.sock"
    started = time.monotonic()
    bridge = await Bridge.spawn("--socket", str(sock), env={**os.environ, "ROUNDTABLE_MCP_TOKEN": "rtcap_x"})
    await bridge.send(INIT)
    status, out, err = await bridge.close()
    assert status == 1 and time.monotonic() - started < 3.0
    assert err.decode().splitlines() == [
        f"{PREFIX}coordinator endpoint unavailable: nothing answers at the session socket {sock}"
    ]
    assert json.loads(out)["id"] == 1 and b"rtcap_x" not in out + err


async def test_a_flood_of_bad_requests_logs_one_line(project: Path) -> None:
    from tests.support.owners import OwnerChild

    owner = await OwnerChild(project, free_port()).start()
    try:
        for _ in range(500):
            reader, writer = await asyncio.open_connection("127.0.0.1", owner.port)
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
            await reader.read()  # answered and closed: its log line, if any, is written
            writer.close()
    finally:
        await owner.stop()
    text = b"".join(owner.output).decode()
    assert text.count("Invalid HTTP request received.") == 1, text[-3000:]
    assert len(text) < 4096


async def test_a_copied_project_is_another_project(tmp_path: Path, project: Path) -> None:
    """`cp -r` carries `.roundtable/project_id` and the credentials along; the owner's root, which
    it tells a caller with a credential, still tells them apart."""
    import shutil

    copy = tmp_path / "copy"
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        await asyncio.to_thread(shutil.copytree, project, copy)  # with the credentials the owner wrote
        assert credentials.read_project_id(copy) == credentials.read_project_id(project)
        assert credentials.read_credential(copy) == credentials.read_credential(project) is not None
        bridge = await Bridge.spawn("--root", str(copy), "--url", owner.http_url)
        await bridge.send(INIT)
        status, _out, err = await bridge.close()
        assert status == 1 and f"serves project {project}, not {copy}" in err.decode()
        bridge = await Bridge.spawn("--root", str(project), "--url", owner.http_url)
        assert "result" in await bridge.handshake()
        assert (await bridge.close())[0] == 0


async def test_a_credential_the_owner_does_not_know_is_never_sent(project: Path) -> None:
    credentials.write_credential(project, "rt_revoked_or_foreign_0123456789", agent_id="implementer-1")
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        credentials.write_credential(project, "rt_revoked_or_foreign_0123456789", agent_id="implementer-1")
        bridge = await Bridge.spawn("--root", str(project), "--url", owner.http_url, "--agent", "implementer-1")
        await bridge.send(INIT)
        status, out, err = await bridge.close()
    assert status == 1
    assert (
        f"does not know agent implementer-1's credential ({credentials.credential_path(project, agent_id='implementer-1')})"
        in err.decode()
    )
    assert "fix: roundtable connect HARNESS --agent implementer-1 --force" in err.decode()
    assert json.loads(out)["id"] == 1
