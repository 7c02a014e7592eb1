"""Content hashes of resources (spec/tools.md §3.2): lowercase hex SHA-256.

- file: the bytes of the file; a missing file hashes to `""`.
- directory: every file beneath it (the guarded walk: no `.git`, no `.roundtable`, no symlink
  out of the root), sorted by repository-relative path, hashed as `path NUL bytes NUL` each;
  a missing directory hashes to `""`.
- symbol: lines start..end of the file joined with `\\n` (end clamped to the file); an invalid
  span, a missing file or a start beyond the end hashes to `""`. One resolver everywhere:
  re-index the file and take the first declaration with that exact name, falling back to the
  stored span when indexing fails or finds nothing.

Every path goes through the path guard first. These functions do blocking file I/O: call them
from a worker thread.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from roundtable.errors import ToolError
from roundtable.services import symbols as symbol_index
from roundtable.services.pathguard import resolve_repo_path, walk_repo_files

_CHUNK = 1 << 16


def _hash_file_into(digest: hashlib._Hash, path: Path) -> None:
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)


def file_hash(root: Path, rel: str) -> str:
    absolute, shown = resolve_repo_path(root, rel)
    if not absolute.exists():
        return ""
    if absolute.is_dir():
        raise ToolError(f"hash file {shown}: is a directory")
    digest = hashlib.sha256()
    try:
        _hash_file_into(digest, absolute)
    except OSError as exc:
        raise ToolError(f"hash file {shown}: {exc.strerror or exc}") from None
    return digest.hexdigest()


def directory_hash(root: Path, rel: str) -> str:
    if rel in ("", "."):
        absolute, shown = Path(os.path.realpath(root)), ""
    else:
        absolute, shown = resolve_repo_path(root, rel)
    if not absolute.exists():
        return ""
    if not absolute.is_dir():
        raise ToolError(f"{shown} is not a directory")
    digest = hashlib.sha256()
    for path, file_rel in sorted(walk_repo_files(root, shown), key=lambda item: item[1]):
        digest.update(file_rel.encode())
        digest.update(b"\0")
        try:
            _hash_file_into(digest, path)
        except OSError as exc:
            raise ToolError(f"hash file {file_rel}: {exc.strerror or exc}") from None
        digest.update(b"\0")
    return digest.hexdigest()


def workspace_hash(root: Path) -> str:
    """The directory hash of the whole repository."""
    return directory_hash(root, "")


def line_range_hash(root: Path, rel: str, start: int, end: int) -> str:
    if start <= 0 or end < start:
        return ""
    absolute, _ = resolve_repo_path(root, rel)
    try:
        data = absolute.read_bytes()
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise ToolError(f"hash symbol in {rel}: {exc.strerror or exc}") from None
    lines = data.split(b"\n")
    if start > len(lines):
        return ""
    end = min(end, len(lines))
    return hashlib.sha256(b"\n".join(lines[start - 1 : end])).hexdigest()


def symbol_span(root: Path, rel: str, name: str, stored: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """The span of the first declaration named `name` in the file, else the stored span."""
    if not rel or not name:
        return stored
    try:
        absolute, shown = resolve_repo_path(root, rel)
        found = symbol_index.find_symbol(symbol_index.index_file(absolute, shown), name)
    except ToolError:
        return stored
    return (found.start_line, found.end_line) if found is not None else stored


def resource_hash(
    root: Path, resource_type: str, path: str, symbol: str = "", stored_span: tuple[int, int] = (0, 0)
) -> str:
    """The current content hash of a resource; `""` for unknown types."""
    if resource_type == "file":
        return file_hash(root, path) if path else ""
    if resource_type == "directory":
        return directory_hash(root, path)
    if resource_type == "symbol":
        if not path:
            return ""
        start, end = symbol_span(root, path, symbol, stored_span)
        return line_range_hash(root, path, start, end)
    return ""
