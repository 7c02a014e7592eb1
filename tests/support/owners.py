"""Owners and bridges as child processes, shared by the test directories: the stdio bridge
speaking NDJSON, a real owner (`roundtable mcp serve`) on a chosen port so it can be stopped and
restarted, and `free_port`/`set_http_address` so no test depends on a fixed port being free.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

BRIDGE = [sys.executable, "-m", "roundtable", "mcp", "stdio"]
LEGACY = "2025-11-25"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def set_http_address(root: Path, port: int) -> None:
    path = root / ".roundtable" / "config.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r'http_address: "[^"]*"', f'http_address: "127.0.0.1:{port}"', text), encoding="utf-8")


class Bridge:
    """`roundtable mcp stdio` as a child: send messages, read frames (raw bytes kept)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.frames: list[bytes] = []
        self.errors = bytearray()  # stderr read so far by `wait_stderr`

    @classmethod
    async def spawn(cls, *args: str, env: dict[str, str] | None = None) -> Bridge:
        proc = await asyncio.create_subprocess_exec(
            *BRIDGE,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            limit=1 << 24,
        )
        return cls(proc)

    async def send(self, *messages: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        for m in messages:
            self.proc.stdin.write(m if isinstance(m, bytes) else json.dumps(m).encode() + b"\n")
        await self.proc.stdin.drain()

    async def recv(self, timeout: float = 20.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        assert line, "bridge closed stdout"
        self.frames.append(line)
        value = json.loads(line)
        assert isinstance(value, dict)
        return value

    async def handshake(self) -> dict[str, Any]:
        await self.send(INIT, INITIALIZED)
        return await self.recv()

    async def wait_stderr(self, text: bytes, timeout: float = 20.0) -> None:
        """Read stderr until `text` has appeared on it, or fail after `timeout` seconds."""
        assert self.proc.stderr is not None
        deadline = time.monotonic() + timeout
        while text not in self.errors:
            remaining = deadline - time.monotonic()
            line = await asyncio.wait_for(self.proc.stderr.readline(), max(remaining, 0.001))
            assert line, f"bridge closed stderr before saying {text!r}: {bytes(self.errors)!r}"
            self.errors += line

    async def close(self, timeout: float = 20.0) -> tuple[int, bytes, bytes]:
        """Close stdin and wait; returns (status, rest of stdout, all of stderr)."""
        assert self.proc.stdin is not None
        if not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        out, err = await asyncio.wait_for(self.proc.communicate(), timeout)
        return int(self.proc.returncode or 0), out, bytes(self.errors) + err

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()


def call(rid: int, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": arguments or {}}}


class OwnerChild:
    """`roundtable mcp serve --root ROOT` on a fixed port; stop with SIGTERM, start again."""

    def __init__(self, root: Path, port: int, env: dict[str, str] | None = None) -> None:
        self.root, self.port = root, port
        self.env = {**os.environ, **(env or {})}
        self.proc: asyncio.subprocess.Process | None = None
        self.output: list[bytes] = []
        self._pump: asyncio.Task[None] | None = None
        set_http_address(root, port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, timeout: float = 30.0) -> OwnerChild:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "roundtable",
            "mcp",
            "serve",
            "--root",
            str(self.root),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=self.env,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
            if not line:
                raise RuntimeError("owner exited before it was ready: " + b"".join(self.output).decode()[-2000:])
            self.output.append(line)
            if b"listening on" in line:
                self._pump = asyncio.create_task(self._drain())
                return self
        raise RuntimeError("owner did not become ready")

    async def _drain(self) -> None:
        """Keep reading the child's output so a full pipe never blocks it."""
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.output.append(line)

    async def kill(self) -> None:
        """SIGKILL: what a crash looks like (streams break mid-reply)."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                await self.kill()
        if self._pump is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._pump, 5)
