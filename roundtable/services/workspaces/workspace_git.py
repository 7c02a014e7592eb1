"""Git on a workspace an agent controlled, without running anything the agent wrote.

A workspace is a git worktree whose files an agent edited freely: everything in it is hostile.
Every git command here therefore

- names the repository explicitly (`GIT_DIR` = the worktree's administrative directory inside
  the project's repository, recorded when the worktree was made; `GIT_WORK_TREE` = the
  workspace), so the workspace's own `.git` — which the agent could replace by a file pointing
  elsewhere or a directory with its own config — is never read; `verify` checks that it still
  points where roundtable made it before anything else runs;
- runs without hooks (`core.hooksPath=/dev/null`), without a file-system monitor
  (`core.fsmonitor=false`), without the system configuration (`GIT_CONFIG_NOSYSTEM`), with no
  external diff or text conversion (`--no-ext-diff --no-textconv`), and with every filter and
  merge driver the repository's configuration defines switched off, so a `.gitattributes` the
  agent wrote cannot select one (`neutral_config`);
- reads the workspace through a private temporary index, never the worktree's own, and writes
  the objects it makes of the agent's files into a private object directory, never the project's.

`private_repo` makes a session a repository of its own for its workspace (the session's
`GIT_DIR`), since the project's repository, which the worktree's `.git` points at, does not exist
inside the sandbox: only the base tree's objects, one parentless commit, no configuration, hooks
or refs of the project. Roundtable itself never runs git with that repository.

`scan` walks the workspace first (no symlink followed, nothing but `lstat`) and refuses what must
never reach git's reading: a nested repository, roundtable's private `.roundtable/`, a file larger
than `Bounds.max_file_bytes`, a FIFO, socket or device — each only where git would see it (not
ignored). It then holds the workspace to its cheap `Bounds` — how many files are new or changed
in size against the base, and their total size — before git hashes anything, so a workspace of
thousands of files or gigabytes is refused at the cost of that walk (not of hashing it all). Git-ignored files count for nothing,
as for the diff; the figures that need git (the base's sizes, what is ignored) are asked only
when the plain walk is over a bound.
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from roundtable import proc
from roundtable.errors import ToolError, ValidationError
from roundtable.services.repository import git
from roundtable.services.repository.patches import MAX_PATCH_BYTES

_BASE_CONFIG = [
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "-c", "diff.external=",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.renames=false",
]  # fmt: skip
IDENTITY = {
    "GIT_AUTHOR_NAME": "roundtable",
    "GIT_AUTHOR_EMAIL": "roundtable@localhost",
    "GIT_COMMITTER_NAME": "roundtable",
    "GIT_COMMITTER_EMAIL": "roundtable@localhost",
}
DIFF_ARGS = [
    "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--submodule=short",
    "--src-prefix=a/", "--dst-prefix=b/",
]  # fmt: skip


@dataclass(frozen=True)
class Tree:
    """One workspace as git is asked about it."""

    root: Path  # the project (its repository holds the worktree's administrative directory)
    path: Path  # the workspace
    gitdir: Path  # the worktree's administrative directory


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**git._env(), **IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", **(extra or {})}
    return env


def _subcommand(args: list[str]) -> str:
    """The git command `args` run (past the `-c name=value` options)."""
    i = 0
    while i < len(args) and args[i] == "-c":
        i += 2
    return args[i] if i < len(args) else "(none)"


async def _run(cwd: Path, args: list[str], env: dict[str, str], *, ok: tuple[int, ...] = (0,)) -> tuple[int, bytes]:
    code, out, err = await git.exec_git(cwd, args, env=env)
    if code not in ok:
        text = (err or out)[: git.OUTPUT_CAP].decode("utf-8", "replace").strip()
        raise ToolError(f"git {_subcommand(args)} failed: {text}")
    return code, out


async def repo_git(root: Path, args: list[str], *, env: dict[str, str] | None = None) -> str:
    """git in the project's own repository (trusted), hooks and monitor off."""
    _code, out = await _run(root, [*_BASE_CONFIG, *args], _env(env))
    return out.decode("utf-8", "replace").strip()


async def neutral_config(root: Path) -> list[str]:
    """`-c` options switching off every filter and merge driver the repository's configuration
    defines (a workspace's `.gitattributes` may name any of them): a filter becomes a no-op; a
    merge driver has no command, so a merge that would need it fails instead of running it."""
    code, out = await _run(
        root, [*_BASE_CONFIG, "config", "-z", "--get-regexp", r"^(filter|merge)\."], _env(), ok=(0, 1)
    )
    filters: set[str] = set()
    merges: set[str] = set()
    for entry in out.decode("utf-8", "replace").split("\0"):
        key = entry.split("\n", 1)[0]
        kind, _, rest = key.partition(".")
        if "." not in rest:
            continue  # `merge.renames` and other plain keys name no driver
        name = rest[: rest.rindex(".")]
        (filters if kind == "filter" else merges).add(name)
    out_args: list[str] = []
    for name in sorted(filters):
        for field in ("clean", "smudge", "process"):
            out_args += ["-c", f"filter.{name}.{field}="]
        out_args += ["-c", f"filter.{name}.required=false"]
    for name in sorted(merges):
        out_args += ["-c", f"merge.{name}.driver="]
    return out_args if code == 0 else []


async def private_repo(root: Path, base_tree: str, work_tree: Path, dest: Path) -> None:
    """A repository of the agent's own at `dest` (a new directory), so that git works inside a
    session's sandbox, where the project's repository does not exist: the objects of the
    workspace's base tree only (no history, no other branch, nothing the checkout does not
    already show), one parentless commit of that tree as a detached HEAD, its index, and
    `core.worktree` the workspace. None of the project's configuration, hooks or refs is copied.
    Roundtable never runs git with it; the session may do what it likes with it (the session's
    `GIT_DIR`). Nothing in the workspace is read while it is made."""
    await _run(root, [*_BASE_CONFIG, "init", "--quiet", "--bare", str(dest)], _env())
    own = _env({"GIT_DIR": str(dest)})
    listed = await repo_git(root, ["ls-tree", "-r", "-t", "-z", base_tree])
    # "<mode> <type> <id>\t<path>" per entry; a submodule's commit is not this repository's.
    found = [entry.split("\t", 1)[0].split(" ") for entry in listed.split("\0") if entry]
    ids = f"{base_tree}\n" + "".join(f"{oid}\n" for _mode, kind, oid in found if kind in ("blob", "tree"))
    # Packed straight into the new repository (`<dest>/objects/pack/pack-<hash>.pack` and .idx).
    code, _out, err = await git.exec_git(
        root,
        [*_BASE_CONFIG, "pack-objects", "--quiet", str(dest / "objects" / "pack" / "pack")],
        stdin=ids.encode(),
        env=_env(),
    )
    if code != 0:
        raise ToolError(f"git pack-objects failed: {err[: git.OUTPUT_CAP].decode('utf-8', 'replace').strip()}")
    _code, out = await _run(dest, [*_BASE_CONFIG, "commit-tree", base_tree, "-m", "workspace base"], own)
    commit = out.decode("ascii", "replace").strip()
    await _run(dest, [*_BASE_CONFIG, "update-ref", "--no-deref", "HEAD", commit], own)
    await _run(dest, [*_BASE_CONFIG, "config", "core.bare", "false"], own)
    await _run(dest, [*_BASE_CONFIG, "config", "core.worktree", str(work_tree)], own)
    await _run(dest, [*_BASE_CONFIG, "read-tree", "HEAD"], own)  # the index; the files are not read


def common_objects(tree: Tree) -> Path:
    """The project repository's object directory, from the worktree's record (`commondir`)."""
    try:
        common = (tree.gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        raise ToolError(f"the worktree record {tree.gitdir} has no commondir") from None
    return (tree.gitdir / common).resolve() / "objects"


async def _tree_env(tree: Tree, index: Path, objects: Path | None) -> tuple[dict[str, str], list[str]]:
    """The environment and `-c` options of a git command on the workspace."""
    extra = {"GIT_DIR": str(tree.gitdir), "GIT_WORK_TREE": str(tree.path), "GIT_INDEX_FILE": str(index)}
    if objects is not None:
        await asyncio.to_thread(os.makedirs, objects, 0o700, True)
        extra["GIT_OBJECT_DIRECTORY"] = str(objects)
        extra["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(common_objects(tree))
    return _env(extra), [*_BASE_CONFIG, *await neutral_config(tree.root)]


async def tree_git(
    tree: Tree, args: list[str], *, index: Path, objects: Path | None = None, ok: tuple[int, ...] = (0,)
) -> tuple[int, bytes]:
    """git on the workspace through `index`; the workspace's `.git` is never consulted. With
    `objects` (a private directory), every object git writes — the agent's blobs, trees, merge
    results — goes there, the project's objects read as alternates: nothing the agent wrote
    enters the project's repository, and it is gone with the directory."""
    env, config = await _tree_env(tree, index, objects)
    return await _run(tree.path, [*config, *args], env, ok=ok)


class TooLarge(ValidationError):
    """git printed more than the caller would read."""


async def tree_output(tree: Tree, args: list[str], *, index: Path, objects: Path | None, cap: int) -> bytes:
    """The output of a git command on the workspace (as `tree_git`), read up to `cap` bytes:
    beyond that the rest is dropped as it comes and `TooLarge` is raised, so a workspace full of
    changes never fills the owner's memory."""
    env, config = await _tree_env(tree, index, objects)
    chunks: list[bytes] = []
    size = 0
    over = False

    def sink(chunk: bytes) -> None:
        nonlocal size, over
        if over or size + len(chunk) > cap:
            over = True
            return
        chunks.append(chunk)
        size += len(chunk)

    argv = ["git", *config, "-c", "core.safecrlf=false", *args]
    try:
        done = await proc.run(argv, cwd=tree.path, env=env, timeout=git.GIT_TIMEOUT_S, sink=sink)
    except OSError as exc:
        raise ToolError(f"git could not start: {exc.strerror}") from None
    if done.timed_out:
        raise ToolError(f"git {args[0]} timed out after {git.GIT_TIMEOUT_S:g}s")
    if over:
        raise TooLarge(f"workspace refused: its diff is larger than {cap // (1024 * 1024)} MiB")
    out = b"".join(chunks)
    if done.code != 0:
        text = out[: git.OUTPUT_CAP].decode("utf-8", "replace").strip()
        raise ToolError(f"git {args[0]} failed: {text}")
    return out


def verify(tree: Tree) -> None:
    """The workspace is a directory whose `.git` is the file roundtable's `git worktree add`
    wrote, pointing at the recorded administrative directory, which points back. Blocking."""
    try:
        st = os.lstat(tree.path)
    except OSError:
        raise ValidationError(f"workspace {tree.path} no longer exists") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ValidationError(f"workspace {tree.path} is not a directory")
    dotgit = tree.path / ".git"
    try:
        st = os.lstat(dotgit)
        if not stat.S_ISREG(st.st_mode):
            raise ValidationError("the workspace's .git is no longer the file roundtable made (refused)")
        text = dotgit.read_text(encoding="utf-8", errors="replace")
        back = (tree.gitdir / "gitdir").read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise ValidationError("the workspace's .git is missing or unreadable (refused)") from None
    if text.strip() != f"gitdir: {tree.gitdir}" or Path(back.strip()) != dotgit:
        raise ValidationError("the workspace's .git no longer points at its worktree record (refused)")


@dataclass(frozen=True)
class Bounds:
    """What a workspace may hold before git reads any of it (`workspaces.max_files`,
    `workspaces.max_bytes`, `workspaces.max_file_bytes` in the configuration)."""

    # Files git would add that are not in the base or differ from it in size (the base's own files
    # are the project's), and their total size.
    max_files: int = 1000
    max_bytes: int = 64 * 1024 * 1024
    # Any one file git would read.
    max_file_bytes: int = MAX_PATCH_BYTES


def _size(size: int) -> str:
    """A byte count as people read it: 900 bytes, 12.5 KiB, 600.0 MiB."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:,.1f} KiB"
    return f"{size / (1024 * 1024):,.1f} MiB"


def _walk(path: Path, max_file_bytes: int = MAX_PATCH_BYTES) -> tuple[list[tuple[str, str]], list[tuple[str, int]]]:
    """(relative path, problem) for everything in the workspace git must not read, and (relative
    path, size) of every file and symbolic link git could add."""
    found: list[tuple[str, str]] = []
    files: list[tuple[str, int]] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(path / rel_dir if rel_dir else path))
        except OSError as exc:
            found.append((rel_dir or ".", f"cannot be read ({exc.strerror})"))
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not rel_dir and entry.name == ".git":
                continue  # checked by `verify`
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not rel_dir and entry.name == ".roundtable":
                found.append((rel, "is roundtable's private state and never part of a workspace"))
            elif entry.name == ".git":
                found.append((rel_dir, "is a nested git repository (its .git is not proposed)"))
            elif stat.S_ISDIR(st.st_mode):
                stack.append(rel)
            elif stat.S_ISREG(st.st_mode):
                files.append((rel, st.st_size))
                if st.st_size > max_file_bytes:
                    limit = f"{_size(max_file_bytes)} (workspaces.max_file_bytes)"
                    found.append((rel, f"is {_size(st.st_size)}, larger than {limit}"))
            elif stat.S_ISLNK(st.st_mode):
                files.append((rel, st.st_size))
            else:
                found.append((rel, "is not a regular file (a FIFO, socket or device)"))
    return found, files


async def scan(tree: Tree, index: Path, base_tree: str = "", bounds: Bounds | None = None) -> None:
    """Refuse the first problem `_walk` finds that git would see (not ignored; `.roundtable/`
    is refused even when ignored), then a workspace over its `bounds` (see `Bounds`)."""
    bounds = bounds or Bounds()
    problems, files = await asyncio.to_thread(_walk, tree.path, bounds.max_file_bytes)
    if problems:
        candidates = [rel for rel, why in problems if not why.startswith("is roundtable's")]
        ignored = set(await _ignored(tree, index, candidates)) if candidates else set()
        for rel, why in problems:
            if why.startswith("is roundtable's") or rel not in ignored:
                shown = repr(rel)[1:-1] if rel != "." else "the workspace"
                raise ValidationError(f"workspace refused: {shown} {why}")
    if _within(files, bounds):
        return  # the common case: no git asked
    if base_tree:
        base = await _base_sizes(tree.root, base_tree)
        files = await asyncio.to_thread(lambda: [(rel, size) for rel, size in files if base.get(rel) != size])
    if not _within(files, bounds):
        files = await _not_ignored(tree, index, files)
    count, total = len(files), sum(size for _rel, size in files)
    if count > bounds.max_files:
        raise ValidationError(
            f"workspace refused: {count:,} files are new or changed against its base (not git-ignored), "
            f"more than workspaces.max_files ({bounds.max_files:,})"
        )
    if total > bounds.max_bytes:
        raise ValidationError(
            f"workspace refused: its new or changed files (not git-ignored) hold {_size(total)}, "
            f"more than workspaces.max_bytes ({_size(bounds.max_bytes)})"
        )


def _within(files: list[tuple[str, int]], bounds: Bounds) -> bool:
    return len(files) <= bounds.max_files and sum(size for _rel, size in files) <= bounds.max_bytes


async def _base_sizes(root: Path, base_tree: str) -> dict[str, int]:
    """path → size of every blob in the base tree (read from the project's repository: its tree
    objects and the blobs' headers, nothing of the workspace)."""
    code, out, _err = await git.exec_git(root, [*_BASE_CONFIG, "ls-tree", "-r", "-l", "-z", base_tree], env=_env())
    sizes: dict[str, int] = {}
    if code != 0:
        return sizes
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, rel = entry.partition("\t")
        parts = meta.split()
        if rel and len(parts) == 4 and parts[3].isdigit():
            sizes[rel] = int(parts[3])
    return sizes


async def _not_ignored(tree: Tree, index: Path, files: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """`files` without those the workspace's ignore rules exclude from `git add -A` (untracked
    ones matching `.gitignore`, `info/exclude` or `core.excludesFile`; a tracked file is never
    ignored). One `git ls-files` walk, which names a wholly ignored directory once (`.venv/`)
    without listing what it holds."""
    env = _env({"GIT_DIR": str(tree.gitdir), "GIT_WORK_TREE": str(tree.path), "GIT_INDEX_FILE": str(index)})
    args = [*_BASE_CONFIG, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"]
    code, out, _err = await git.exec_git(tree.path, args, env=env)
    if code != 0:
        return files  # nothing known to be ignored: every file counts
    listed = out.decode("utf-8", "surrogateescape").split("\0")
    ignored_dirs = tuple(p for p in listed if p.endswith("/"))
    ignored_files = {p for p in listed if p and not p.endswith("/")}

    def kept() -> list[tuple[str, int]]:
        return [
            (rel, size)
            for rel, size in files
            if rel not in ignored_files and not (ignored_dirs and rel.startswith(ignored_dirs))
        ]

    return await asyncio.to_thread(kept)


async def _ignored(tree: Tree, index: Path, paths: list[str]) -> list[str]:
    """Which of `paths` the workspace's ignore rules exclude."""
    env = _env({"GIT_DIR": str(tree.gitdir), "GIT_WORK_TREE": str(tree.path), "GIT_INDEX_FILE": str(index)})
    code, out, _err = await git.exec_git(
        tree.path, [*_BASE_CONFIG, "check-ignore", "-z", "--stdin"], env=env, stdin="\0".join(paths).encode() + b"\0"
    )
    if code not in (0, 1):
        return []
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def give_back(path: Path, rels: list[str]) -> None:
    """Make `rels` (and the directories leading to them) owned by the workspace's owner again
    after roundtable wrote them as root — the sandboxed harness runs as another uid and must be
    able to edit them. Every step is opened relative to the one before without following a link,
    so a directory the agent swapped for a symlink never leads the change outside. Blocking."""
    if os.geteuid() != 0:
        return
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid == 0:
        return
    uid, gid = st.st_uid, st.st_gid
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    for rel in rels:
        parts = [p for p in rel.split("/") if p and p not in (".", "..")]
        if not parts:
            continue
        try:
            fd = os.open(path, flags)
        except OSError:
            return
        try:
            for name in parts[:-1]:
                try:
                    os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
                    nxt = os.open(name, flags, dir_fd=fd)
                except OSError:
                    break
                os.close(fd)
                fd = nxt
            else:
                try:
                    os.chown(parts[-1], uid, gid, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    pass
        finally:
            os.close(fd)
