"""Running `git` without a shell: `git apply` (check, apply, reverse, the numstat/summary
reading of a patch) and HEAD lookups.

Every call is an asyncio subprocess with an argv list, the patch on stdin, a timeout and a
capped output. `git apply` checks every hunk before writing anything, so a failed apply leaves
the tree unchanged; it also refuses paths outside the tree and through symlinks.

The `git apply` that writes the tree must not outlive the owner: it runs in its own process
group with `PR_SET_PDEATHSIG` = SIGKILL (Linux), so a SIGKILLed owner takes it along, and the
caller learns its pid (`on_start`) to record next to the transaction; recovery kills a
survivor it finds there (`kill_leftover`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.errors import ToolError

GIT_TIMEOUT_S = 60.0
OUTPUT_CAP = 64 * 1024
VIEW_CAP = 16 * 1024 * 1024
PR_SET_PDEATHSIG = 1


class GitTimedOut(ToolError):
    """git did not finish within its timeout (it was killed)."""


@dataclass(frozen=True)
class GitResult:
    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # Never prompt, never page, never pick up a different repository from the environment.
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(key, None)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_PAGER"] = "cat"
    return env


def _die_with(parent: int) -> Callable[[], None]:
    """A preexec hook: the child is SIGKILLed when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None

    def hook() -> None:
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os._exit(1)

    return hook


async def exec_git(
    cwd: Path,
    args: list[str],
    *,
    stdin: bytes = b"",
    env: dict[str, str] | None = None,
    timeout: float = GIT_TIMEOUT_S,
    merge_stderr: bool = False,
    tied: bool = False,
    on_start: Callable[[int], None] | None = None,
) -> tuple[int, bytes, bytes]:
    """The one way roundtable runs git: an argv (no shell), stdin fed, a timeout, and the child
    killed (and reaped) on timeout or cancellation. Returns (exit status, stdout, stderr); with
    `merge_stderr` stderr is folded into stdout. `tied` runs it in its own process group, killed
    with this process; `on_start` receives its pid."""
    try:
        done = await proc.run(
            ["git", *args],
            cwd=cwd,
            stdin=stdin,
            env=env if env is not None else _env(),
            timeout=timeout,
            merge_stderr=merge_stderr,
            new_group=tied,
            preexec_fn=_die_with(os.getpid()) if tied else None,
            on_start=on_start,
        )
    except OSError as exc:
        raise ToolError(f"git could not start: {exc.strerror}") from None
    if done.timed_out:
        raise GitTimedOut(f"git {args[0]} timed out after {timeout:g}s")
    return (done.code if done.code is not None else -1), done.out, done.err


async def run_git(
    cwd: Path,
    args: list[str],
    stdin: bytes = b"",
    timeout: float = GIT_TIMEOUT_S,
    *,
    isolated: bool = False,
    tied: bool = False,
    on_start: Callable[[int], None] | None = None,
    extra_env: dict[str, str] | None = None,
) -> GitResult:
    """Run `git <args>` in `cwd`; combined stdout+stderr is returned (capped). `isolated` stops
    git from discovering a repository above `cwd` (for scratch directories); `extra_env` sets
    variables such as a temporary `GIT_INDEX_FILE` or the commit author."""
    env = _env()
    env.update(extra_env or {})
    if isolated:
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    code, out, _err = await exec_git(
        cwd, args, stdin=stdin, env=env, timeout=timeout, merge_stderr=True, tied=tied, on_start=on_start
    )
    return GitResult(code, out[:OUTPUT_CAP].decode("utf-8", errors="replace").strip())


def _apply_args(*, check: bool, reverse: bool) -> list[str]:
    args = ["apply", "--whitespace=nowarn"]
    if check:
        args.append("--check")
    if reverse:
        args.append("-R")
    return [*args, "-"]


def _failure(result: GitResult) -> str:
    return f"patch apply failed: exit status {result.returncode}: {result.output}"


async def dry_run(root: Path, patch: bytes, *, reverse: bool = False) -> GitResult:
    """`git apply --check`: whether the patch applies cleanly to `root`, and git's own words."""
    return await run_git(root, _apply_args(check=True, reverse=reverse), patch)


async def apply_check(root: Path, patch: bytes, *, reverse: bool = False) -> str:
    """Dry run: `""` if the patch applies cleanly to `root`, else the error text."""
    result = await dry_run(root, patch, reverse=reverse)
    return "" if result.ok else _failure(result)


async def apply(
    root: Path, patch: bytes, *, reverse: bool = False, on_start: Callable[[int], None] | None = None
) -> None:
    """Apply (all hunks or none) to the files under `root`; `ToolError` on failure. The child
    dies with this process (see the module docstring)."""
    result = await run_git(root, _apply_args(check=False, reverse=reverse), patch, tied=True, on_start=on_start)
    if not result.ok:
        raise ToolError(_failure(result))


@dataclass(frozen=True)
class PatchView:
    """Raw output of `git apply --numstat --summary -z`."""

    returncode: int
    stdout: bytes
    stderr: str


async def read_patch_view(root: Path, patch: bytes, timeout: float = GIT_TIMEOUT_S) -> PatchView:
    """How git reads a patch (names, counts, operations, modes); nothing is applied."""
    args = ["-c", "core.quotepath=false", "apply", "--whitespace=nowarn", "--numstat", "--summary", "-z", "-"]
    try:
        code, out, err = await exec_git(root, args, stdin=patch, timeout=timeout)
    except GitTimedOut:
        raise GitTimedOut(f"git apply --numstat timed out after {timeout:g}s") from None
    if len(out) > VIEW_CAP:
        raise ToolError("git's reading of the patch is too large")
    return PatchView(code or 0, out, err[:OUTPUT_CAP].decode("utf-8", errors="replace").strip())


def _start_time(pid: int) -> str:
    """The start time of a process (clock ticks since boot, from /proc), `""` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return ""
    # The command name is in parentheses and may contain spaces: split after the last ')'.
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else ""


def process_token(pid: int) -> str:
    """`<pid>:<start time>`: names one process, not a pid later reused."""
    return f"{pid}:{_start_time(pid)}"


def kill_leftover(token: str, wait_s: float = 5.0) -> str:
    """Kill (SIGKILL, its whole process group) a process recorded with `process_token` if it is
    still the same process, and wait until it is gone. Blocking: run in a worker thread.
    Returns what happened, for the recovery report."""
    pid_text, _, started = token.partition(":")
    if not pid_text.isdigit():
        return ""
    pid = int(pid_text)
    if not started or _start_time(pid) != started:
        return ""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return ""
    except PermissionError:
        return f"git apply (pid {pid}) is still running and cannot be killed"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        state = _start_time(pid)
        if state != started or _zombie(pid):
            return f"killed a leftover git apply (pid {pid})"
        time.sleep(0.02)
    return f"git apply (pid {pid}) did not exit after SIGKILL"


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return True
    rest = data[data.rfind(b")") + 2 :].split()
    return bool(rest) and rest[0] in (b"Z", b"X")


async def head(root: Path) -> str:
    """The commit HEAD names, `no-head` on an unborn branch, `not-git` outside a repository."""
    result = await run_git(root, ["rev-parse", "--verify", "-q", "HEAD"])
    if result.ok:
        return result.output.splitlines()[0] if result.output else "no-head"
    probe = await run_git(root, ["rev-parse", "--show-toplevel"])
    return "no-head" if probe.ok else "not-git"
