"""Running one test command: which commands are allowed, the sandboxed subprocess, the timeout,
the memory limit and the output cap (spec/tools.md §3.10; DESIGN §4.20, §4.24).

Agents never write a command line. The commands are the operator's: `tests.commands` in
`POLICIES.ROUNDTABLE.md` (name → exact argv) or, when none is configured, those the
repository's markers imply (what `test.suggest` lists). An agent names one — by its name or by
its exact argument string — and anything else is refused with the list of allowed commands. The
operator (in-process callers and the legacy socket) may also give a free command line: it is
split with `shlex` (no shell: shell control characters are refused) and still runs on the
revision, in the sandbox. The console's `T` key only runs allowed commands.

The process is started through the sandbox launcher (`roundtable.sandbox`) in its own session,
with stdin closed and a minimal environment (`PATH`, locale, time zone, terminal type; `HOME`
and `TMPDIR` point at the sandbox's private `/tmp`). On timeout or cancellation the launcher's whole process
group is killed; the sandbox's PID namespace dies with it, so nothing the command started
survives. Output (stdout and stderr combined) is kept up to a cap: the head and the tail, with a
marker saying how much was dropped.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.errors import ToolError, ValidationError
from roundtable.sandbox.runner import launcher_argv
from roundtable.sandbox.spec import MARKER, SETUP_FAILED, Spec
from roundtable.services import test_suggest
from roundtable.services.policy import POLICY_FILE, TestsPolicy

SHELL_CHARACTERS: tuple[str, ...] = (";", "|", "&", ">", "<", "`", "$", "\n", "\r")
DEFAULT_TIMEOUT_S = 600.0
HEAD_BYTES = 768 * 1024
TAIL_BYTES = 256 * 1024
MAX_COMMAND_CHARS = 1_000
_SECRET_ENV = re.compile(r"(?i)token|secret|passw|api_?key|credential|private_?key")

PASSED = "passed"
FAILED = "failed"
TIMED_OUT = "timed_out"
ERROR = "error"


@dataclass(frozen=True)
class Command:
    """One allowed test command: its name, its exact argv and where it comes from."""

    name: str
    argv: tuple[str, ...]
    source: str

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    def matches(self, command: str) -> bool:
        return command in (self.name, self.text, " ".join(self.argv))

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "argv": list(self.argv), "command": self.text, "source": self.source}


def allowed_commands(root: Path, tests: TestsPolicy, touched: list[str] | None = None) -> list[Command]:
    """The policy's commands, or — when the policy configures none — what `test.suggest` lists
    from the repository's markers (for the root, and for the touched files' directories when
    a proposal is concerned). Blocking reads: call from a worker thread."""
    if tests.commands:
        return [Command(name, tuple(argv), POLICY_FILE) for name, argv in tests.commands.items()]
    found = {s.command: s for s in test_suggest.suggest(root)}
    if touched:
        found.update({s.command: s for s in test_suggest.suggest(root, touched)})
    return [
        Command(s.command, tuple(shlex.split(s.command)), s.marker)
        for s in sorted(found.values(), key=lambda s: s.command)
    ]


def describe(allowed: list[Command]) -> str:
    if not allowed:
        return (
            f"no test command is configured (tests.commands in {POLICY_FILE}) and the repository has no "
            "test markers (pyproject.toml, package.json, go.mod, Cargo.toml, a Makefile test target)"
        )
    return "allowed: " + "; ".join(c.name if c.name == c.text else f"{c.name} ({c.text})" for c in allowed)


def resolve(command: str, allowed: list[Command]) -> Command | None:
    text = command.strip()
    for candidate in allowed:
        if candidate.matches(text):
            return candidate
    return None


def choose_command(command: str, allowed: list[Command], *, operator: bool) -> tuple[str, list[str]]:
    """(label, argv) for a requested command: an allowed one for anyone; for the operator also a
    free command line. `ValidationError`/`ToolError` say why not."""
    text = command.strip()
    if not text:
        raise ValidationError("command is required")
    if len(text) > MAX_COMMAND_CHARS:
        raise ValidationError(f"command must be at most {MAX_COMMAND_CHARS} characters")
    found = resolve(text, allowed)
    if found is not None:
        return found.name, list(found.argv)
    if not operator:
        raise ToolError(
            f"command {json.dumps(text)} is not one of the test commands the operator configured; {describe(allowed)}"
        )
    return text, parse_command(text)


def parse_command(command: str) -> list[str]:
    """The operator's free command line as argv (no shell), or a `ValidationError` saying why not."""
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
    return argv


SANDBOX_ENV = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "SOURCE_DATE_EPOCH", "NO_COLOR")


def child_environment(*, sandboxed: bool = True) -> dict[str, str]:
    """In a sandbox, a minimal environment: `PATH`, the locale, the time zone and the terminal
    type (the revision's code could print anything else into the log an agent reads), with
    `HOME` and `TMPDIR` the sandbox's private /tmp. Unsandboxed (the operator's confirmed
    choice): the inherited environment minus anything that looks like a credential."""
    if not sandboxed:
        return {k: v for k, v in os.environ.items() if not _SECRET_ENV.search(k)}
    env = {k: v for k, v in os.environ.items() if k in SANDBOX_ENV or k.startswith("LC_")}
    env.setdefault("PATH", os.defpath)
    env["HOME"] = "/tmp"
    env["TMPDIR"] = "/tmp"
    return env


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


def _setup_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(MARKER):
            return line[len(MARKER) :].strip()
    return ""


async def execute(
    argv: list[str], cwd: Path, *, timeout: float = DEFAULT_TIMEOUT_S, spec: Spec | None = None
) -> Execution:
    """Run argv in `cwd` — through the sandbox launcher when `spec` is given (its argv and
    workdir are used), else directly — without a shell; never raises for the command's failure."""
    program = launcher_argv(spec) if spec is not None else argv
    capture = OutputCapture()
    try:
        done = await proc.run(
            program,
            cwd=cwd,
            env=child_environment(sandboxed=spec is not None),
            timeout=timeout,
            new_group=True,  # background processes the command leaves behind die with its group
            sink=capture.add,
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Execution(ERROR, None, "", f"could not start {program[0]}: {reason}")
    if done.timed_out:
        return Execution(TIMED_OUT, done.code, capture.text(), f"timed out after {timeout:g} s")
    code = done.code
    output = capture.text()
    if spec is not None and code == SETUP_FAILED and (why := _setup_failure(output)):
        return Execution(ERROR, code, output, f"the sandbox could not be set up: {why}")
    return Execution(PASSED if code == 0 else FAILED, code, output)
