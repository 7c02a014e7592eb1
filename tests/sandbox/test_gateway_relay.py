"""A session sandbox has no network of its own but its loopback, where the init relays one port to
the gateway's Unix socket: in both kinds, with the owner as root (the command runs as nobody) and
as an unprivileged user (the launcher started with `setpriv`).

The far end of the relay here is a plain Unix socket server of the test's own: what is tested is
the relay and the network namespace (the gateway behind the socket has tests of its own)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable import proc
from roundtable.sandbox import runner
from roundtable.sandbox.runner import BOOTSTRAP, PACKAGE_PARENT
from roundtable.sandbox.spec import Spec

pytestmark = pytest.mark.anyio

PY = "/usr/bin/python3"
PORT = 4780
CONNECTIONS = 40

# Inside: every connection is opened before the far end answers any (it waits for all of them),
# so a relay that served one connection at a time would never finish.
MANY = r"""
import json, socket, sys
port, n, host_port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out = {}
socks = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(b"hello %d\n" % i)
    socks.append(s)
answers = []
for i, s in enumerate(socks):
    f = s.makefile("rb")
    answers.append(f.read().decode())
    s.close()
out["answers"] = answers
try:
    socket.create_connection(("127.0.0.1", host_port), timeout=3).close()
    out["host_loopback"] = "CONNECTED"
except OSError as exc:
    out["host_loopback"] = type(exc).__name__
try:
    socket.create_connection(("10.255.255.1", 80), timeout=3).close()
    out["outside"] = "CONNECTED"
except OSError as exc:
    out["outside"] = type(exc).__name__
try:
    socket.getaddrinfo("example.com", 443)
    out["dns"] = "RESOLVED"
except OSError as exc:
    out["dns"] = type(exc).__name__
print(json.dumps(out), flush=True)
"""

# Inside: a background process holds a relayed connection open while the command exits; neither
# it nor the relay may keep the connection (or the sandbox) up.
LEAVE_OPEN = r"""
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"held\n")
if os.fork() == 0:
    time.sleep(120)
    os._exit(0)
print("left open", flush=True)
"""


@dataclasses.dataclass
class Far:
    """The test's stand-in for the gateway: answers each connection once `expect` are open."""

    path: Path
    expect: int
    accepted: int = 0
    lines: list[str] = dataclasses.field(default_factory=list)
    ended: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)  # a connection was closed by the far side
    all_open: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.accepted >= self.expect:
            self.all_open.set()
        try:
            line = (await reader.readline()).decode().strip()
            self.lines.append(line)
            await self.all_open.wait()
            # A streamed answer: several writes, then the end of the stream.
            for part in ("echo: ", line, " (streamed)"):
                writer.write(part.encode())
                await writer.drain()
            writer.close()
            await reader.read()  # until the client side closes (or the relay is killed)
        except ConnectionError:
            pass  # the relay went away first (the sandbox ended)
        finally:
            self.ended.set()


def unprivileged_possible() -> bool:
    return os.getuid() == 0 and shutil.which("setpriv") is not None and os.path.exists(PY)


@pytest.fixture(params=["owner", "unprivileged"])
def who(request: pytest.FixtureRequest) -> str:
    if request.param == "unprivileged" and not unprivileged_possible():
        pytest.skip("needs root, setpriv and /usr/bin/python3")
    if not os.path.exists(PY):
        pytest.skip("needs /usr/bin/python3")
    return str(request.param)


@pytest.fixture
async def session_dir() -> AsyncIterator[Path]:
    """The session's own directory (where the gateway socket lives), short enough for a socket."""
    path = Path(tempfile.mkdtemp(prefix="rt-relay-", dir="/tmp"))
    os.chmod(path, 0o777)  # a sandbox as uid 65534 reaches the socket in it
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def spec_for(kind: str, who: str, session_dir: Path, argv: list[str]) -> Spec:
    sandbox = await runner.choose(kind)
    assert sandbox.kind == kind, sandbox.reason
    work = session_dir / "work"
    work.mkdir(mode=0o777)
    os.chmod(work, 0o777)
    spec = runner.build_spec(
        kind,
        argv,
        work,
        root=session_dir / "project",
        profile="session",
        max_processes=128,
        writable=[str(session_dir)],
        executable=sandbox.executable,
        bwrap_size=sandbox.bwrap_size,
        gateway_socket=str(session_dir / "g.sock"),
        gateway_port=PORT,
    )
    if who == "unprivileged":
        # What an unprivileged owner's spec holds: its own uid, and only grants it can reach.
        mounts = [m for m in spec.mounts if m.op not in ("ro", "rw") or not m.src.startswith("/root")]
        spec = dataclasses.replace(spec, uid=-1, gid=-1, mounts=mounts)
    return spec


async def launch(spec: Spec, who: str, cwd: Path, timeout: float = 60) -> proc.Completed:
    if who == "owner":
        await runner.hand_over(spec)
    with runner.open_spec(spec) as fd:
        argv = runner.launcher_argv(fd)
        if who == "unprivileged":
            setpriv = shutil.which("setpriv") or "setpriv"
            argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", PY, "-I", "-S", "-c"]
            argv += [BOOTSTRAP, PACKAGE_PARENT, str(fd)]
        done = await proc.run(
            argv,
            cwd=cwd,
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
            timeout=timeout,
            merge_stderr=True,
            new_group=True,
            pass_fds=(fd,),
        )
    out = done.out.decode("utf-8", "replace")
    if who == "unprivileged" and "No module named 'roundtable'" in out:
        pytest.skip(f"roundtable's source ({PACKAGE_PARENT}) is not readable by uid 65534")
    return done


async def test_the_loopback_relay_serves_many_connections_and_nothing_else_is_reachable(
    kind: str, who: str, session_dir: Path
) -> None:
    far = Far(session_dir / "g.sock", CONNECTIONS)
    server = await asyncio.start_unix_server(far.serve, path=str(far.path))
    os.chmod(far.path, 0o666)
    host = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # a service on the host's loopback
    host.bind(("127.0.0.1", 0))
    host.listen(8)
    try:
        spec = await spec_for(
            kind, who, session_dir, [PY, "-c", MANY, str(PORT), str(CONNECTIONS), str(host.getsockname()[1])]
        )
        assert spec.network is False
        done = await launch(spec, who, session_dir)
    finally:
        host.close()
        server.close()
    out = done.out.decode("utf-8", "replace")
    assert done.code == 0, out
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["answers"] == [f"echo: hello {i} (streamed)" for i in range(CONNECTIONS)]
    assert sorted(far.lines) == sorted(f"hello {i}" for i in range(CONNECTIONS))
    assert seen["host_loopback"] == "ConnectionRefusedError"
    assert seen["outside"] in ("OSError", "TimeoutError")  # "Network is unreachable"
    assert seen["dns"] == "gaierror"


async def test_the_relay_does_not_outlive_the_command(kind: str, who: str, session_dir: Path) -> None:
    far = Far(session_dir / "g.sock", 1)
    server = await asyncio.start_unix_server(far.serve, path=str(far.path))
    os.chmod(far.path, 0o666)
    try:
        spec = await spec_for(kind, who, session_dir, [PY, "-c", LEAVE_OPEN, str(PORT)])
        done = await launch(spec, who, session_dir, timeout=30)
        # The command has gone, and with it the relay: the far end's connection is closed.
        await asyncio.wait_for(far.ended.wait(), 10)
    finally:
        server.close()
    assert not done.timed_out and done.code == 0, done.out
    assert b"left open" in done.out and far.lines == ["held"]


async def test_a_relay_on_the_hosts_network_or_without_a_port_is_refused(kind: str) -> None:
    """The relay exists only inside a network namespace of the sandbox's own."""
    with pytest.raises(ValueError, match="only for a sandbox without the host's network"):
        Spec.from_json(
            json.dumps(
                {
                    "kind": kind,
                    "profile": "session",
                    "argv": ["true"],
                    "workdir": "/",
                    "network": True,
                    "gateway_socket": "/tmp/g.sock",
                    "gateway_port": PORT,
                }
            )
        )
    with pytest.raises(ValueError, match="needs a port"):
        Spec.from_json(
            json.dumps({"kind": kind, "profile": "session", "argv": ["true"], "workdir": "/", "gateway_port": 70000})
        )


# Inside: one connection is served while five more wait for room in the far end's backlog; the
# far end takes them only once the first connection's second message reached it.
BACKLOG = r"""
import json, socket, sys
port = int(sys.argv[1])
a = socket.create_connection(("127.0.0.1", port), timeout=30)
a.sendall(b"ping1\n")
first = a.recv(100).decode()
others = []
for i in range(5):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"hello %d\n" % i)
    others.append(s)
a.sendall(b"ping2\n")
second = a.recv(100).decode()
answers = [s.makefile("rb").read().decode() for s in others]
print(json.dumps({"first": first, "second": second, "answers": answers}), flush=True)
"""


def _backlogged_far_end(path: Path) -> tuple[socket.socket, threading.Thread]:
    """A gateway stand-in with a backlog of one that takes no second connection until the first
    has sent its second message."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o666)
    server.listen(1)

    def serve() -> None:
        first, _ = server.accept()
        reader = first.makefile("rb")
        for reply in (b"pong1", b"pong2"):
            reader.readline()
            first.sendall(reply)
        for _ in range(5):
            conn, _ = server.accept()
            line = conn.makefile("rb").readline().decode().strip()
            conn.sendall(f"ok {line}".encode())
            conn.close()
        first.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


async def test_connections_waiting_for_the_gateways_backlog_do_not_stall_the_others(
    kind: str, session_dir: Path
) -> None:
    server, thread = _backlogged_far_end(session_dir / "g.sock")
    try:
        spec = await spec_for(kind, "owner", session_dir, [PY, "-c", BACKLOG, str(PORT)])
        done = await launch(spec, "owner", session_dir)
    finally:
        server.close()
    out = done.out.decode("utf-8", "replace")
    assert done.code == 0, out
    seen = json.loads(out.strip().splitlines()[-1])
    assert (seen["first"], seen["second"]) == ("pong1", "pong2")
    assert seen["answers"] == [f"ok hello {i}" for i in range(5)]
    await asyncio.to_thread(thread.join, 10)
