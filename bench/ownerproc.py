"""A real owner as a subprocess, and lean async clients for each of its transports.

Shared by the soak run, the memory benchmark and the fault tests: `OwnerProcess` writes an
ephemeral HTTP port into the project's config, runs `roundtable mcp serve` (or `start`) as a
child, waits for its ready line and reads its RSS and CPU from /proc. The clients speak the
legacy socket framing, Streamable HTTP (handshake era, one session, SSE replies parsed by hand
so the client costs little) and the stdio bridge (`roundtable mcp stdio` as a child), and all
raise `CallFailed` with the server's message when a tool refuses.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import yaml

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PROTOCOL = "2025-11-25"
INIT_PARAMS = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "roundtable-bench", "version": "1"},
}
TICK = os.sysconf("SC_CLK_TCK")
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[assignment]


class CallFailed(Exception):
    """A tool call the server answered with an error (the message is the server's)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kib(pid: int) -> int:
    """VmRSS of a live process in KiB (0 when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) if match else 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def set_http_port(root: Path, port: int) -> None:
    path = root / ".roundtable" / "config.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r'http_address: ("[^"]*"|\S+)', f'http_address: "127.0.0.1:{port}"', text), encoding="utf-8")


LOAD_LIMITS = {
    "tasks_per_agent": 10**9,
    "proposals_per_agent": 10**9,
    "tasks_per_run": 10**9,
    "proposals_per_run": 10**9,
}


def lift_quotas(root: Path) -> None:
    """The load generators create tasks by the thousand as one agent on purpose: the quotas that
    stop a runaway agent would cut the measurement short."""
    import yaml

    path = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data.setdefault("limits", {}).update(LOAD_LIMITS)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


class OwnerProcess:
    """`roundtable mcp serve|start --root ROOT` as a child process on an ephemeral port."""

    def __init__(self, root: Path, command: str = "serve", extra_args: tuple[str, ...] = ()) -> None:
        self.root = Path(root)
        self.command = command
        self.extra_args = extra_args
        self.entry: tuple[str, ...] = ("-m", "roundtable")  # what the interpreter runs (tests swap it)
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def auth(self) -> dict[str, str]:
        """`Authorization` with the credential the owner keeps for `implementer-1` (written at start)."""
        return self.auth_for("implementer-1")

    def auth_for(self, agent_id: str) -> dict[str, str]:
        """`Authorization` with the credential the owner keeps for a configured agent."""
        from roundtable.credentials import read_credential

        token = read_credential(self.root, agent_id=agent_id)
        if not token:
            raise RuntimeError(f"no credential for {agent_id} under {self.root}: has the owner started?")
        return {"Authorization": f"Bearer {token}"}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def socket_path(self) -> Path:
        return self.root / ".roundtable" / "mcp" / "roundtable.sock"

    def start(self, timeout: float = 30.0, env: dict[str, str] | None = None, port: int = 0) -> OwnerProcess:
        self.port = port or free_port()
        lift_quotas(self.root)
        set_http_port(self.root, self.port)
        argv = ["mcp", "serve"] if self.command == "serve" else ["start"]
        self.proc = subprocess.Popen(
            [sys.executable, *self.entry, *argv, "--root", str(self.root), *self.extra_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"owner exited before ready: {''.join(self.output)[-2000:]}")
            self.output.append(line)
            if "listening on" in line or "coordinator ready" in line:
                self._drain()
                return self
        self.kill()
        raise RuntimeError("owner did not become ready in time")

    def _drain(self) -> None:
        """Keep reading the child's output so a full pipe never blocks it."""
        import threading

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line)

        threading.Thread(target=pump, daemon=True).start()

    def rss_kib(self) -> int:
        return rss_kib(self.pid)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def kill(self) -> None:
        """SIGKILL: no clean-up runs (what a crash looks like)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return int(self.proc.returncode or 0)

    def __enter__(self) -> OwnerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- clients ------------------------------------------------------------------------------------


class SocketClient:
    """The legacy socket: one connection per call, one JSON line each way."""

    transport = "socket"

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)

    async def open(self) -> None:
        return None

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        reader, writer = await asyncio.open_unix_connection(self.path, limit=1 << 24)
        try:
            writer.write(json.dumps({"tool": tool, "args": args}).encode() + b"\n")
            await writer.drain()
            line = await reader.readline()
        finally:
            writer.close()
        if not line:
            raise ConnectionError("socket closed without a reply")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise CallFailed(str(reply.get("error", "")))
        return dict(reply.get("result") or {})

    async def close(self) -> None:
        return None


def _tool_result(message: dict[str, Any]) -> dict[str, Any]:
    if "error" in message:
        raise CallFailed(str(message["error"].get("message", message["error"])))
    result = message["result"]
    if result.get("isError"):
        content = result.get("content") or [{}]
        raise CallFailed(str(content[0].get("text", "")))
    structured = result.get("structuredContent")
    if structured is None:  # an agent's result: its compact YAML rendering alone
        # With libyaml's loader: the pure-Python one takes ~40 ms for a 100-task page here, on
        # the one event loop of every simulated agent, and that wait lands in the latency of
        # whatever other calls are in flight (the soak measured the load generator, not the owner).
        structured = yaml.load(result["content"][0]["text"], Loader=_YAML_LOADER)
    return dict(structured)


def _sse_message(text: str) -> dict[str, Any]:
    """The JSON-RPC message of a reply body (plain JSON or SSE `data:` lines)."""
    text = text.strip()
    if text.startswith("{"):
        return dict(json.loads(text))
    for line in text.splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data:
                return dict(json.loads(data))
    raise ConnectionError(f"no JSON-RPC message in reply: {text[:200]!r}")


class HttpClient:
    """Streamable HTTP, handshake era: one MCP session, tools/call as raw JSON-RPC posts."""

    transport = "http"

    def __init__(self, url: str, auth: dict[str, str] | None = None) -> None:
        self.url = url
        # The endpoint is authenticated by default: `auth` carries `Authorization: Bearer …`.
        self.http = httpx2.AsyncClient(headers={**HEADERS, **(auth or {})}, timeout=60.0)
        self.session = ""
        self.ids = itertools.count(1)

    async def open(self) -> None:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}
        resp = await self.http.post(self.url, json=init)
        resp.raise_for_status()
        self.session = resp.headers["mcp-session-id"]
        await self.http.post(
            self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self._headers()
        )

    def _headers(self) -> dict[str, str]:
        return {"mcp-session-id": self.session, "mcp-protocol-version": PROTOCOL}

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        resp = await self.http.post(self.url, json=body, headers=self._headers())
        if resp.status_code != 200:
            raise ConnectionError(f"HTTP {resp.status_code}: {resp.text[:200]}")
        return _sse_message(resp.text)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return _tool_result(await self.request("tools/call", {"name": tool, "arguments": args}))

    async def close(self) -> None:
        if self.session:
            try:
                await self.http.delete(self.url, headers=self._headers())
            except httpx2.HTTPError:
                pass
        await self.http.aclose()


class BridgeClient:
    """`roundtable mcp stdio` as a child; concurrent requests matched by id."""

    transport = "stdio"

    def __init__(self, root: Path, url: str, agent_id: str = "") -> None:
        # Bound to `agent_id` the bridge presents that agent's credential; unbound it is read-only.
        bound = ["--agent", agent_id] if agent_id else []
        self.argv = [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", str(root), "--url", url, *bound]
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdin=-1, stdout=-1, stderr=subprocess.DEVNULL, limit=1 << 24
        )
        self.reader = asyncio.create_task(self._read())
        await self.request("initialize", INIT_PARAMS)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            fut = self.waiting.pop(msg.get("id"), None)
            if fut is not None and not fut.done():
                fut.set_result(msg)
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError("stdio bridge exited"))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(self.ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = fut
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await asyncio.wait_for(fut, 60)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return _tool_result(await self.request("tools/call", {"name": tool, "arguments": args}))

    async def close(self) -> None:
        if self.proc is None:
            return
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self.reader is not None:
            self.reader.cancel()


async def direct_task_create(root: Path, title: str, *, direct: bool = False) -> tuple[int, bytes, bytes]:
    """`roundtable mcp call --tool task.create` in its own process (through the running owner
    when one listens; `direct=True` adds `--direct`: its own database connection even then);
    returns (exit status, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "mcp",
        "call",
        "--root",
        str(root),
        "--tool",
        "task.create",
        "--args",
        json.dumps({"title": title, "body_md": "direct"}),
        *(["--direct"] if direct else []),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    return int(proc.returncode or 0), out, err
