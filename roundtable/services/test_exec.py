"""Running one test command: the guard, the subprocess, the timeout and the output cap
(spec/tools.md §3.10.1–§3.10.2; DESIGN §4.20).

The command never reaches a shell. It is refused when it contains shell control characters
(they would do nothing without a shell, and an agent that writes `a | b` expects them to), split
into argv with `shlex`, and its program's base name must be on the allowlist. The allowlist is
not a sandbox: allowed programs can run arbitrary code (`node -e`, `make <target>`, `go run`).

The process runs in its own session (so a timeout or a cancel kills the whole group), with
stdin closed and an environment without credential-looking variables. Output (stdout and stderr
combined) is kept up to a cap: the head and the tail, with a marker saying how much was dropped.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import re
import shlex
import signal
from dataclasses import dataclass
from pathlib import Path

from roundtable.errors import ToolError, ValidationError

ALLOWLIST: frozenset[str] = frozenset(
    {"cargo", "git", "go", "make", "node", "npm", "pnpm", "printf", "pytest", "ruby", "swift", "vitest", "yarn"}
)
SHELL_CHARACTERS: tuple[str, ...] = (";", "|", "&", ">", "<", "`", "$", "\n", "\r")
DEFAULT_TIMEOUT_S = 600.0
HEAD_BYTES = 768 * 1024
TAIL_BYTES = 256 * 1024
READ_CHUNK = 64 * 1024
REAP_TIMEOUT_S = 5.0
_SECRET_ENV = re.compile(r"(?i)token|secret|passw|api_?key|credential|private_?key")

PASSED = "passed"
FAILED = "failed"
TIMED_OUT = "timed_out"
ERROR = "error"


def parse_command(command: str) -> list[str]:
    """The guard: argv for an allowed command, or a `ToolError` saying why not."""
    text = command.strip()
    if not text:
        raise ValidationError("command is required")
    bad = [c for c in SHELL_CHARACTERS if c in text]
    if bad:
        shown = " ".join(json.dumps(c) for c in bad)
        raise ValidationError(
            f"command contains disallowed shell control characters ({shown}); test.run uses no shell, "
            "so pipes, redirects, substitutions and command chaining are not available"
        )
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ValidationError(f"command could not be split into arguments: {exc}") from None
    if not argv:
        raise ValidationError("command is required")
    name = argv[0].rsplit("/", 1)[-1]
    if name not in ALLOWLIST:
        raise ToolError(f"command {json.dumps(name)} is not allowlisted for the agent test surface")
    return argv


def child_environment() -> dict[str, str]:
    """The inherited environment minus anything that looks like a credential."""
    return {k: v for k, v in os.environ.items() if not _SECRET_ENV.search(k)}


class OutputCapture:
    """Keeps the first `head` and the last `tail` bytes of a stream, counting what it drops."""

    def __init__(self, head: int | None = None, tail: int | None = None) -> None:
        self._head_limit = HEAD_BYTES if head is None else head
        self._tail_limit = TAIL_BYTES if tail is None else tail
        self._head = bytearray()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self.dropped = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size > self._tail_limit:
            first = self._tail[0]
            excess = self._tail_size - self._tail_limit
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_size -= len(first)
                self.dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_size -= excess
                self.dropped += excess

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output dropped ...]\n".encode() if self.dropped else b""
        return (bytes(self._head) + middle + b"".join(self._tail)).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Execution:
    status: str
    exit_code: int | None
    output: str
    note: str = ""


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def execute(argv: list[str], cwd: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> Execution:
    """Run argv in `cwd` without a shell; never raises for the command's own failure."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=child_environment(),
            start_new_session=True,
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Execution(ERROR, None, "", f"could not start {argv[0]}: {reason}")
    capture = OutputCapture()

    async def pump() -> int:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(READ_CHUNK):
            capture.add(chunk)
        return await proc.wait()

    try:
        code = await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        _kill_group(proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), REAP_TIMEOUT_S)
        return Execution(TIMED_OUT, proc.returncode, capture.text(), f"timed out after {timeout:g} s")
    except BaseException:
        _kill_group(proc)  # cancelled (client gone, shutdown): leave no process behind
        raise
    # Background processes the command left behind die with its group.
    _kill_group(proc)
    return Execution(PASSED if code == 0 else FAILED, code, capture.text())
