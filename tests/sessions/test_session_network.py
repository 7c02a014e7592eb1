"""A supervised session has no network of its own and no model key: its one way out is the owner's
gateway, reached on its own loopback through the sandbox's relay — under bubblewrap and under the
Landlock launcher, with the owner as root (the session runs as nobody) and as an unprivileged
user (the launcher started with `setpriv`).

What runs inside is a probe standing in for the harness (the `claude` adapter's command is this
interpreter running it): it reports what it can reach and searches everything it can read for
the operator's keys, which the owner's environment holds. Everything else is real: the
supervisor, the sandbox, the gateway and its allow-list, a local stub of the model API upstream.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from roundtable import proc
from roundtable.config import AdapterConfig, BudgetsConfig, LimitConfig, NetworkConfig
from roundtable.gateway import Gateway
from roundtable.runtime import Runtime
from roundtable.sandbox import runner
from roundtable.sandbox import sessions as session_sandbox
from roundtable.sandbox.runner import BOOTSTRAP, PACKAGE_PARENT
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions.records import LaunchArgs
from roundtable.services.views.models import exit_text
from roundtable.supervisor import Supervisor, start_supervisor
from tests.e2e_harness.model_stub import Answer, StubServer, Usage
from tests.sessions.helpers import bind, make_task

pytestmark = pytest.mark.anyio

# The operator's credentials (distinct values: whichever leaked is named).
KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-operator-7f3c9e1d2b",
    "ANTHROPIC_AUTH_TOKEN": "sk-ant-oauth-operator-5a8e4c",
    "CODEX_API_KEY": "sk-codex-operator-91d0e6",
    "OPENAI_API_KEY": "sk-openai-operator-c47b2a",
}
SPEND = Usage(input_tokens=700, output_tokens=300)

# Inside the sandbox. Its settings come in a file beside it (the keys reversed, so that the file
# itself holds none of them); it prints one `PROBE {json}` line.
PROBE = r"""
import base64, json, os, socket, sys, time, urllib.request
here = os.path.dirname(os.path.abspath(__file__))
cfg = json.load(open(os.path.join(here, "probe.json")))
keys = [k[::-1].encode() for k in cfg["reversed_keys"]]
out = {"env": {k: v for k, v in os.environ.items() if "PROXY" in k.upper() or k.startswith("ANTHROPIC")}}
out["env"] = {k: (v[:5] + "..." if k == "ANTHROPIC_API_KEY" else v) for k, v in out["env"].items()}
def leaks(data):
    return [i for i, key in enumerate(keys) if key in data]
found = []
for name, value in os.environ.items():
    if leaks(value.encode()):
        found.append("env " + name)
for pid in ([p for p in os.listdir("/proc") if p.isdigit()] if cfg["sandboxed"] else []) + ["self"]:
    for what in ("environ", "cmdline"):
        try:
            data = open(f"/proc/{pid}/{what}", "rb").read()
        except OSError:
            continue
        if leaks(data):
            found.append(f"/proc/{pid}/{what}")
# Unsandboxed, /tmp and /proc are the host's: only its own places and processes are searched.
roots = {os.environ.get("HOME", ""), os.getcwd(), here} | ({"/tmp"} if cfg["sandboxed"] else set())
walked = 0
for top in sorted(r for r in roots if r):
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if os.path.islink(path) or os.path.getsize(path) > 8 << 20:
                    continue
                data = open(path, "rb").read()
            except OSError:
                continue
            walked += 1
            if leaks(data):
                found.append(path)
out["leaks"] = found
out["files_searched"] = walked
def attempt(fn):
    try:
        return fn()
    except OSError as exc:
        return type(exc).__name__
def connect(host, port):
    socket.create_connection((host, port), timeout=5).close()
    return "CONNECTED"
out["host_loopback"] = attempt(lambda: connect("127.0.0.1", cfg["host_port"]))
out["allowed_direct"] = attempt(lambda: connect("127.0.0.1", cfg["allowed_port"]))
out["dns"] = attempt(lambda: socket.getaddrinfo("example.com", 443) and "RESOLVED")
proxy = os.environ.get("HTTPS_PROXY", "")
def tunnel(target):
    host, _, port = proxy.rpartition("/")[2].partition(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    f = s.makefile("rb")
    status = f.readline().decode().strip()
    while f.readline().strip():
        pass
    body = ""
    if " 200 " in status + " ":
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        body = f.read().decode()
    s.close()
    return [status, body]
if proxy:
    out["connect_allowed"] = attempt(lambda: tunnel(f"127.0.0.1:{cfg['allowed_port']}"))
    out["connect_host_service"] = attempt(lambda: tunnel(f"127.0.0.1:{cfg['host_port']}"))
    out["connect_outside"] = attempt(lambda: tunnel("example.com:443"))
def via_proxy(url):
    # By hand: urllib would go direct for 127.0.0.1 (NO_PROXY), and direct is what must fail.
    host, _, port = proxy.rpartition("/")[2].partition(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(f"GET {url} HTTP/1.1\r\nHost: {url.split('/')[2]}\r\nConnection: close\r\n\r\n".encode())
    status, _, rest = s.makefile("rb").read().decode().partition("\r\n")
    s.close()
    return [int(status.split()[1]), rest.partition("\r\n\r\n")[2]]
if proxy:
    out["get_allowed"] = attempt(lambda: via_proxy(f"http://127.0.0.1:{cfg['allowed_port']}/hello"))
base = os.environ.get("ANTHROPIC_BASE_URL", "")
def messages():
    body = json.dumps({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(base + "/v1/messages", data=body, headers={
        "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""), "anthropic-version": "2023-06-01",
        "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return [answer.status, json.loads(answer.read())]
    except urllib.error.HTTPError as exc:
        return [exc.code, exc.read().decode()]
# Hex: the session log is redacted, and what looks like a credential in JSON would be masked.
print("PROBE " + json.dumps(out).encode().hex(), flush=True)
for _ in range(cfg["model_calls"] if base else 0):
    call = attempt(messages)
    print("CALL " + json.dumps(call).encode().hex(), flush=True)  # the supervisor may stop it any time now
    if call[0] != 200:
        break
    time.sleep(cfg["call_spacing"])  # as a harness's next turn would come
if cfg.get("wait_to_be_stopped"):
    time.sleep(120)  # the supervisor ends it
"""


@dataclasses.dataclass
class Net:
    """The host side: a service on the host's loopback no session may reach, one the
    allow-list names, and the model API's stub (the gateway's upstream)."""

    host_port: int
    allowed_port: int
    stub: StubServer


async def _answer_with(text: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readline()
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text))
    await writer.drain()
    writer.close()


@pytest.fixture
async def net() -> AsyncIterator[Net]:
    async def secret(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _answer_with(b"host-secret", reader, writer)

    async def allowed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _answer_with(b"allowed-ok", reader, writer)

    host = await asyncio.start_server(secret, "127.0.0.1", 0)
    ok = await asyncio.start_server(allowed, "127.0.0.1", 0)
    stub = StubServer(script=lambda _history: Answer("hello"), usage=SPEND).start()
    try:
        yield Net(host.sockets[0].getsockname()[1], ok.sockets[0].getsockname()[1], stub)
    finally:
        stub.stop()
        host.close()
        ok.close()


@pytest.fixture
def operator_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def probe_dir() -> Iterator[Path]:
    """Where the probe and its settings live: readable inside (`sessions.read_paths`)."""
    path = Path(tempfile.mkdtemp(prefix="rt-probe-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    os.chmod(path, 0o755)
    (path / "probe.py").write_text(PROBE, encoding="utf-8")
    os.chmod(path / "probe.py", 0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def write_settings(
    probe_dir: Path, net: Net, *, model_calls: int = 1, wait: bool = False, sandboxed: bool = True
) -> None:
    settings = {
        "sandboxed": sandboxed,
        "reversed_keys": [value[::-1] for value in KEYS.values()],
        "host_port": net.host_port,
        "allowed_port": net.allowed_port,
        "model_calls": model_calls,
        "wait_to_be_stopped": wait,
        "call_spacing": 0.0,
    }
    (probe_dir / "probe.json").write_text(json.dumps(settings), encoding="utf-8")
    os.chmod(probe_dir / "probe.json", 0o644)


def configure(runtime: Runtime, probe_dir: Path, net: Net, **changes: Any) -> None:
    """The `claude` adapter runs the probe; the allow-list names the allowed service."""
    config = runtime.config
    adapters = dict(config.adapters)
    adapters["claude"] = AdapterConfig(command=f"{sys.executable} {probe_dir / 'probe.py'}", supports_mcp=True)
    runtime.config = config.model_copy(
        update={
            "adapters": adapters,
            "sessions": config.sessions.model_copy(
                update={
                    "read_paths": (str(probe_dir),),
                    "network": NetworkConfig(allow=(f"127.0.0.1:{net.allowed_port}",)),
                }
            ),
            **changes,
        }
    )


@pytest.fixture
async def gateway(runtime: Runtime, net: Net, operator_keys: None) -> AsyncIterator[Gateway]:
    gw = Gateway(runtime, upstreams={"anthropic": net.stub.url, "openai": net.stub.url})
    await gw.start()
    try:
        yield gw
    finally:
        await gw.aclose()


async def probe_of(sup: Supervisor, session_id: str, timeout: float = 60) -> dict[str, Any]:
    """The probe's report, once it is in the session's log."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        reports = lines_of(sup, session_id, "PROBE")
        if reports:
            return dict(reports[0])
        if session_id not in sup.live:
            break
        await asyncio.sleep(0.05)
    path = sup.log_path(session_id)
    raise AssertionError(path.read_text() if path.exists() else "no log")


def lines_of(sup: Supervisor, session_id: str, tag: str) -> list[Any]:
    path = sup.log_path(session_id)
    text = path.read_text() if path.exists() else ""
    return [json.loads(bytes.fromhex(line.split()[1])) for line in text.splitlines() if line.startswith(tag + " ")]


async def refused_events(runtime: Runtime, session_id: str) -> set[tuple[str, int]]:
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT payload_json FROM events WHERE type = 'gateway.connection_refused'")
    payloads = [json.loads(row[0]) for row in rows]
    return {(p["host"], p["port"]) for p in payloads if p["session_id"] == session_id}


def assert_no_network_but_the_gateway(seen: dict[str, Any], net: Net) -> None:
    assert seen["host_loopback"] == "ConnectionRefusedError"  # the host's loopback does not exist inside
    assert seen["allowed_direct"] == "ConnectionRefusedError"  # allowed only through the proxy
    assert seen["dns"] == "gaierror"  # no name resolution of its own
    assert seen["connect_allowed"][0].startswith("HTTP/1.1 200") and seen["connect_allowed"][1].endswith("allowed-ok")
    assert seen["get_allowed"] == [200, "allowed-ok"]
    assert seen["connect_host_service"][0].startswith("HTTP/1.1 403")  # the proxy refuses what is not allowed
    assert seen["connect_outside"][0].startswith("HTTP/1.1 403")


# --- through the supervisor (the owner as whoever runs the tests; as root the session is nobody) ---


async def test_a_session_reaches_only_the_gateway_and_holds_no_model_key(
    kind: str, runtime: Runtime, gateway: Gateway, net: Net, probe_dir: Path, tmp_path: Path
) -> None:
    write_settings(probe_dir, net)
    configure(runtime, probe_dir, net)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path, gateway=gateway)
    try:
        res = await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude"))
        session_id = res["session"]["id"]
        seen = await probe_of(sup, session_id)
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    seen["model_calls"] = lines_of(sup, session_id, "CALL")

    port = session_sandbox.GATEWAY_PORT
    assert seen["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}/anthropic"
    assert seen["env"]["ANTHROPIC_API_KEY"] == "rtgw_..."  # the session's gateway token
    assert seen["env"]["HTTPS_PROXY"] == seen["env"]["http_proxy"] == f"http://127.0.0.1:{port}"
    assert "127.0.0.1" in seen["env"]["NO_PROXY"]
    # No operator key anywhere it can look: environment, every process's environ and cmdline,
    # every file under its home, working directory and /tmp.
    assert seen["leaks"] == [] and seen["files_searched"] > 0
    assert "ANTHROPIC_AUTH_TOKEN" not in seen["env"]
    assert_no_network_but_the_gateway(seen, net)
    # Its model request reached the stub through the gateway, with the operator's key.
    [(status, body)] = seen["model_calls"]
    assert status == 200 and body["usage"]["input_tokens"] == SPEND.input_tokens
    [request] = [r for r in net.stub.requests if r.kind == "messages"]
    assert request.headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    # Every refused connection is on the record with the session, host and port.
    assert await refused_events(runtime, session_id) >= {("127.0.0.1", net.host_port), ("example.com", 443)}
    async with runtime.db.read() as r:
        session = await sessions.get(r, session_id)
    assert session.status == "ended" and sessions.metadata(session)["isolation"] == kind
    assert not gateway.serves(session_id)  # its token revoked with the session


async def test_a_budget_reached_mid_session_stops_it_as_stopped_by_budget(
    kind: str, runtime: Runtime, gateway: Gateway, net: Net, probe_dir: Path, tmp_path: Path
) -> None:
    write_settings(probe_dir, net, model_calls=10, wait=True)
    # One request's usage (700 + 300 tokens) reaches the task's budget; the next one is refused.
    configure(runtime, probe_dir, net, budgets=BudgetsConfig(task=LimitConfig(tokens=500)))
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path, gateway=gateway)
    try:
        res = await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude"))
        session_id = res["session"]["id"]
        await probe_of(sup, session_id)
        await sup.wait(session_id, 60)  # well before the probe's own 120 s
    finally:
        await sup.close()
    # Its first request was answered and spent the budget (counted before the next request is
    # judged, though the probe asks again at once); a later one was refused at the gateway, and the probe may have been stopped before it could
    # print that answer.
    calls = lines_of(sup, session_id, "CALL")
    answered = [call for call in calls if call[0] == 200]
    assert answered and calls[: len(answered)] == answered, calls
    assert all("budget reached" in call[1] for call in calls[len(answered) :]), calls
    assert len([r for r in net.stub.requests if r.kind == "messages"]) == len(answered) < 10
    async with runtime.db.read() as r:
        session = await sessions.get(r, session_id)
        refused = await r.fetchall("SELECT payload_json FROM events WHERE type = 'gateway.budget_refused'")
    assert [json.loads(row[0])["session_id"] for row in refused] == [session_id]
    meta = sessions.metadata(session)
    assert session.status == "ended", meta  # stopped, not failed
    assert str(meta["exit_reason"]).startswith("budget:")
    assert exit_text(session).startswith("stopped by budget:")
    assert "killed by" not in exit_text(session)


# --- the sandbox and the gateway alone, as root's nobody and as an unprivileged owner -----------


@pytest.fixture(params=["owner", "unprivileged"])
def who(request: pytest.FixtureRequest) -> str:
    if request.param == "unprivileged":
        if os.getuid() != 0 or shutil.which("setpriv") is None or not os.path.exists("/usr/bin/python3"):
            pytest.skip("needs root, setpriv and /usr/bin/python3")
    return str(request.param)


async def test_the_sandboxed_command_reaches_allowed_hosts_only_through_the_gateway(
    kind: str, who: str, runtime: Runtime, gateway: Gateway, net: Net, probe_dir: Path
) -> None:
    write_settings(probe_dir, net, model_calls=0)
    configure(runtime, probe_dir, net)
    run_id, task_id = await make_task(runtime)
    bound = await bind(runtime, "implementer-1", run_id, task_id)
    session_dir = Path(tempfile.mkdtemp(prefix="rt-net-", dir="/tmp"))
    os.chmod(session_dir, 0o777)
    try:
        gateway_socket = session_dir / "g.sock"
        unprivileged = who == "unprivileged"
        await gateway.open_session(
            bound.session_id, adapter="claude", socket_path=gateway_socket, owner_uid=65534 if os.getuid() == 0 else -1
        )
        python = "/usr/bin/python3" if unprivileged else sys.executable
        sandbox = await runner.choose(kind)
        spec = runner.build_spec(
            kind,
            [python, str(probe_dir / "probe.py")],
            session_dir,
            root=runtime.root,
            profile="session",
            max_processes=128,
            read_paths=[str(probe_dir)],
            executable=sandbox.executable,
            bwrap_size=sandbox.bwrap_size,
            gateway_socket=str(gateway_socket),
            gateway_port=session_sandbox.GATEWAY_PORT,
        )
        proxy = f"http://127.0.0.1:{session_sandbox.GATEWAY_PORT}"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(session_dir), "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy}
        if unprivileged:
            mounts = [m for m in spec.mounts if m.op not in ("ro", "rw") or not m.src.startswith("/root")]
            spec = dataclasses.replace(spec, uid=-1, gid=-1, mounts=mounts)
        else:
            await runner.hand_over(spec)
        with runner.open_spec(spec) as fd:
            argv = runner.launcher_argv(fd)
            if unprivileged:
                argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-I", "-S"]
                argv += ["-c", BOOTSTRAP, PACKAGE_PARENT, str(fd)]
            done = await proc.run(
                argv, cwd=session_dir, env=env, timeout=90, merge_stderr=True, new_group=True, pass_fds=(fd,)
            )
    finally:
        await gateway.close_session(bound.session_id)
        shutil.rmtree(session_dir, ignore_errors=True)
    out = done.out.decode("utf-8", "replace")
    if unprivileged and "No module named 'roundtable'" in out:
        pytest.skip(f"roundtable's source ({PACKAGE_PARENT}) is not readable by uid 65534")
    assert done.code == 0, out
    [line] = [x for x in out.splitlines() if x.startswith("PROBE ")]
    seen = json.loads(bytes.fromhex(line[len("PROBE ") :].strip()))
    assert_no_network_but_the_gateway(seen, net)
    assert await refused_events(runtime, bound.session_id) >= {
        ("127.0.0.1", net.host_port),
        ("example.com", 443),
    }


# --- unsandboxed (the operator's opt-in): still no key, the gateway over a loopback relay --------


async def test_an_unsandboxed_session_reaches_its_model_through_a_loopback_relay_and_holds_no_key(
    runtime: Runtime,
    gateway: Gateway,
    net: Net,
    probe_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(session_sandbox.ENV_VAR, "subprocess")
    write_settings(probe_dir, net, sandboxed=False)
    configure(runtime, probe_dir, net)
    runtime.config = runtime.config.model_copy(
        update={"sessions": runtime.config.sessions.model_copy(update={"allow_unsandboxed": True})}
    )
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path, gateway=gateway)
    try:
        res = await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude"))
        session_id = res["session"]["id"]
        relay = sup.live[session_id].relay
        assert relay is not None and relay.port > 0
        seen = await probe_of(sup, session_id)
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    calls = lines_of(sup, session_id, "CALL")
    # Its base URL is the relay on the host's loopback; no proxy is set (it has the host's network).
    assert seen["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{relay.port}/anthropic"
    assert seen["env"]["ANTHROPIC_API_KEY"] == "rtgw_..."
    assert not [name for name in seen["env"] if "PROXY" in name.upper()]
    # No operator key in its environment, its own /proc entries or its files (unsandboxed it can
    # read the owner's own environment: that is what the opt-in gives up).
    assert seen["leaks"] == [] and seen["files_searched"] > 0
    assert calls and calls[0][0] == 200
    [request] = [r for r in net.stub.requests if r.kind == "messages"]
    assert request.headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    async with runtime.db.read() as r:
        session = await sessions.get(r, session_id)
    assert sessions.metadata(session)["isolation"] == "subprocess" and session.status == "ended"
    assert not gateway.serves(session_id)
