"""The process lock, the owner's life cycle and the `start` / `mcp serve` / `mcp call --socket` CLIs."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roundtable.errors import LockError
from roundtable.owner import Owner, acquire_lock

pytestmark = pytest.mark.anyio
ROUNDTABLE = [sys.executable, "-m", "roundtable"]


async def test_lock_is_exclusive_names_pid_and_is_released(project: Path) -> None:
    with acquire_lock(project) as path:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        assert path.read_text().strip() == str(os.getpid())
        with pytest.raises(LockError, match=rf"already owned by another process \(pid {os.getpid()}\)"):
            with acquire_lock(project / "." / ".." / project.name):
                pass
    with acquire_lock(project):
        pass


async def test_lock_refuses_non_regular_path(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("x")
    lock = project / ".roundtable" / "owner.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    with pytest.raises(LockError, match="refusing non-regular project lock path"):
        with acquire_lock(project):
            pass
    assert target.read_text() == "x"


async def test_second_owner_refused_and_first_keeps_serving(owner: Owner) -> None:
    with pytest.raises(LockError, match=f"pid {os.getpid()}"):
        async with Owner(owner.root, http_address="127.0.0.1:0", chair=False):
            pass
    assert owner.socket_path is not None and owner.socket_path.exists()


async def test_owner_stop_closes_everything(project: Path, sockdir: Path) -> None:
    async with Owner(project, http_address="127.0.0.1:0", socket_path=sockdir / "s.sock", chair=False) as o:
        url, path = o.http_url, o.socket_path
        assert o.health() == "ready" and o.runtime.owner is True
    assert path is not None and not path.exists()
    import httpx2

    with pytest.raises(httpx2.TransportError):
        async with httpx2.AsyncClient() as http:
            await http.get(url.replace("/mcp", "/healthz"))
    with acquire_lock(project):
        pass


def _wait_line(proc: subprocess.Popen[str], needle: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if needle in line:
            return line
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"no line containing {needle!r}")


@pytest.mark.parametrize(
    ("command", "ready", "stopped"),
    [
        (["mcp", "serve"], "roundtable mcp serve listening on http://127.0.0.1:", "roundtable mcp serve stopped"),
        (["start"], "roundtable coordinator ready; project=", "roundtable coordinator stopped"),
    ],
)
def test_cli_owner_serves_refuses_second_and_stops_on_sigterm(
    project: Path, sockdir: Path, command: list[str], ready: str, stopped: str
) -> None:
    cfg = project / ".roundtable" / "config.yaml"
    text = cfg.read_text().replace("127.0.0.1:7117", "127.0.0.1:0")
    cfg.write_text(text.replace("socket_path: .roundtable/mcp/roundtable.sock", f"socket_path: {sockdir}/s.sock"))
    proc = subprocess.Popen([*ROUNDTABLE, *command, "--root", str(project)], stdout=subprocess.PIPE, text=True)
    try:
        _wait_line(proc, ready)
        second = subprocess.run(
            [*ROUNDTABLE, *command, "--root", str(project)], capture_output=True, text=True, timeout=30
        )
        assert second.returncode == 1 and f"pid {proc.pid}" in second.stderr
        call = subprocess.run(
            [*ROUNDTABLE, "mcp", "call", "--root", str(project), "--socket", "--tool", "no.such"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert call.returncode == 1 and "unknown tool: no.such" in call.stderr
        proc.send_signal(signal.SIGTERM)
        _wait_line(proc, stopped)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (sockdir / "s.sock").exists()
    gone = subprocess.run(
        [*ROUNDTABLE, "mcp", "call", "--root", str(project), "--socket", "--tool", "table.get_state"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert gone.returncode == 1 and "no owner is running" in gone.stderr


async def test_start_rejects_bad_interval(project: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *ROUNDTABLE, "start", "--root", str(project), "--interval", "0s", stderr=asyncio.subprocess.PIPE
    )
    _out, err = await proc.communicate()
    assert proc.returncode == 1 and b"coordinator interval must be positive" in err
