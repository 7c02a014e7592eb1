"""Session isolation: the launcher choice, and what a session under bubblewrap can and cannot do.

The sandbox tests are skipped (with the reason) where bubblewrap is missing or cannot start a
sandbox; the selection tests run everywhere.
"""

from __future__ import annotations

import asyncio
import errno
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError, ValidationError
from roundtable.runtime import Runtime
from roundtable.services import adapters, isolation, sessions
from roundtable.supervisor import Supervisor, start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio

BWRAP = shutil.which("bwrap")
BWRAP_PROBLEM = asyncio.run(isolation.bwrap_problem(BWRAP))
needs_bwrap = pytest.mark.skipif(bool(BWRAP_PROBLEM), reason=f"bubblewrap not usable here: {BWRAP_PROBLEM}")

# Runs inside the session: report what it can see and do, then wait for the test's go-ahead
# (a file the test drops into the private HOME) so the test can inspect the live process tree.
PROBE = r"""
import json, os, socket, sys, time
root = os.getcwd()
out = {"cwd": root, "pid": os.getpid()}
out["read"] = open(os.path.join(root, "src", "app.py")).read()
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return __import__("errno").errorcode[exc.errno]
out["write_new"] = attempt(lambda: open(os.path.join(root, "new.txt"), "w").write("x"))
out["write_existing"] = attempt(lambda: open(os.path.join(root, "src", "app.py"), "a").write("x"))
state = os.path.join(root, ".roundtable")
out["state_listing"] = sorted(os.listdir(state)) if os.path.isdir(state) else None
out["db_visible"] = os.path.exists(os.path.join(state, "roundtable.db"))
out["write_state"] = attempt(lambda: open(os.path.join(state, "x"), "w").write("x"))
home = os.environ["HOME"]
out["write_home"] = attempt(lambda: open(os.path.join(home, "note"), "w").write("x"))
out["outside_visible"] = os.path.exists(sys.argv[1])
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


async def test_mode_from_the_environment_is_validated() -> None:
    assert isolation.requested_mode({}) == "auto"
    assert isolation.requested_mode({isolation.ENV_VAR: " Subprocess "}) == "subprocess"
    with pytest.raises(ValidationError, match="ROUNDTABLE_SESSION_ISOLATION must be one of auto, bwrap, subprocess"):
        isolation.requested_mode({isolation.ENV_VAR: "docker"})
    forced = await isolation.choose("subprocess")
    assert forced == isolation.Launcher("subprocess", "ROUNDTABLE_SESSION_ISOLATION=subprocess")
    assert forced.wrap(["a", "b"], root=Path("/r"), session_dir=Path("/s"), path="") == ["a", "b"]


async def test_auto_prefers_bwrap_and_says_why_not_oci() -> None:
    auto = await isolation.choose("auto")
    assert auto.reason.startswith("oci runtime not used: ")
    if BWRAP_PROBLEM:
        assert auto.kind == "subprocess" and BWRAP_PROBLEM in auto.reason
        with pytest.raises(ValidationError, match="ROUNDTABLE_SESSION_ISOLATION=bwrap but"):
            await isolation.choose("bwrap")
    else:
        assert auto.kind == "bwrap" and auto.executable == BWRAP


async def test_forced_subprocess_is_recorded(runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(isolation.ENV_VAR, "subprocess")
    use_python_c(monkeypatch)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        res = await sup.launch(
            agent_id="implementer-1", task_id=task_id, adapter="scripted", extra_args=("import os; print(os.getpid())",)
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
    monkeypatch.setenv(isolation.ENV_VAR, "chroot")
    _run_id, task_id = await make_task(runtime)
    base = tmp_path / "s"
    base.mkdir()
    sup = Supervisor(runtime, base_dir=base)
    with pytest.raises(ValidationError, match="must be one of auto, bwrap, subprocess"):
        await sup.launch(agent_id="implementer-1", task_id=task_id)
    async with runtime.db.read() as r:
        assert await sessions.list_sessions(r) == []
        assert await r.scalar("SELECT count(*) FROM session_capabilities") == 0
    assert list(base.iterdir()) == []


def test_bwrap_argv_order_and_no_environment() -> None:
    argv = isolation.bwrap_prefix("/usr/bin/bwrap", root=Path("/"), session_dir=Path("/run/x"))
    assert argv[:4] == ["/usr/bin/bwrap", "--ro-bind", "/", "/"]
    assert argv[-1] == "--" and "--clearenv" not in argv and "--setenv" not in argv
    assert argv.index("--tmpfs") < argv.index("--bind")  # the private /tmp first, then the session dir
    assert {"--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"} <= set(argv)


# --- under bubblewrap -----------------------------------------------------------------------------


@needs_bwrap
async def test_session_under_bwrap(runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(isolation.ENV_VAR, raising=False)
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
            agent_id="implementer-1", task_id=task_id, adapter="scripted", extra_args=(PROBE, str(outside))
        )
        session_id = res["session"]["id"]
        live = sup.live[session_id]
        seen = await probe_line(sup, session_id)
        assert live.process is not None
        tree = proc_tree(live.process.pid)
        assert len(tree) >= 3  # bwrap, its PID-namespace init, the adapter
        token = environ_of(tree[0])["ROUNDTABLE_MCP_TOKEN"]
        assert token.startswith("rtcap_")
        for pid in tree:
            assert token not in cmdline(pid)
        inner = environ_of(tree[-1])
        assert inner["ROUNDTABLE_MCP_TOKEN"] == token and "SECRET_THING" not in inner
        (live.directory / "home" / "go").write_text("")
        await sup.wait(session_id, 30)
    finally:
        await sup.close()

    assert seen["cwd"] == str(root)
    assert seen["pid"] < 10  # its own PID namespace
    assert seen["read"] == "print('v1')\n"
    assert seen["write_new"] == "EROFS" and seen["write_existing"] == "EROFS"
    assert seen["state_listing"] == [] and seen["db_visible"] is False
    assert seen["write_state"] in ("EROFS", "EACCES")
    assert seen["write_home"] == "ok"
    assert seen["outside_visible"] is False
    assert seen["socket_status"] == "HTTP/1.1 200 OK"
    # The repository and the owner's state are untouched; the owner kept working throughout.
    assert not (root / "new.txt").exists()
    assert (root / "src" / "app.py").read_text() == "print('v1')\n"
    assert (root / ".roundtable" / "roundtable.db").exists()
    async with runtime.db.read() as r:
        session = await sessions.get(r, session_id)
    meta = sessions.metadata(session)
    assert meta["isolation"] == "bwrap"
    assert meta["isolation_reason"].startswith("oci runtime not used: ")
    assert session.status == "ended"
    assert "rtcap_" not in sup.log_path(session_id).read_text()


@needs_bwrap
async def test_missing_program_under_bwrap_fails_the_launch(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(isolation.ENV_VAR, raising=False)
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command="no-such-harness-xyz", supports_mcp=True),
    )
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        with pytest.raises(ToolError, match=f"launch scripted failed: {errno.errorcode[errno.ENOENT]}|No such file"):
            await sup.launch(agent_id="implementer-1", task_id=task_id, adapter="scripted")
    finally:
        await sup.close()
    async with runtime.db.read() as r:
        [session] = await sessions.list_sessions(r)
    assert session.status == "failed"
    assert session_dirs(tmp_path) == []


@needs_bwrap
def test_a_harness_installed_below_tmp_runs_under_bwrap(tmp_path: Path) -> None:
    """An npm prefix in /tmp (CI's habit) stays visible inside the private /tmp, read-only; the
    rest of /tmp (here a sibling secret) does not."""
    import subprocess
    import tempfile

    prefix = Path(tempfile.mkdtemp(prefix="rt-npm-", dir="/tmp"))
    secret = Path(tempfile.mkdtemp(prefix="rt-other-", dir="/tmp")) / "secret.txt"
    try:
        (prefix / "lib").mkdir()
        (prefix / "lib" / "cli.sh").write_text(f"#!/bin/sh\ntest -e {secret} && echo SEEN; echo harness-ran\n")
        (prefix / "lib" / "cli.sh").chmod(0o755)
        (prefix / "bin").mkdir()
        (prefix / "bin" / "harness").symlink_to(prefix / "lib" / "cli.sh")
        secret.write_text("x")
        launcher = isolation.Launcher("bwrap", "", shutil.which("bwrap") or "bwrap")
        session_dir = tmp_path / "session"
        session_dir.mkdir()
        path = f"{prefix / 'bin'}:/usr/bin:/bin"
        argv = launcher.wrap(["harness"], root=tmp_path, session_dir=session_dir, path=path)
        assert ["--ro-bind", str(prefix), str(prefix)] == argv[
            argv.index(str(prefix)) - 1 : argv.index(str(prefix)) + 2
        ]
        done = subprocess.run(argv, env={"PATH": path}, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["harness-ran"]
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
        shutil.rmtree(secret.parent, ignore_errors=True)
