"""What a sandboxed command cannot do, in both kinds (bubblewrap; Landlock plus namespaces):
reach the network, write outside its worktree, read the project's `.roundtable/` or the home,
connect to the legacy socket, exceed its memory, or outlive its timeout."""

from __future__ import annotations

import ast
import json
import os
import socket
import tempfile
import time
from pathlib import Path

import anyio
import pytest

from roundtable.sandbox import runner
from roundtable.services.testing import test_exec
from tests.support.processes import processes_with

from .conftest import PY, SECRET, Place, run

pytestmark = pytest.mark.anyio

PROBE = """
import json, os, socket, sys
out = {}
def attempt(name, fn):
    try:
        out[name] = ["ok", repr(fn())[:200]]
    except BaseException as exc:
        out[name] = ["denied", type(exc).__name__]
for path in sys.argv[1:]:
    attempt("read " + path, lambda p=path: open(p, "rb").read())
    attempt("list " + path, lambda p=path: os.listdir(p))
print(json.dumps(out))
"""


def exists(path: str) -> bool:
    return os.path.exists(path)


def writable_home() -> str:
    homes = [h for h in runner.home_dirs() if os.path.isdir(h) and os.access(h, os.W_OK)]
    return homes[0] if homes else ""


def probe(argv_paths: list[str]) -> list[str]:
    return [PY, "-c", PROBE, *argv_paths]


def results(execution: test_exec.Execution) -> dict[str, list[str]]:
    assert execution.status == "passed", (execution.note, execution.output)
    return json.loads(execution.output.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def test_the_network_is_unreachable(kind: str, place: Place) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    script = (
        "import socket, sys\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3)\n"
        "    print('CONNECTED')\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
        "    print('CONNECTED')\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)\n"
        # The namespace has a loopback of its own: a test may still serve itself.
        "s = socket.socket()\n"
        "s.bind(('127.0.0.1', 0))\n"
        "s.listen(1)\n"
        "c = socket.create_connection(s.getsockname(), timeout=3)\n"
        "print('own loopback ok')\n"
    )
    try:
        out = await run(kind, place, [PY, "-c", script, str(port)])
        assert out.status == "passed", out.output
        assert "CONNECTED" not in out.output
        assert out.output.count("refused") == 2 and "own loopback ok" in out.output
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody reached the host's listener
    finally:
        listener.close()


async def test_writes_outside_the_worktree_fail(kind: str, place: Place) -> None:
    marker = f"rt-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    outside = Path(os.path.dirname(place.root)) / marker
    targets = [
        str(place.root / "app.py"),
        str(place.root / "new.txt"),
        str(outside),
        f"/etc/{marker}",
        f"/usr/{marker}",
    ]
    script = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path, 'a').write('x')\n"
        "        print('WROTE', path)\n"
        "    except OSError as exc:\n"
        "        print('denied', path, type(exc).__name__)\n"
        "open('inside.txt', 'w').write('in the worktree')\n"
        f"open('/tmp/{marker}', 'w').write('private tmp')\n"
        f"print(open('/tmp/{marker}').read())\n"
    )
    out = await run(kind, place, [PY, "-c", script, *targets])
    assert out.status == "passed", out.output
    assert "WROTE" not in out.output and out.output.count("denied") == len(targets)
    assert "private tmp" in out.output
    assert (place.workdir / "inside.txt").read_text() == "in the worktree"
    assert (place.root / "app.py").read_text() == "print('project')\n"
    assert not (place.root / "new.txt").exists() and not outside.exists()
    assert not exists(f"/tmp/{marker}")  # the sandbox's /tmp is its own


@pytest.mark.parametrize("root_readable", [False, True], ids=["default", "root-in-read_paths"])
async def test_the_projects_state_and_socket_are_absent(kind: str, place: Place, root_readable: bool) -> None:
    """`.roundtable/` (database, config, credentials) cannot be read and the legacy socket
    cannot be connected — even when the operator makes the project root readable."""
    state = place.root / ".roundtable"
    paths = [
        str(state / "roundtable.db"),
        str(state / "config.yaml"),
        str(state / "credentials" / "operator"),
        str(state),
        str(state / "mcp"),
    ]
    script = PROBE + (
        "import socket\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"attempt('connect', lambda: s.connect({str(place.socket_path)!r}))\n"
        "print(json.dumps(out))\n"
    )
    read_paths = (str(place.root),) if root_readable else ()
    out = await run(kind, place, [PY, "-c", script, *paths], read_paths=read_paths)
    got = results(out)
    assert SECRET not in out.output
    assert got["connect"][0] == "denied", got
    for path in paths[:3]:
        assert got[f"read {path}"][0] == "denied", got
    for path in paths[3:]:
        listed = got[f"list {path}"]
        assert listed[0] == "denied" or listed[1] == "[]", got
    if root_readable:
        # The rest of the project is readable when the operator asked for it.
        assert got.get(f"read {place.root / 'app.py'}") is None  # not probed, but:
        again = results(await run(kind, place, probe([str(place.root / "app.py")]), read_paths=read_paths))
        assert again[f"read {place.root / 'app.py'}"][0] == "ok"
    else:
        again = results(await run(kind, place, probe([str(place.root / "app.py")])))
        assert again[f"read {place.root / 'app.py'}"][0] == "denied"


async def test_the_home_directory_is_absent(kind: str, place: Place) -> None:
    """Nothing of the home is visible but the directories leading to the Python in use (kept
    read-only when it lives there, as with pyenv); a file the user keeps there is not readable."""
    home = writable_home()
    if not home:
        pytest.skip("no writable home directory to test with")
    fd, planted = tempfile.mkstemp(prefix=".rt-sandbox-", dir=home)
    os.write(fd, SECRET.encode())
    os.close(fd)
    try:
        out = results(await run(kind, place, probe([home, planted])))
    finally:
        os.unlink(planted)
    assert out[f"read {planted}"][0] == "denied", out
    listed = out[f"list {home}"]
    if listed[0] == "ok":
        leading = {Path(k).relative_to(home).parts[0] for k in runner.python_paths() if k.startswith(home + "/")}
        assert set(ast.literal_eval(listed[1])) <= leading, out


async def test_a_memory_hog_is_stopped_by_the_limit(kind: str, place: Place) -> None:
    script = "data = bytearray(1 << 30)\nprint('ALLOCATED', len(data))\n"
    out = await run(kind, place, [PY, "-c", script], memory_mb=256)
    assert out.status == "failed", out.output
    assert "ALLOCATED" not in out.output and "MemoryError" in out.output


@pytest.mark.solo
async def test_a_fork_bomb_is_killed_at_the_timeout_with_no_survivors(kind: str, place: Place) -> None:
    marker = f"rt-forkbomb-{os.getpid()}-{time.monotonic_ns()}"
    script = (
        "import os, time\n"
        "print('start', flush=True)\n"
        "for _ in range(5000):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            os.setsid()\n"  # leave the process group: only the namespace catches it
        "            time.sleep(600)\n"
        "            os._exit(0)\n"
        "    except OSError:\n"
        "        break\n"
        "time.sleep(600)\n"
    )
    started = time.monotonic()
    out = await run(kind, place, [PY, "-c", script, marker], timeout=3.0, max_processes=64)
    assert out.status == "timed_out" and "start" in out.output
    assert time.monotonic() - started < 15
    for _ in range(250):
        if not processes_with(marker):
            break
        await anyio.sleep(0.02)
    assert processes_with(marker) == []


async def test_a_long_sleeper_is_killed_on_cancel(kind: str, place: Place) -> None:
    marker = f"rt-sleeper-{os.getpid()}-{time.monotonic_ns()}"
    with anyio.move_on_after(1.5):
        await run(kind, place, [PY, "-c", "import time\ntime.sleep(600)", marker], timeout=60)
    for _ in range(250):
        if not processes_with(marker):
            break
        await anyio.sleep(0.02)
    assert processes_with(marker) == []


async def test_a_setup_failure_is_an_error_never_an_unconfined_run(kind: str, place: Place) -> None:
    out = await run(kind, place, ["/nonexistent/program"])
    assert out.status in ("failed", "error") and out.exit_code != 0


async def test_the_environment_is_minimal(kind: str, place: Place, monkeypatch: pytest.MonkeyPatch) -> None:
    """The revision's code could print anything it finds into the log an agent reads."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-not-a-secret-name")
    monkeypatch.setenv("ROUNDTABLE_MCP_TOKEN", "rt-token-value")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    out = await run(kind, place, [PY, "-c", "import json, os\nprint(json.dumps(dict(os.environ)))"])
    env = json.loads(out.output.strip().splitlines()[-1])
    assert "AWS_ACCESS_KEY_ID" not in env and "ROUNDTABLE_MCP_TOKEN" not in env
    assert env["HOME"] == "/tmp" and env["TMPDIR"] == "/tmp" and env["LC_ALL"] == "C.UTF-8"
    allowed = {*test_exec.SANDBOX_ENV, "HOME", "TMPDIR", "PWD"}  # bwrap sets PWD
    assert all(k in allowed or k.startswith("LC_") for k in env), sorted(env)


async def test_an_unprivileged_user_gets_the_same_sandbox(kind: str) -> None:
    """As root (CI), run the launcher as uid 65534: the sandbox needs no privilege."""
    import dataclasses
    import shutil
    import subprocess

    from roundtable.sandbox.runner import BOOTSTRAP, PACKAGE_PARENT

    setpriv = shutil.which("setpriv")
    if os.getuid() != 0 or setpriv is None or not exists("/usr/bin/python3"):
        pytest.skip("needs root, setpriv and /usr/bin/python3")
    work = Path(tempfile.mkdtemp(prefix="rt-sandbox-nobody-"))  # pytest's own tmp is 0700
    os.chmod(work, 0o777)
    sandbox = await runner.choose(kind)
    script = (
        "import os, socket\n"
        "print('uid', os.getuid())\n"
        "open('inside.txt', 'w').write('x')\n"
        "print('inside ok', os.stat('inside.txt').st_uid)\n"
        "try:\n"
        "    open('/etc/rt-nobody', 'w')\n"
        "    print('WROTE /etc')\n"
        "except OSError:\n"
        "    print('etc denied')\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "    print('CONNECTED')\n"
        "except OSError:\n"
        "    print('network denied')\n"
    )
    built = runner.build_spec(
        kind,
        ["/usr/bin/python3", "-c", script],
        work,
        root=work / "project",
        max_processes=64,
        executable=sandbox.executable,
        bwrap_size=sandbox.bwrap_size,
    )
    # What an unprivileged owner's spec holds: its own uid, and only grants it can reach.
    mounts = [m for m in built.mounts if m.op not in ("ro", "rw") or not m.src.startswith("/root")]
    spec = dataclasses.replace(built, uid=-1, gid=-1, mounts=mounts)
    with runner.open_spec(spec) as fd:
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-S"]
        argv += ["-c", BOOTSTRAP, PACKAGE_PARENT, str(fd)]

        def launch() -> subprocess.CompletedProcess[str]:
            env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
            return subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=60, pass_fds=(fd,))

        try:
            done = await anyio.to_thread.run_sync(launch)
        finally:
            await anyio.to_thread.run_sync(lambda: shutil.rmtree(work, ignore_errors=True))
    if "No module named 'roundtable'" in done.stderr:
        pytest.skip(f"roundtable's source ({PACKAGE_PARENT}) is not readable by uid 65534")
    assert done.returncode == 0, done.stderr
    assert "uid 65534" in done.stdout and "etc denied" in done.stdout and "network denied" in done.stdout
    assert "WROTE" not in done.stdout and "CONNECTED" not in done.stdout
    assert "inside ok 65534" in done.stdout


async def test_the_private_tmp_is_bounded_by_the_memory_limit(kind: str, place: Place) -> None:
    """Files in a tmpfs are memory that RLIMIT_AS does not count: /tmp has the same bound."""
    sandbox = await runner.choose(kind)
    if kind == "bwrap" and not sandbox.bwrap_size:
        pytest.skip("this bubblewrap has no --size")
    script = (
        "chunk = b'x' * (1 << 20)\n"
        "written = 0\n"
        "try:\n"
        "    with open('/tmp/fill', 'wb') as f:\n"
        "        for _ in range(512):\n"
        "            f.write(chunk)\n"
        "            f.flush()\n"
        "            written += 1\n"
        "    print('FILLED', written)\n"
        "except OSError as exc:\n"
        "    print('stopped at', written, 'MiB', exc.errno)\n"
    )
    out = await run(kind, place, [PY, "-c", script], memory_mb=128)
    assert out.status == "passed", out.output
    assert "FILLED" not in out.output and "stopped at" in out.output
    assert int(out.output.split("stopped at")[1].split()[0]) <= 128


async def test_system_files_that_are_not_granted_do_not_exist(kind: str, place: Place) -> None:
    """`/etc` holds only what a toolchain needs: no shadow file, no private keys, no `/root`,
    `/var`, `/run`, `/srv` or `/opt`; the users and the TLS roots are there."""
    absent = ["/etc/shadow", "/etc/gshadow", "/etc/ssl/private", "/etc/sudoers", "/var/tmp", "/run", "/srv", "/opt"]
    present = ["/etc/passwd", "/etc/hosts"]
    out = results(await run(kind, place, probe([*absent, *present])))
    for path in absent:
        assert out[f"read {path}"] == ["denied", "FileNotFoundError"], (path, out[f"read {path}"])
    for path in present:
        if exists(path):
            assert out[f"read {path}"][0] == "ok", path


@pytest.mark.solo
async def test_the_process_limit_binds_even_as_root(kind: str, place: Place) -> None:
    """`max_processes` holds whoever runs the owner: as root the command runs as uid 65534,
    whom RLIMIT_NPROC binds (it never binds root)."""
    script = (
        "import os, time\n"
        "forked = 0\n"
        "for _ in range(300):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        forked += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print('uid', os.getuid(), 'forked', forked, flush=True)\n"
        "os.killpg(0, 9)\n"
    )
    out = await run(kind, place, [PY, "-c", script], max_processes=40, timeout=60)
    line = next(x for x in out.output.splitlines() if x.startswith("uid "))
    uid, forked = int(line.split()[1]), int(line.split()[3])
    assert uid == (65534 if os.getuid() == 0 else os.getuid())
    assert forked < 40, out.output


async def test_the_init_cannot_be_traced_and_shows_no_spec(kind: str, place: Place) -> None:
    """PID 1 of the sandbox is not ptrace-able by the command, and its command line carries no
    path of the project or of its secrets (the spec travels on a descriptor)."""
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "rc = libc.ptrace(16, 1, None, None)\n"  # PTRACE_ATTACH
        "print('attach', rc, os.strerror(ctypes.get_errno()) if rc else 'attached', flush=True)\n"
        "print('cmdline', open('/proc/1/cmdline', 'rb').read().replace(b'\\0', b' ').decode(errors='replace'))\n"
    )
    out = await run(kind, place, [PY, "-c", script])
    assert out.status == "passed", out.output
    attach = next(x for x in out.output.splitlines() if x.startswith("attach "))
    assert attach.split()[1] == "-1", attach
    cmdline = next(x for x in out.output.splitlines() if x.startswith("cmdline "))
    for secret in (str(place.root), str(place.socket_path), ".roundtable", str(place.workdir)):
        assert secret not in cmdline, (secret, cmdline[:300])
