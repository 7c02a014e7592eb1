"""Running `git` without a shell: `git apply` (check, apply, reverse) and HEAD lookups.

Every call is an asyncio subprocess with an argv list, the patch on stdin, a timeout and a
capped output. `git apply` checks every hunk before writing anything, so a failed apply leaves
the tree unchanged; it also refuses paths outside the tree and through symlinks.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from roundtable.errors import ToolError

GIT_TIMEOUT_S = 60.0
OUTPUT_CAP = 64 * 1024


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


async def run_git(
    cwd: Path, args: list[str], stdin: bytes = b"", timeout: float = GIT_TIMEOUT_S, *, isolated: bool = False
) -> GitResult:
    """Run `git <args>` in `cwd`; combined stdout+stderr is returned (capped). `isolated` stops
    git from discovering a repository above `cwd` (for scratch directories)."""
    env = _env()
    if isolated:
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *args,
            cwd=str(cwd),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
        )
    except OSError as exc:
        raise ToolError(f"git could not start: {exc.strerror}") from None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ToolError(f"git {args[0]} timed out after {timeout:g}s") from None
    except asyncio.CancelledError:
        proc.kill()
        await proc.wait()
        raise
    text = out[:OUTPUT_CAP].decode("utf-8", errors="replace").strip()
    return GitResult(proc.returncode if proc.returncode is not None else -1, text)


def _apply_args(*, check: bool, reverse: bool) -> list[str]:
    args = ["apply", "--whitespace=nowarn"]
    if check:
        args.append("--check")
    if reverse:
        args.append("-R")
    return [*args, "-"]


def _failure(result: GitResult) -> str:
    return f"patch apply failed: exit status {result.returncode}: {result.output}"


async def apply_check(root: Path, patch: bytes, *, reverse: bool = False) -> str:
    """Dry run: `""` if the patch applies cleanly to `root`, else the error text."""
    result = await run_git(root, _apply_args(check=True, reverse=reverse), patch)
    return "" if result.ok else _failure(result)


async def apply(root: Path, patch: bytes, *, reverse: bool = False) -> None:
    """Apply (all hunks or none) to the files under `root`; `ToolError` on failure."""
    result = await run_git(root, _apply_args(check=False, reverse=reverse), patch)
    if not result.ok:
        raise ToolError(_failure(result))


async def head(root: Path) -> str:
    """The commit HEAD names, `no-head` on an unborn branch, `not-git` outside a repository."""
    result = await run_git(root, ["rev-parse", "--verify", "-q", "HEAD"])
    if result.ok:
        return result.output.splitlines()[0] if result.output else "no-head"
    probe = await run_git(root, ["rev-parse", "--show-toplevel"])
    return "no-head" if probe.ok else "not-git"
