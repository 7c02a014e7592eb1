"""Another project of the same user, its owner running, is out of every sandbox's reach.

The other project lives where the old deny-list sandboxes did not look (a directory under
`/var/tmp`, and one under the home). From inside a test run (`test.run`, both kinds) and a
supervised session (both kinds) its files, credentials, legacy socket and `.roundtable/` do not
exist, and the owner's own project is visible only through what the profile grants (the scratch
worktree of a test run; nothing of it for a session). A same-uid process in another namespace
that reaches a legacy socket anyway is refused operator authority, and the refusal is recorded.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.services.policy.engine import load_policy
from roundtable.services.sessions import adapters
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.helpers import credential, make_git_project
from tests.sessions.helpers import make_task
from tests.support.evidence import AGENT
from tests.support.projects import initialised_project

pytestmark = pytest.mark.anyio

PROBE = r"""
import json, os, socket, sys
other, sock, own, marker = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
out = {
    "other": os.path.exists(other),
    "other_src": os.path.exists(os.path.join(other, "src", "calc.py")),
    "other_state": os.path.exists(os.path.join(other, ".roundtable")),
    "other_credentials": os.path.exists(os.path.join(other, ".roundtable", "credentials")),
    "socket": os.path.exists(sock),
    "own": os.path.exists(own),
    "own_state": os.path.exists(os.path.join(own, ".roundtable")),
    "home": os.path.exists(marker),
}
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sock)
    s.sendall(b'{"tool": "token.list", "args": {}}\n')
    out["connect"] = s.makefile("rb").readline().decode()[:200]
except OSError as exc:
    out["connect"] = type(exc).__name__
print("PROBE " + json.dumps(out), flush=True)
"""


@dataclass
class Other:
    root: Path
    socket_path: Path
    owner: Owner
    home_marker: Path  # a file in the user's home: the home is not granted to any sandbox


def _parent(where: str) -> str:
    return "/var/tmp" if where == "var-tmp" else os.path.expanduser("~")


def real(path: Path) -> str:
    return str(path.resolve())


def system_python() -> bool:
    return os.getuid() == 0 and shutil.which("setpriv") is not None and os.path.exists("/usr/bin/python3")


@pytest.fixture(params=["var-tmp", "home"])
async def other(request: pytest.FixtureRequest) -> AsyncIterator[Other]:
    parent = _parent(request.param)
    if not os.access(parent, os.W_OK):
        pytest.skip(f"{parent} is not writable here")
    root = Path(tempfile.mkdtemp(prefix="rt-other-", dir=parent))
    marker = Path(tempfile.mkstemp(prefix=".rt-home-marker-", dir=_parent("home"))[1])
    try:
        make_git_project(root, {"src/calc.py": "def add(a, b):\n    return a + b\n"})
        initialised_project(root)
        async with Owner(root, http_address="127.0.0.1:0", chair=False) as owner:
            await credential(owner.runtime, agent_id="implementer-1")
            await credential(owner.runtime, operator=True)
            socket_path = owner.runtime.config.socket_path(root)
            yield Other(Path(real(root)), socket_path, owner, marker)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.unlink(marker)


def ask(path: Path, tool: str) -> dict[str, Any]:
    """One legacy-socket call from this process (blocking: run it in a thread)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        sock.sendall(json.dumps({"tool": tool, "args": {}}).encode() + b"\n")
        return dict(json.loads(sock.makefile("rb").readline()))


def unreachable(seen: dict[str, Any]) -> None:
    assert seen["other"] is False and seen["other_src"] is False, seen
    assert seen["other_state"] is False and seen["other_credentials"] is False, seen
    assert seen["socket"] is False and seen["connect"] == "FileNotFoundError", seen
    assert seen["home"] is False, seen


def probe_output(text: str) -> dict[str, Any]:
    line = next(x for x in text.splitlines() if x.startswith("PROBE "))
    return dict(json.loads(line[len("PROBE ") :]))


@pytest.fixture
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))


async def test_a_test_run_cannot_reach_another_project(
    kind: str, other: Other, project: Path, private_tempdir: None
) -> None:
    make_git_project(project, {"app.py": "x = 1\n"})
    command = [
        sys.executable,
        "-c",
        PROBE,
        str(other.root),
        str(other.socket_path),
        real(project),
        str(other.home_marker),
    ]
    block = yaml.safe_dump({"tests": {"commands": {"probe": command}, "sandbox": kind}})
    (project / "POLICIES.ROUNDTABLE.md").write_text(f"```yaml\n{block}```\n", encoding="utf-8")
    runtime = await Runtime.open(project)
    runtime.policy = load_policy(project)
    try:
        out = await runtime.call("test.run", {"command": "probe"}, AGENT)
    finally:
        await runtime.close()
    assert out["test_run"]["status"] == "passed" and out["test_run"]["sandbox"] == kind, out["log"]
    seen = probe_output(out["log"])
    unreachable(seen)
    # The project itself is not there: the command sees its scratch worktree only.
    assert seen["own"] is False and seen["own_state"] is False


async def test_a_session_cannot_reach_another_project(
    kind: str, other: Other, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        args = (PROBE, str(other.root), str(other.socket_path), real(runtime.root), str(other.home_marker))
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"), extra_args=args
        )
        await sup.wait(res["session"]["id"], 60)
    finally:
        await sup.close()
    seen = probe_output(sup.log_path(res["session"]["id"]).read_text())
    unreachable(seen)
    assert seen["own"] is False and seen["own_state"] is False


@pytest.mark.parametrize("profile", ["test", "session"])
async def test_the_unprivileged_launcher_cannot_reach_another_project(kind: str, other: Other, profile: str) -> None:
    """The same for both profiles, with the owner an unprivileged user (as root in CI: the
    launcher runs as 65534)."""
    import dataclasses

    from roundtable.sandbox import runner
    from roundtable.sandbox.runner import BOOTSTRAP, PACKAGE_PARENT

    setpriv = shutil.which("setpriv") or "setpriv"
    if not system_python():
        pytest.skip("needs root, setpriv and /usr/bin/python3")
    work = Path(tempfile.mkdtemp(prefix="rt-deny-nobody-"))
    os.chmod(work, 0o777)
    sandbox = await runner.choose(kind)
    argv = ["/usr/bin/python3", "-c", PROBE, str(other.root), str(other.socket_path), "/nonexistent"]
    argv.append(str(other.home_marker))
    built = runner.build_spec(kind, argv, work, root=work / "p", profile=profile, executable=sandbox.executable)
    mounts = [m for m in built.mounts if m.op not in ("ro", "rw") or not m.src.startswith("/root")]
    spec = dataclasses.replace(built, uid=-1, gid=-1, mounts=mounts)
    try:
        with runner.open_spec(spec) as fd:
            command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-S"]
            command += ["-c", BOOTSTRAP, PACKAGE_PARENT, str(fd)]
            done = await asyncio.to_thread(
                subprocess.run,
                command,
                cwd=work,
                env={"PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=60,
                pass_fds=(fd,),
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if "No module named 'roundtable'" in done.stderr:
        pytest.skip(f"roundtable's source ({PACKAGE_PARENT}) is not readable by uid 65534")
    assert done.returncode == 0, done.stderr
    unreachable(probe_output(done.stdout))


async def test_a_same_uid_peer_in_another_namespace_is_not_the_operator(other: Other) -> None:
    """Defence in depth: even with the socket reachable, a process in its own user and PID
    namespaces (as every sandboxed process is) is refused, and the refusal is recorded."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is not installed")
    client = (
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(sys.argv[1])\n"
        's.sendall(b\'{"tool": "token.list", "args": {}}\\n\')\n'
        "print(s.makefile('rb').readline().decode())\n"
    )
    argv = [unshare, "--user", "--map-current-user", "--pid", "--fork", sys.executable, "-c", client]
    done = await asyncio.to_thread(
        subprocess.run, [*argv, str(other.socket_path)], capture_output=True, text=True, timeout=30
    )
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no user namespaces here: {done.stderr.strip()}")
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    assert reply["ok"] is False and "namespace (a sandbox)" in reply["error"], reply
    assert "tokens" not in json.dumps(reply)
    async with other.owner.runtime.db.read() as r:
        rows = await r.fetchall("SELECT payload_json FROM events WHERE type = 'socket.peer_refused'")
    assert len(rows) == 1 and "namespace" in json.loads(rows[0][0])["reason"]
    # The operator's own processes still are the operator.
    assert (await asyncio.to_thread(ask, other.socket_path, "token.list"))["ok"] is True
