"""Session isolation: the launcher choice, and what a session in the default-deny sandbox can
and cannot do — under bubblewrap and under the Landlock launcher (each skipped, with the reason,
only where it cannot start a sandbox; CI makes bubblewrap available).
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError, ValidationError
from roundtable.runtime import Runtime
from roundtable.sandbox import runner
from roundtable.sandbox import sessions as session_sandbox
from roundtable.services.sessions import adapters
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import Supervisor, start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio
ENV_VAR = session_sandbox.ENV_VAR


# Runs inside the session: report what it can see and do, then wait for the test's go-ahead
# (a file the test drops into the private HOME) so the test can inspect the live process tree.
PROBE = r"""
import json, os, socket, sys, time
project, outside = sys.argv[1], sys.argv[2]
out = {"cwd": os.getcwd(), "pid": os.getpid(), "uid": os.getuid()}
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return __import__("errno").errorcode[exc.errno]
out["project_visible"] = os.path.exists(project)
out["read_project"] = attempt(lambda: open(os.path.join(project, "src", "app.py")).read())
out["state_visible"] = os.path.exists(os.path.join(project, ".roundtable"))
out["write_project"] = attempt(lambda: open(os.path.join(project, "new.txt"), "w").write("x"))
home = os.environ["HOME"]
out["write_home"] = attempt(lambda: open(os.path.join(home, "note"), "w").write("x"))
out["write_cwd"] = attempt(lambda: open("cwd-note", "w").write("x"))
out["outside_visible"] = os.path.exists(outside)
out["root_listing"] = sorted(os.listdir("/"))
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["ROUNDTABLE_MCP_SOCKET"])
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}})
s.sendall((
    "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
    "Authorization: Bearer " + os.environ["ROUNDTABLE_MCP_TOKEN"] + "\r\n"
    "Content-Length: " + str(len(body)) + "\r\n\r\n" + body).encode())
out["socket_status"] = s.makefile("rb").readline().decode().strip()
s.close()
print("PROBE " + json.dumps(out), flush=True)
for _ in range(400):
    if os.path.exists(os.path.join(home, "go")):
        break
    time.sleep(0.05)
"""


def use_python_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in adapter runs `python -c <extra arg>`: a tiny MCP-capable adapter command."""
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )


def allow_unsandboxed(runtime: Runtime) -> None:
    config = runtime.config
    runtime.config = config.model_copy(
        update={"sessions": config.sessions.model_copy(update={"allow_unsandboxed": True})}
    )


def proc_tree(pid: int) -> list[int]:
    out = [pid]
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        out.extend(proc_tree(int(child)))
    return out


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")


def session_dirs(base: Path) -> list[Path]:
    return [p for p in base.iterdir() if p.name.startswith("rt-")]


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


async def probe_line(sup: Supervisor, session_id: str) -> dict[str, Any]:
    for _ in range(300):
        path = sup.log_path(session_id)
        if path.exists():
            for line in path.read_text().splitlines():
                if line.startswith("PROBE "):
                    return dict(json.loads(line[len("PROBE ") :]))
        await asyncio.sleep(0.05)
    raise AssertionError(sup.log_path(session_id).read_text() if sup.log_path(session_id).exists() else "no log")


# --- selection ------------------------------------------------------------------------------------


async def test_mode_comes_from_the_environment_then_the_config() -> None:
    assert session_sandbox.requested_mode("auto", {}) == "auto"
    assert session_sandbox.requested_mode("landlock", {}) == "landlock"
    assert session_sandbox.requested_mode("auto", {ENV_VAR: " Subprocess "}) == "subprocess"
    with pytest.raises(
        ValueError, match="ROUNDTABLE_SESSION_ISOLATION must be one of auto, bwrap, landlock, subprocess"
    ):
        session_sandbox.requested_mode("auto", {ENV_VAR: "docker"})


async def test_subprocess_needs_the_operators_opt_in() -> None:
    refused = await session_sandbox.choose("subprocess", allow_unsandboxed=False)
    assert not refused.usable and "sessions.allow_unsandboxed: true" in refused.refusal()
    allowed = await session_sandbox.choose("subprocess", allow_unsandboxed=True)
    assert allowed.kind == "subprocess" and allowed.sandbox is None
    assert "UNSANDBOXED" in allowed.describe()


async def test_auto_prefers_bubblewrap_then_landlock() -> None:
    auto = await session_sandbox.choose("auto", allow_unsandboxed=False)
    bwrap_problem = await runner.problem("bwrap")
    landlock_problem = await runner.problem("landlock")
    if not bwrap_problem:
        assert auto.kind == "bwrap"
    elif not landlock_problem:
        assert auto.kind == "landlock" and bwrap_problem in auto.reason
    else:
        assert auto.kind == "none" and landlock_problem in auto.reason


async def test_no_sandbox_and_no_opt_in_refuses_the_launch_and_records_only_the_refusal(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable.services.views.models import attention
    from roundtable.services.views.overview import load_overview

    monkeypatch.setenv(ENV_VAR, "subprocess")  # stands for "no sandbox works here"
    run_id, task_id = await make_task(runtime)
    base = tmp_path / "s"
    base.mkdir()
    sup = Supervisor(runtime, base_dir=base)
    with pytest.raises(ToolError, match="launch refused: no sandbox works for agent sessions here"):
        await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id))
    async with runtime.db.read() as r:
        assert await sessions.list_sessions(r) == []
        assert await r.scalar("SELECT count(*) FROM session_capabilities") == 0
        refusal = await r.fetchone(
            "SELECT run_id, actor_id, payload_json FROM events WHERE type = 'session.launch_refused'"
        )
        overview = await load_overview(r, run_id, runtime.config)
    assert list(base.iterdir()) == []
    assert refusal is not None and refusal["run_id"] == run_id and refusal["actor_id"] == "supervisor"
    payload = json.loads(refusal["payload_json"])
    assert payload["agent_id"] == "implementer-1" and payload["task_id"] == task_id
    assert "no sandbox works for agent sessions here" in payload["reason"]
    # The console's "needs you" list shows it with its reason, like a failed session.
    [item] = [i for i in attention(overview) if i.kind == "launch"]
    assert item.text.startswith("launch refused: implementer-1 for ") and "no sandbox works" in item.text
    assert item.pane == "agents" and item.row == "implementer-1"


async def test_forced_subprocess_with_the_opt_in_is_recorded(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "subprocess")
    allow_unsandboxed(runtime)
    use_python_c(monkeypatch)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"),
            extra_args=("import os; print(os.getpid())",),
        )
        session_id = res["session"]["id"]
        await sup.wait(session_id, 30)
    finally:
        await sup.close()
    async with runtime.db.read() as r:
        meta = sessions.metadata(await sessions.get(r, session_id))
    assert meta["isolation"] == "subprocess"
    assert meta["isolation_reason"] == "ROUNDTABLE_SESSION_ISOLATION=subprocess"
    # A plain subprocess is not in a PID namespace: its pid is the one the supervisor saw.
    assert sup.log_path(session_id).read_text().split() == [str(res["pid"])]


async def test_bad_mode_refuses_the_launch_and_records_nothing(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "chroot")
    _run_id, task_id = await make_task(runtime)
    base = tmp_path / "s"
    base.mkdir()
    sup = Supervisor(runtime, base_dir=base)
    with pytest.raises(ValidationError, match="must be one of auto, bwrap, landlock, subprocess"):
        await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id))
    async with runtime.db.read() as r:
        assert await sessions.list_sessions(r) == []
        assert await r.scalar("SELECT count(*) FROM session_capabilities") == 0
    assert list(base.iterdir()) == []


# --- in the sandbox -------------------------------------------------------------------------------


async def test_a_session_sees_only_what_it_was_given(
    kind: str, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_THING", "leak-me")
    use_python_c(monkeypatch)
    root = runtime.root.resolve()
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('v1')\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("operator's temp file\n")
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"),
            extra_args=(PROBE, str(root), str(outside)),
        )
        session_id = res["session"]["id"]
        live = sup.live[session_id]
        seen = await probe_line(sup, session_id)
        assert live.process is not None
        tree = proc_tree(live.process.pid)
        assert len(tree) >= 3  # the launcher, the namespace's init, the adapter
        token = environ_of(tree[-1])["ROUNDTABLE_MCP_TOKEN"]
        assert token.startswith("rtcap_")
        for pid in tree:
            assert token not in cmdline(pid)
        assert "SECRET_THING" not in environ_of(tree[-1])
        (live.directory / "home" / "go").write_text("")
        await sup.wait(session_id, 30)
    finally:
        await sup.close()

    assert seen["cwd"] == str(live.directory.resolve() / "home")
    assert seen["pid"] < 10  # its own PID namespace
    assert seen["uid"] == (runner.SANDBOX_UID if os.getuid() == 0 else os.getuid())
    assert seen["project_visible"] is False and seen["state_visible"] is False
    assert seen["read_project"] == "ENOENT" and seen["write_project"] in ("ENOENT", "EROFS", "EACCES")
    assert seen["write_home"] == "ok" and seen["write_cwd"] == "ok"
    assert seen["outside_visible"] is False
    assert (
        "home" not in seen["root_listing"] and "var" not in seen["root_listing"] and "run" not in seen["root_listing"]
    )
    assert seen["socket_status"] == "HTTP/1.1 200 OK"
    assert not (root / "new.txt").exists()
    assert (root / "src" / "app.py").read_text() == "print('v1')\n"
    async with runtime.db.read() as r:
        session = await sessions.get(r, session_id)
    meta = sessions.metadata(session)
    assert meta["isolation"] == kind
    assert session.status == "ended"
    assert "rtcap_" not in sup.log_path(session_id).read_text()


async def test_a_missing_program_fails_the_launch(
    kind: str, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command="no-such-harness-xyz", supports_mcp=True),
    )
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        with pytest.raises(ToolError, match=f"launch scripted failed: {errno.errorcode[errno.ENOENT]}|No such file"):
            await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"))
    finally:
        await sup.close()
    async with runtime.db.read() as r:
        [session] = await sessions.list_sessions(r)
    assert session.status == "failed"
    assert session_dirs(tmp_path) == []


def test_a_harness_installed_in_an_npm_prefix_is_granted_with_its_tree(tmp_path: Path) -> None:
    """A harness from an npm prefix (CI installs one under /tmp) is readable inside with its
    `node_modules` tree; a sibling of that prefix is not granted."""
    prefix = tmp_path / "npm"
    package = prefix / "node_modules" / "harness"
    package.mkdir(parents=True)
    (package / "cli.sh").write_text("#!/bin/sh\necho harness-ran\n")
    (package / "cli.sh").chmod(0o755)
    (prefix / "node_modules" / ".bin").mkdir()
    (prefix / "node_modules" / ".bin" / "harness").symlink_to(package / "cli.sh")
    (tmp_path / "sibling").mkdir()
    found = runner.program_paths("harness", str(prefix / "node_modules" / ".bin"))
    assert str((prefix / "node_modules").resolve()) in found
    spec = runner.build_spec(
        "landlock",
        ["harness"],
        tmp_path / "sibling",
        root=tmp_path / "p",
        profile="session",
        search_path=str(prefix / "node_modules" / ".bin"),
    )
    granted = {m.dst for m in spec.mounts if m.op in ("ro", "rw")}
    assert str((prefix / "node_modules").resolve()) in granted and spec.network is False
    assert str(tmp_path.resolve()) not in granted
