"""Authenticated by default: who can reach the shared HTTP endpoint.

Each test reproduces an attack that worked before and checks it now fails safely: a client with no
credential on loopback, a process running as another uid, a session capability replayed on the
shared endpoint, a sandboxed session POSTing to it, a token for an unregistered agent, a revoked
token. Real owner, real HTTP on 127.0.0.1, the official MCP SDK client.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from roundtable import credentials
from roundtable.owner import Owner
from roundtable.services.coordination.runs import create_run
from roundtable.services.sessions import capabilities, tokens
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from roundtable.tools.context import OPERATOR
from tests.auth.conftest import client, snapshot
from tests.helpers import sdk_http, stored_auth

pytestmark = pytest.mark.anyio

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


async def post_init(url: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    async with httpx2.AsyncClient(headers={**HEADERS, **(headers or {})}, timeout=10) as http:
        return await http.post(url, json=INIT)


async def test_no_credential_is_refused_on_loopback(owner: Owner) -> None:
    before = await snapshot(owner.runtime)
    resp = await post_init(owner.http_url)
    assert resp.status_code == 401
    assert "roundtable connect --agent" in resp.text and resp.headers["www-authenticate"].startswith("Bearer")
    for bad in ("Bearer rttok_not-a-real-token", "Basic dXNlcjpwYXNz", "Bearer"):
        assert (await post_init(owner.http_url, {"authorization": bad})).status_code == 401
    # The SDK client without a credential cannot even initialise.
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own transport error types
        async with Client(owner.http_url, mode="legacy") as c:
            await c.session.list_tools()
    # /healthz stays open (it says nothing but the status and the project id).
    async with httpx2.AsyncClient() as http:
        assert (await http.get(owner.http_url.replace("/mcp", "/healthz"))).status_code == 200
    assert await snapshot(owner.runtime) == before


async def test_state_directory_and_credentials_are_private(owner: Owner) -> None:
    state = owner.root / ".roundtable"
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    base = state / "credentials"
    assert stat.S_IMODE(base.stat().st_mode) == 0o700
    assert stat.S_IMODE((base / "agents").stat().st_mode) == 0o700
    files = [base / "project.token", *sorted((base / "agents").iterdir())]
    assert {f.name for f in files} >= {"project.token", "implementer-1.token", "reviewer-1.token"}
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    # Only hashes are stored: no credential appears in the database file.
    db = (state / "roundtable.db").read_bytes()
    for f in files:
        assert f.read_text().strip().encode() not in db


async def test_owner_start_keeps_credentials_and_replaces_revoked_ones(repo: Path, sockdir: Path) -> None:
    async with Owner(repo, http=False, socket=False, chair=False) as o:
        first = credentials.read_credential(repo, agent_id="reviewer-1")
        async with o.runtime.db.write() as tx:
            await tx.execute("UPDATE access_tokens SET revoked_at = 'now' WHERE agent_id = 'reviewer-1'")
    async with Owner(repo, http=False, socket=False, chair=False):
        second = credentials.read_credential(repo, agent_id="reviewer-1")
        same = credentials.read_credential(repo, agent_id="implementer-1")
    async with Owner(repo, http=False, socket=False, chair=False):
        assert credentials.read_credential(repo, agent_id="implementer-1") == same
    assert first and second and first != second


async def test_project_credential_and_shared_token_are_anonymous(owner: Owner, monkeypatch: pytest.MonkeyPatch) -> None:
    before = await snapshot(owner.runtime)
    token = credentials.read_credential(owner.root)
    assert token
    async with Client(sdk_http(owner.http_url, {"Authorization": f"Bearer {token}"}), mode="legacy") as c:
        listed = await c.session.call_tool("task_list", {})
        assert listed.is_error is False
        refused = await c.session.call_tool("task_create", {"title": "t", "body_md": "b"})
        assert refused.is_error
        text = refused.content[0].text
        assert "anonymous" in text and "roundtable connect --agent ID" in text
        assert "roundtable tokens create --agent ID" in text
    assert await snapshot(owner.runtime) == before


async def test_capability_token_is_refused_on_the_shared_endpoint(owner: Owner) -> None:
    rt = owner.runtime
    run = await create_run(rt, "goal")
    task = (await rt.call("task.create", {"title": "t", "body_md": "b", "assigned_agent_id": "implementer-1"}))["task"]
    async with rt.db.write() as tx:
        from roundtable.services.sessions import records as sessions

        await sessions.register(
            tx,
            sessions.SessionDraft(
                id="S-1", agent_id="implementer-1", run_id=run.id, adapter="scripted", working_directory="/w"
            ),
        )
        cap_token, _cap = await capabilities.issue(
            tx, session_id="S-1", agent_id="implementer-1", run_id=run.id, role="implementer", task_id=task["id"]
        )
    resp = await post_init(owner.http_url, {"authorization": f"Bearer {cap_token}"})
    assert resp.status_code == 401 and cap_token not in resp.text


async def test_unregistered_agent_token_and_revoked_token(owner: Owner) -> None:
    rt = owner.runtime
    async with rt.db.write() as tx:
        _ghost, ghost_token = await tokens.create(tx, tokens.TokenArgs(principal="agent", agent_id="ghost-9"))
        record, token = await tokens.create(tx, tokens.TokenArgs(principal="agent", agent_id="reviewer-1"))
    assert (await post_init(owner.http_url, {"authorization": f"Bearer {ghost_token}"})).status_code == 401
    assert (await post_init(owner.http_url, {"authorization": f"Bearer {token}"})).status_code == 200
    # Disabling the agent refuses its token at once; so does revoking the token.
    async with rt.db.write() as tx:
        await tx.update("agents", {"id": "reviewer-1"}, {"is_enabled": 0})
    assert (await post_init(owner.http_url, {"authorization": f"Bearer {token}"})).status_code == 401
    async with rt.db.write() as tx:
        await tx.update("agents", {"id": "reviewer-1"}, {"is_enabled": 1})
        await tokens.revoke(tx, record.id)
    assert (await post_init(owner.http_url, {"authorization": f"Bearer {token}"})).status_code == 401


async def test_operator_token_acts_as_operator(owner: Owner) -> None:
    async with owner.runtime.db.write() as tx:
        _record, token = await tokens.create(tx, tokens.TokenArgs(principal="operator"))
    async with Client(sdk_http(owner.http_url, {"Authorization": f"Bearer {token}"}), mode="legacy") as c:
        out = await c.session.call_tool(
            "decision_record", {"decision": "d", "rationale_md": "r", "decided_by": "operator"}
        )
        assert out.is_error is False
    async with owner.runtime.db.read() as r:
        row = await r.fetchone("SELECT principal, transport FROM events WHERE type = 'decision.recorded'")
    assert row is not None and (row["principal"], row["transport"]) == ("operator", "http")


async def test_opt_out_serves_anonymous_read_only_and_warns(repo: Path, sockdir: Path) -> None:
    cfg = repo / ".roundtable" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("  auth: token\n", "  auth: none\n"))
    lines: list[str] = []
    async with Owner(
        repo, http_address="127.0.0.1:0", socket_path=sockdir / "o.sock", chair=False, log=lines.append
    ) as o:
        assert any("WARNING: mcp.auth is none" in line for line in lines)
        before = await snapshot(o.runtime)
        async with Client(o.http_url, mode="legacy") as c:
            assert (await c.session.call_tool("task_list", {})).is_error is False
            refused = await c.session.call_tool("task_create", {"title": "t", "body_md": "b"})
            assert refused.is_error and "anonymous" in refused.content[0].text
        # A wrong credential is still refused (never silently downgraded to anonymous).
        assert (await post_init(o.http_url, {"authorization": "Bearer nope"})).status_code == 401
        # An agent credential still binds its agent.
        async with client(o, "implementer-1") as c:
            made = await c.session.call_tool("task_create", {"title": "t", "body_md": "b"})
            assert made.is_error is False
        assert len((await snapshot(o.runtime))["tasks"]) == len(before["tasks"]) + 1


# --- another local user -----------------------------------------------------------------------------

OTHER_UID_CLIENT = r"""
import json, socket, sys, urllib.request, urllib.error
url, cred, sock = sys.argv[1], sys.argv[2], sys.argv[3]
out = {}
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b'{"tool":"task.create","args":{"title":"t","body_md":"b"}}\n')
    out["socket"] = s.recv(4096).decode() or "closed"
except OSError as exc:
    out["socket"] = type(exc).__name__
try:
    open(cred).read()
    out["read_credential"] = "ok"
except OSError as exc:
    out["read_credential"] = type(exc).__name__
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "nobody", "version": "0"}}}).encode()
req = urllib.request.Request(url, data=body, method="POST", headers={
    "content-type": "application/json", "accept": "application/json, text/event-stream"})
try:
    out["status"] = urllib.request.urlopen(req, timeout=10).status
except urllib.error.HTTPError as exc:
    out["status"] = exc.code
print(json.dumps(out))
"""


def world_executable(path: str) -> bool:
    """Whether any user may run `path` (every directory on the way searchable by others)."""
    real = Path(os.path.realpath(path))
    parts = [real, *real.parents]
    return all(p.stat().st_mode & 0o001 for p in parts)


def other_uid_python() -> str | None:
    for candidate in ("/usr/bin/python3", shutil.which("python3"), sys.executable):
        if candidate and os.path.exists(candidate) and world_executable(candidate):
            return candidate
    return None


def write_client(directory: Path) -> Path:
    script = directory / "client.py"
    script.write_text(OTHER_UID_CLIENT)
    directory.chmod(0o755)
    script.chmod(0o644)
    return script


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid (setpriv) needs root; CI runs as root")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is not installed")
async def test_another_local_user_is_refused(owner: Owner) -> None:
    python = other_uid_python()
    if python is None:
        pytest.skip("no Python interpreter that another uid may execute")
    scratch = Path(tempfile.mkdtemp(prefix="rtu", dir="/tmp"))
    script = write_client(scratch)
    cred = credentials.credential_path(owner.root, agent_id="implementer-1")
    before = await snapshot(owner.runtime)
    proc = await asyncio.create_subprocess_exec(
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        python,
        str(script),
        owner.http_url,
        str(cred),
        str(owner.socket_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out.decode().strip().splitlines()[-1])
    # It can neither read a credential (.roundtable/ is 0700), nor reach the operator's socket,
    # nor call over HTTP without a credential.
    assert seen == {"socket": "PermissionError", "read_credential": "PermissionError", "status": 401}
    assert await snapshot(owner.runtime) == before


# --- a sandboxed session ----------------------------------------------------------------------------


SESSION_PROBE = r"""
import json, os, socket, sys
port = int(sys.argv[1])
def post(auth):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "task_create", "arguments": {"title": "escaped", "body_md": "from the sandbox"}}})
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
    except ConnectionRefusedError:  # the session's own loopback: the owner's port is not there
        return "unreachable"
    s.sendall((
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + str(port) + "\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
        + ("Authorization: Bearer " + auth + "\r\n" if auth else "")
        + "Content-Length: " + str(len(body)) + "\r\n\r\n" + body).encode())
    line = s.makefile("rb").readline().decode().strip()
    s.close()
    return line
creds = os.path.join(sys.argv[2], ".roundtable", "credentials")
print("PROBE " + json.dumps({
    "with_capability": post(os.environ["ROUNDTABLE_MCP_TOKEN"]),
    "without": post(""),
    "credentials_visible": os.path.exists(creds),
}), flush=True)
"""


async def test_a_sandboxed_session_cannot_use_the_shared_endpoint(
    kind: str, owner: Owner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable.services.sessions import adapters

    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    rt = owner.runtime
    await create_run(rt, "goal")
    task = (
        await rt.call(
            "task.create",
            {"title": "t", "body_md": "b", "assigned_agent_id": "implementer-1", "readable_paths": ["src"]},
            OPERATOR,
        )
    )["task"]
    port = owner.http_address.rsplit(":", 1)[1]
    sup = await start_supervisor(rt, base_dir=tmp_path)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task["id"], adapter="scripted"),
            extra_args=(SESSION_PROBE, port, str(rt.root.resolve())),
        )
        session_id = res["session"]["id"]
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    log_text = sup.log_path(session_id).read_text()
    line = next(x for x in log_text.splitlines() if x.startswith("PROBE "))
    seen = json.loads(line[len("PROBE ") :])
    # A sandboxed session has a loopback of its own (no host network): the shared endpoint,
    # which would refuse the capability anyway, is not even reachable from it.
    assert seen["with_capability"] == seen["without"] == "unreachable", seen
    assert seen["credentials_visible"] is False
    async with rt.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM tasks WHERE title = 'escaped'") == 0
        meta = await r.scalar("SELECT metadata_json FROM agent_sessions WHERE id = ?", (session_id,))
    assert json.loads(meta)["isolation"] == kind
    # Session logs are private.
    assert stat.S_IMODE(sup.log_path(session_id).stat().st_mode) == 0o600


def test_stored_auth_reads_the_owner_written_file(repo: Path) -> None:
    # A sanity check of the helper the suite uses: nothing there before an owner ran.
    with pytest.raises(AssertionError, match="no credential"):
        stored_auth(repo)
    assert subprocess.run(["true"]).returncode == 0
