"""The path guard: every repository path a tool touches is resolved here and must stay inside.

`resolve_repo_path` turns a caller's path into (absolute resolved path, repository-relative
path) or refuses it: empty, NUL bytes, a lexical `..` escape, an absolute path elsewhere, a
symlink whose target lies outside the root, or anything inside `.git/` or `.roundtable/` (the
database, logs and rollback artefacts live there). `walk_repo_files` is the one tree walk: it
skips those two directories at any depth, never descends into a directory symlink, yields a
file symlink only when its target is a regular file inside the root, and skips FIFOs, sockets
and devices (reading one would block or leak). `is_sensitive_path` names credential and
configuration locations, used for task `readable_paths` and the
security scan.

The check is check-then-use (a symlink swapped after the check is not caught); the walk and
the guard agree, so every hit of a search is a path the guard would accept.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from roundtable.errors import ToolError

# Directories that are never readable, searchable or patchable through the tool surface.
HIDDEN_DIRS: frozenset[str] = frozenset({".git", ".roundtable"})

OUTSIDE = "path is outside the repository root"

# Component prefixes of credential and configuration locations (matched case-insensitively).
_SENSITIVE_PREFIXES: tuple[str, ...] = (
    ".env",
    ".ssh",
    ".aws",
    ".gnupg",
    ".docker",
    ".kube",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".codex",
    ".claude",
    ".gemini",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
)
_SENSITIVE_SUFFIXES: tuple[str, ...] = (".pem", ".key", ".p12", ".pfx")
_SENSITIVE_WORDS: tuple[str, ...] = ("secret", "credential")


def is_sensitive_path(rel: str) -> bool:
    """Whether a repository-relative path is, or lies under, a credential/config location.

    `.git` and `.roundtable` match as whole components; the dot-names and key-file names match
    as component prefixes; `.pem`/`.key`/`.p12`/`.pfx` as suffixes; `secret` and `credential`
    anywhere in a component. All comparisons ignore case.
    """
    for part in PurePosixPath(rel.replace("\\", "/")).parts:
        low = part.lower()
        if low in HIDDEN_DIRS:
            return True
        if low.startswith(_SENSITIVE_PREFIXES) or low.endswith(_SENSITIVE_SUFFIXES):
            return True
        if any(word in low for word in _SENSITIVE_WORDS):
            return True
    return False


def _hidden_component(rel: str) -> str:
    """The first of `HIDDEN_DIRS` among the components of a normalised relative path."""
    for part in rel.split("/"):
        if part in HIDDEN_DIRS:
            return part
    return ""


def _posix(rel: str) -> str:
    """A normalised relative path with `/` separators (the same string on POSIX)."""
    return rel if os.sep == "/" else PurePosixPath(*Path(rel).parts).as_posix()


def _relative(path: str, base: str) -> str | None:
    """`path` relative to `base` (both absolute and normalised), or None when outside."""
    if path == base:
        return "."
    prefix = base if base.endswith(os.sep) else base + os.sep
    if path.startswith(prefix):
        return path[len(prefix) :]
    return None


def real_root(root: Path) -> Path:
    """The root made absolute with its symlinks resolved."""
    return Path(_real_root(root))


# Resolved roots, each kept with the (device, inode) its path led to: one `stat` instead of a
# `realpath` (an lstat per component) on every path a call names. A root whose path leads
# elsewhere now is resolved again; one whose components were renamed (the same directory under
# another name) makes a path look outside the cached string: `resolve_repo_path` then resolves
# the root afresh and judges the path once more.
_REAL_ROOTS: dict[str, tuple[tuple[int, int], str]] = {}
_REAL_ROOTS_MAX = 64


def _real_root(root: Path | str, *, fresh: bool = False) -> str:
    key = os.path.abspath(root)
    try:
        st = os.stat(key)
    except OSError:
        return os.path.realpath(key)
    identity = (st.st_dev, st.st_ino)
    cached = _REAL_ROOTS.get(key)
    if cached is not None and cached[0] == identity and not fresh:
        return cached[1]
    real = os.path.realpath(key)
    if len(_REAL_ROOTS) >= _REAL_ROOTS_MAX:
        _REAL_ROOTS.clear()
    _REAL_ROOTS[key] = (identity, real)
    return real


def resolve_repo_path(root: Path, path: str) -> tuple[Path, str]:
    """Resolve a caller-supplied path inside `root`.

    Returns the absolute path with symlinks resolved (what to open) and the repository-relative
    POSIX path the caller named, lexically cleaned (what to record: resource ids, results).
    The root itself is returned as `"."`. Raises `ToolError` when the path is refused.
    """
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path is required")
    if "\x00" in path:
        raise ToolError("path must not contain NUL bytes")
    base = _real_root(root)
    try:
        return _resolve(root, path, base)
    except ToolError:
        fresh = _real_root(root, fresh=True)  # refused against a stale resolved root? once more
        if fresh == base:
            raise
        return _resolve(root, path, fresh)


def _resolve(root: Path, path: str, base: str) -> tuple[Path, str]:
    given = os.path.normpath(os.path.abspath(root))
    if os.path.isabs(path):
        lexical = os.path.normpath(path)
        rel = _relative(lexical, base)
        if rel is None:
            rel = _relative(lexical, given)
    else:
        cleaned = os.path.normpath(path)
        if cleaned == ".." or cleaned.startswith(".." + os.sep):
            raise ToolError(OUTSIDE)
        rel = cleaned
        lexical = os.path.join(base, cleaned)
    if rel is None:
        raise ToolError(OUTSIDE)
    # realpath resolves `..` after a symlink the way the OS does, so the check matches the open.
    resolved = os.path.realpath(lexical)
    resolved_rel = _relative(resolved, base)
    if resolved_rel is None:
        raise ToolError(OUTSIDE)
    rel_posix = _posix(rel) if rel != "." else "."
    for candidate in (rel_posix, _posix(resolved_rel)):
        hidden = _hidden_component(candidate)
        if hidden:
            raise ToolError(f"path is inside {hidden}/, which is not accessible through roundtable")
    return Path(resolved), rel_posix


def clean_rel_path(path: str) -> str:
    """Lexically clean a repository-relative path for a resource (no filesystem access).

    `""` and `.` become `""` (the root); absolute paths, `..` escapes and NUL bytes are refused.
    """
    if "\x00" in path:
        raise ToolError("path must not contain NUL bytes")
    text = path.replace("\\", "/")
    if not text.strip():
        return ""
    if text.startswith("/"):
        raise ToolError(f"path {path} must be relative to the repository root")
    cleaned = os.path.normpath(text)
    if cleaned == ".." or cleaned.startswith("../"):
        raise ToolError(OUTSIDE)
    return "" if cleaned == "." else cleaned


def _regular_target(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def walk_repo_files(root: Path, under: str = "") -> Iterator[tuple[Path, str]]:
    """Every readable regular file under `root`, in sorted order, as (absolute path, rel path).

    For a file symlink the absolute path is its resolved target (inside the root, checked),
    while the relative path is the link's own. Directory symlinks are never followed.
    `under` (a repository-relative directory that already passed `resolve_repo_path`) limits
    the walk to that subtree; relative paths stay relative to the root.
    """
    base = os.path.realpath(root)
    start = clean_rel_path(under)
    if start:
        resolved = os.path.realpath(os.path.join(base, start))
        if _relative(resolved, base) is None:
            return
        stack: list[tuple[str, str]] = [(resolved, start + "/")]
    else:
        stack = [(base, "")]
    while stack:
        directory, prefix = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[str, str]] = []
        for entry in entries:
            if entry.name in HIDDEN_DIRS:
                continue
            rel = f"{prefix}{entry.name}"
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    target_rel = _relative(target, base)
                    if target_rel is None or _hidden_component(PurePosixPath(*Path(target_rel).parts).as_posix()):
                        continue
                    if _regular_target(target):
                        yield Path(target), rel
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append((entry.path, rel + "/"))
                    continue
                if entry.is_file(follow_symlinks=False):
                    yield Path(entry.path), rel
            except OSError:
                continue
        # Depth-first in name order: push in reverse so the smallest name is visited first.
        stack.extend(reversed(subdirs))
