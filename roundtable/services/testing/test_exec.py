"""Running one test command: which commands are allowed, the sandboxed subprocess, the timeout,
the memory limit and the output cap.

Agents never write a command line. The commands are the operator's: `tests.commands` in
`POLICIES.ROUNDTABLE.md` (name → exact argv) or, when none is configured, those the
repository's markers imply (what `test.suggest` lists). An agent names one — by its name or by
its exact argument string — and anything else is refused with the list of allowed commands. The
operator (in-process callers and the legacy socket) may also give a free command line: it is
split with `shlex` (no shell: shell control characters are refused) and still runs on the
revision, in the sandbox. The console's `T` key only runs allowed commands.

A configured argv may hold the slots `{paths}` and `{k}` (whole elements): an agent narrows such a
command to some repository paths (optionally `path::test`) or a selection expression, validated
here (`check_narrowing`: clean paths inside the root, never an option; `k` from a strict
character set) and filled in by `fill` — still an argv, never a shell.

The process is started through the sandbox launcher (`roundtable.sandbox`) in its own session,
with stdin closed and a minimal environment (`PATH`, locale, time zone, terminal type; `HOME`
and `TMPDIR` point at the sandbox's private `/tmp`). On timeout or cancellation the launcher's whole process
group is killed; the sandbox's PID namespace dies with it, so nothing the command started
survives. Output (stdout and stderr combined) is kept up to a cap: the head and the tail, with a
marker saying how much was dropped.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.domain import TestRunStatus
from roundtable.errors import ToolError, ValidationError
from roundtable.sandbox.runner import explain_launch_failure, hand_over, launcher_argv, open_spec
from roundtable.sandbox.spec import MARKER, SETUP_FAILED, Spec
from roundtable.services.policy.engine import POLICY_FILE, TestsPolicy
from roundtable.services.repository.pathguard import resolve_repo_path
from roundtable.services.testing import test_suggest

SHELL_CHARACTERS: tuple[str, ...] = (";", "|", "&", ">", "<", "`", "$", "\n", "\r")
DEFAULT_TIMEOUT_S = 600.0
HEAD_BYTES = 768 * 1024
TAIL_BYTES = 256 * 1024
MAX_COMMAND_CHARS = 1_000
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f]")
_SECRET_ENV = re.compile(r"(?i)token|secret|passw|api_?key|credential|private_?key")


PATHS_SLOT = "{paths}"
K_SLOT = "{k}"
MAX_PATHS = 50
MAX_K_CHARS = 200
# A selection expression (pytest's -k): names, spaces, parentheses; `and`/`or`/`not` are words.
_K_SAFE = re.compile(r"[A-Za-z0-9_ ()]+")
# The test inside a file: pytest's node id after `::` (class and function names, parameter ids).
_NODE_SAFE = re.compile(r"[A-Za-z0-9_.\-\[\]]+(?:::[A-Za-z0-9_.\-\[\]]+)*")


@dataclass(frozen=True)
class Narrowing:
    """What an agent narrows a parameterised command to: repository paths (optionally with a
    `::test` node id) for `{paths}`, a selection expression for `{k}`."""

    paths: tuple[str, ...] = ()
    k: str = ""

    def __bool__(self) -> bool:
        return bool(self.paths or self.k)

    def label(self) -> str:
        parts = list(self.paths) + ([f"-k {self.k}"] if self.k else [])
        return " ".join(parts)


def check_narrowing(root: Path, paths: list[str], k: str) -> Narrowing:
    """The narrowing an agent asked for, validated: every path a clean repository path inside
    the root (not under `.git/`/`.roundtable/`, never an option), `k` from a strict character
    set. `ValidationError` names the offending value."""
    if len(paths) > MAX_PATHS:
        raise ValidationError(f"test.run: at most {MAX_PATHS} paths")
    clean: list[str] = []
    for index, raw in enumerate(paths):
        base, sep, node = raw.partition("::")
        if sep and not _NODE_SAFE.fullmatch(node):
            raise ValidationError(
                f"test.run: paths[{index}]: the test name after :: may hold letters, digits, _ . - [ ]"
            )
        if not base or base.startswith("-") or CONTROL_CHARACTERS.search(base):
            raise ValidationError(f"test.run: paths[{index}] must be a repository path")
        try:
            _abs, rel = resolve_repo_path(root, base)
        except ToolError as exc:
            raise ValidationError(f"test.run: paths[{index}]: {exc}") from None
        if rel.startswith("-"):
            raise ValidationError(f"test.run: paths[{index}] must be a repository path")
        clean.append(rel + (sep + node if sep else ""))
    text = k.strip()
    if text and (len(text) > MAX_K_CHARS or not _K_SAFE.fullmatch(text)):
        raise ValidationError(
            f"test.run: k may hold only letters, digits, _, spaces and parentheses (at most {MAX_K_CHARS} characters)"
        )
    return Narrowing(tuple(clean), text)


def fill(name: str, argv: tuple[str, ...], narrowing: Narrowing) -> list[str]:
    """`argv` with its slots filled: `{paths}` by the paths (none: nothing), `{k}` by the
    expression (none: the slot and the option right before it, such as `-k`, are dropped).
    Narrowing a command that has no slot for it is refused."""
    if narrowing.paths and PATHS_SLOT not in argv:
        raise ValidationError(f"test command {name} takes no paths (its argv in the policy has no {PATHS_SLOT})")
    if narrowing.k and K_SLOT not in argv:
        raise ValidationError(f"test command {name} takes no k (its argv in the policy has no {K_SLOT})")
    out: list[str] = []
    for arg in argv:
        if arg == PATHS_SLOT:
            out.extend(narrowing.paths)
        elif arg == K_SLOT:
            if narrowing.k:
                out.append(narrowing.k)
            elif out and out[-1].startswith("-"):
                out.pop()
        else:
            out.append(arg)
    return out


@dataclass(frozen=True)
class Command:
    """One allowed test command: its name, its exact argv and where it comes from."""

    name: str
    argv: tuple[str, ...]
    source: str

    @property
    def text(self) -> str:
        return shlex.join(self.argv)

    @property
    def takes(self) -> list[str]:
        """The narrowings this command accepts (`paths`, `k`)."""
        return [word for word, slot in (("paths", PATHS_SLOT), ("k", K_SLOT)) if slot in self.argv]

    def matches(self, command: str) -> bool:
        return command in (self.name, self.text, " ".join(self.argv))

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "argv": list(self.argv),
            "command": self.text,
            "source": self.source,
        }
        if self.takes:
            out["takes"] = self.takes
        return out


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


def choose_command(
    command: str, allowed: list[Command], *, operator: bool, narrowing: Narrowing = Narrowing()
) -> tuple[str, list[str]]:
    """(label, argv) for a requested command: an allowed one for anyone (narrowed to paths or
    a selection where its argv has the slot); for the operator also a free command line.
    `ValidationError`/`ToolError` say why not. A narrowed run's label names its narrowing."""
    text = command.strip()
    if not text:
        raise ValidationError("command is required")
    if len(text) > MAX_COMMAND_CHARS:
        raise ValidationError(f"command must be at most {MAX_COMMAND_CHARS} characters")
    found = resolve(text, allowed)
    if found is not None:
        argv = fill(found.name, found.argv, narrowing)
        return (f"{found.name} {narrowing.label()}" if narrowing else found.name), argv
    if narrowing:
        raise ToolError(f"command {json.dumps(text)} is not a configured test command; only those take paths or k")
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
    capture = OutputCapture()
    if spec is not None:
        await hand_over(spec)
    try:
        with contextlib.ExitStack() as stack:
            fds: tuple[int, ...] = ()
            program = argv
            if spec is not None:
                fds = (stack.enter_context(open_spec(spec)),)
                program = launcher_argv(fds[0])
            done = await proc.run(
                program,
                cwd=cwd,
                env=child_environment(sandboxed=spec is not None),
                timeout=timeout,
                new_group=True,  # background processes the command leaves behind die with its group
                sink=capture.add,
                pass_fds=fds,
            )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Execution(TestRunStatus.ERROR, None, "", f"could not start {argv[0]}: {reason}")
    if done.timed_out:
        return Execution(TestRunStatus.TIMED_OUT, done.code, capture.text(), f"timed out after {timeout:g} s")
    code = done.code
    output = capture.text()
    if spec is not None and code == SETUP_FAILED and (why := _setup_failure(output)):
        return Execution(TestRunStatus.ERROR, code, output, f"the sandbox could not be set up: {why}")
    if spec is not None and (why := explain_launch_failure(spec, code, output)):
        return Execution(TestRunStatus.FAILED, code, output, why)  # a launcher's own error says nothing of why
    return Execution(TestRunStatus.PASSED if code == 0 else TestRunStatus.FAILED, code, output)
