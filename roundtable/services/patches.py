"""Patches: parsing with `unidiff`, content-addressed storage and file hashes.

A patch is a git-style unified diff. `parse_patch` returns the touched paths (sorted), each
change (old, new, creation/deletion/rename) and the old-side line ranges of every hunk; binary
or malformed patches and paths that leave the repository (or reach into `.git/` or
`.roundtable/`) are refused with a clear message. `store_patch` writes the text to
`.roundtable/patches/<sha256>.diff` atomically (temporary file, then rename) — callers do that
before the database commit that references it, so a committed revision always has its file.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import unidiff

from roundtable.errors import ToolError, ValidationError
from roundtable.services.pathguard import resolve_repo_path

PATCH_DIR = Path(".roundtable") / "patches"
MAX_PATCH_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class FileChange:
    """One file diff: paths are repository-relative; `""` stands for /dev/null."""

    old: str
    new: str
    is_new: bool
    is_delete: bool
    is_rename: bool

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p in (self.old, self.new) if p))

    def describe(self) -> str:
        if self.is_rename:
            return f"rename {self.old} -> {self.new}"
        if self.is_new:
            return f"create {self.new}"
        if self.is_delete:
            return f"delete {self.old}"
        return self.old if self.old == self.new or not self.new else f"{self.old} -> {self.new}"

    def to_dict(self) -> dict[str, object]:
        return {
            "old": self.old,
            "new": self.new,
            "is_new": self.is_new,
            "is_delete": self.is_delete,
            "is_rename": self.is_rename,
        }


@dataclass(frozen=True)
class ParsedPatch:
    text: str
    sha256: str
    touched: tuple[str, ...]
    changes: tuple[FileChange, ...]
    ranges: dict[str, tuple[tuple[int, int], ...]]


def patch_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _strip(name: str, prefix: str, root: Path) -> str:
    """A diff header path (`a/x`, `b/x` or `/dev/null`) as a guarded repository path."""
    if name == "/dev/null":
        return ""
    if not name.startswith(prefix):
        raise ValidationError(f"patch path {name!r} must start with {prefix} (git format, a/ and b/ prefixes)")
    rel = name[len(prefix) :]
    _abs, clean = resolve_repo_path(root, rel)
    if clean != rel:
        raise ValidationError(f"patch path {rel!r} is not a clean repository path (use {clean!r})")
    return rel


def _old_range(hunk: unidiff.Hunk) -> tuple[int, int]:
    """Old-file line range of a hunk (§3.3 step 6)."""
    a, b, c = hunk.source_start, hunk.source_length, hunk.target_start
    if b == 0:
        s = a if a > 0 else (c if c > 0 else 1)
        return (s, s)
    start = max(a, 1)
    return (start, max(a + b - 1, start))


_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def parse_patch(text: str, root: Path) -> ParsedPatch:
    """Parse a unified diff; every touched path goes through the path guard."""
    if not text.strip():
        raise ValidationError("patch is empty")
    if len(text.encode("utf-8")) > MAX_PATCH_BYTES:
        raise ValidationError(f"patch is larger than {MAX_PATCH_BYTES // (1024 * 1024)} MiB")
    if "\x00" in text:
        raise ValidationError("binary patches are not supported")
    for number, line in enumerate(text.splitlines(), 1):
        # unidiff silently skips a malformed hunk header; git apply would refuse the patch later.
        if line.startswith("@@") and not _HUNK_HEADER.match(line):
            raise ValidationError(f"invalid patch: malformed hunk header on line {number}: {line[:80]}")
    try:
        patch_set = unidiff.PatchSet(text)
    except unidiff.UnidiffParseError as exc:
        raise ValidationError(f"invalid patch: {exc}") from None
    if len(patch_set) == 0:
        raise ValidationError("patch contains no diff headers")
    changes: list[FileChange] = []
    ranges: dict[str, list[tuple[int, int]]] = {}
    touched: set[str] = set()
    for pf in patch_set:
        if pf.is_binary_file or "GIT binary patch" in str(pf.patch_info or ""):
            raise ValidationError(f"binary patches are not supported: {pf.path}")
        old = _strip(pf.source_file, "a/", root)
        new = _strip(pf.target_file, "b/", root)
        if not old and not new:
            raise ValidationError("patch has a file diff with no path")
        change = FileChange(old, new, bool(pf.is_added_file), bool(pf.is_removed_file), bool(pf.is_rename))
        if not change.is_rename and old and new and old != new:
            raise ValidationError(f"patch changes path {old} to {new} without a rename header")
        changes.append(change)
        touched.update(change.paths)
        current = old or new
        for hunk in pf:
            ranges.setdefault(current, []).append(_old_range(hunk))
    return ParsedPatch(
        text=text,
        sha256=patch_sha256(text),
        touched=tuple(sorted(touched)),
        changes=tuple(changes),
        ranges={k: tuple(v) for k, v in ranges.items()},
    )


def patch_rel_path(sha256: str) -> str:
    return (PATCH_DIR / f"{sha256}.diff").as_posix()


def write_atomic_bytes(path: Path, data: bytes, mode: int = 0o600, *, sync: bool = True) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename.
    With `sync=False` the caller makes the data durable itself (see `fsync_all`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(paths: list[Path]) -> None:
    """Flush many files (and their directories) to disk. Issued concurrently, so the
    filesystem journal can commit them together instead of once per file."""
    targets = list(dict.fromkeys([*paths, *(p.parent for p in paths)]))
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(targets)))) as pool:
        list(pool.map(_fsync_path, targets))


def store_patch(root: Path, parsed: ParsedPatch) -> str:
    """Store the patch content-addressed; returns its path relative to the root."""
    rel = patch_rel_path(parsed.sha256)
    target = root / rel
    if not target.exists():
        try:
            write_atomic_bytes(target, parsed.text.encode("utf-8"))
        except OSError as exc:  # a full or read-only disk is the operator's to fix: say so
            raise ToolError(f"store patch {rel}: {exc.strerror or exc}") from None
    return rel


def read_patch(root: Path, sha256: str) -> str:
    """The stored text of a revision, verified against its hash."""
    path = root / patch_rel_path(sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"patch revision {sha256} is missing from {PATCH_DIR.as_posix()}/") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ToolError(f"patch revision {sha256} does not match its hash (the file was modified)")
    return data.decode("utf-8")


def file_hash(root: Path, rel: str) -> str:
    """sha256 of a repository file's bytes; `""` when it does not exist (§3.2)."""
    try:
        data = (root / rel).read_bytes()
    except FileNotFoundError:
        return ""
    except IsADirectoryError:
        raise ToolError(f"{rel} is a directory") from None
    return hashlib.sha256(data).hexdigest()


def file_hashes(root: Path, paths: list[str] | tuple[str, ...]) -> dict[str, str]:
    return {p: file_hash(root, p) for p in paths}
