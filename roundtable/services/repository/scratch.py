"""Scratch worktrees for test runs: the tree a proposal's tests see.

`create` snapshots what `patch.apply` would patch — the working tree as it is now: HEAD plus
uncommitted changes plus untracked files that are not ignored, never `.roundtable/` — as a
commit object (a temporary index, `git add -A`, `write-tree`, `commit-tree`: no ref, the real
index and the working tree untouched), checks it out with `git worktree add --detach` into a
private directory (0700) in the system temp directory, outside the project, and applies the
revision's patch there with the options the real apply uses. `remove` deletes the worktree and
its directory and prunes git's record of it; callers run it in `finally`, shielded from cancel.

Proposals record no base revision (the column exists but is never set), so the base is the tree
the patch would be applied to. Hooks are disabled for every git call here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import anyio

from roundtable.errors import PatchDoesNotApply, ToolError
from roundtable.services.repository import git

GIT_TIMEOUT_S = 120.0
_NO_HOOKS = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
_IDENTITY = {
    "GIT_AUTHOR_NAME": "roundtable",
    "GIT_AUTHOR_EMAIL": "roundtable@localhost",
    "GIT_COMMITTER_NAME": "roundtable",
    "GIT_COMMITTER_EMAIL": "roundtable@localhost",
}


@dataclass(frozen=True)
class Scratch:
    root: Path  # the project
    base: Path  # the private directory holding the worktree (and the temporary index)
    path: Path  # the worktree
    commit: str  # the snapshot commit checked out


# git's worktree bookkeeping is not safe against itself: a `worktree prune` that runs while a
# `worktree add` has made its admin directory but not yet written it deletes that directory, and
# the add fails. Adds and prunes of one repository take turns (per event loop, per root).
_ADMIN_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def worktree_admin(root: Path) -> asyncio.Lock:
    """The lock that `git worktree add` and `git worktree prune` of `root` hold."""
    locks = _ADMIN_LOCKS.setdefault(asyncio.get_running_loop(), {})
    return locks.setdefault(os.path.abspath(root), asyncio.Lock())


async def _git(cwd: Path, args: list[str], *, env: dict[str, str] | None = None, stdin: bytes = b"") -> str:
    full_env = {**git._env(), **_IDENTITY, **(env or {})}
    code, out, err = await git.exec_git(cwd, [*_NO_HOOKS, *args], stdin=stdin, env=full_env)
    if code != 0:
        text = (err or out)[: git.OUTPUT_CAP].decode("utf-8", "replace").strip()
        raise ToolError(f"git {args[0]} failed: {text}")
    return out.decode("utf-8", "replace").strip()


async def _ignored(root: Path, rel: str) -> bool:
    try:
        await _git(root, ["check-ignore", "-q", "--", rel])
    except ToolError:
        return False
    return True


def _outside(path: Path, root: Path) -> bool:
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return not (real == real_root or real.startswith(real_root + os.sep))


async def snapshot(root: Path, base: Path, excluded: list[str], *, needed_by: str = "test.run") -> str:
    """A commit object of the working tree (tracked and non-ignored untracked files).
    `needed_by` names what the refusal of a project that is no repository is for."""
    try:
        toplevel = await _git(root, ["rev-parse", "--show-toplevel"])
    except ToolError:
        raise ToolError(f"{needed_by} needs the project to be a git repository (tests run on a scratch worktree)") from None
    if not await asyncio.to_thread(os.path.samefile, toplevel, root):
        raise ToolError(f"{needed_by} needs the project root to be the repository's top level ({toplevel})")
    index = base / "index"
    real_index = await _git(root, ["rev-parse", "--path-format=absolute", "--git-path", "index"])

    def copy_index() -> None:
        if os.path.isfile(real_index):
            shutil.copyfile(real_index, index)

    await asyncio.to_thread(copy_index)
    env = {"GIT_INDEX_FILE": str(index)}
    # Private paths never enter the snapshot. An exclude pathspec naming an ignored path makes
    # `git add` fail, so only paths git would otherwise add are excluded.
    pathspec = ["."]
    for private in (".roundtable", *excluded):
        if not await _ignored(root, private):
            pathspec.append(f":(exclude){private}")
    await _git(root, ["add", "-A", "--", *pathspec], env=env)
    tree = await _git(root, ["write-tree"], env=env)
    head = await git.head(root)
    parents = ["-p", head] if head not in ("no-head", "not-git") else []
    return await _git(root, ["commit-tree", tree, *parents, "-m", "roundtable test snapshot"])


async def create(root: Path, patch: str | None, *, excluded: list[str] | None = None) -> Scratch:
    """A worktree of the current tree with `patch` applied; `PatchDoesNotApply` when it does not."""
    base = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-test-"))
    if not _outside(base, root):
        await asyncio.to_thread(shutil.rmtree, base, True)
        raise ToolError("the temporary directory is inside the project; set TMPDIR to a directory outside it")
    # A unique last component: git names the worktree's admin directory after it.
    path = base / base.name
    scratch = Scratch(root, base, path, "")
    try:
        commit = await snapshot(root, base, excluded or [])
        async with worktree_admin(root):
            await _git(root, ["worktree", "add", "--detach", "--quiet", str(path), commit])
        scratch = Scratch(root, base, path, commit)
        if patch is not None:
            result = await git.run_git(path, git._apply_args(check=False, reverse=False), patch.encode())
            if not result.ok:
                raise PatchDoesNotApply(f"the revision's patch does not apply to the current tree: {result.output}")
    except BaseException:
        with anyio.CancelScope(shield=True):
            await remove(scratch)
        raise
    return scratch


def _force_rmtree(path: Path) -> None:
    """Remove a tree the command may have made read-only."""

    def fix(_func: object, target: str, _exc: object) -> None:
        try:
            parent = os.path.dirname(target)
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
                shutil.rmtree(target, onerror=fix)
            else:
                os.unlink(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


async def remove(scratch: Scratch) -> None:
    """Delete the worktree and its directory, and prune git's record of it (never raises)."""
    try:
        await _git(scratch.root, ["worktree", "remove", "--force", "--force", str(scratch.path)])
    except (ToolError, OSError):
        pass
    await asyncio.to_thread(_force_rmtree, scratch.base)
    try:
        async with worktree_admin(scratch.root):
            await _git(scratch.root, ["worktree", "prune"])
    except (ToolError, OSError):
        pass
