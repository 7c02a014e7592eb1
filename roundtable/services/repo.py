"""Repository reads: one file, a literal search, through the path guard.

- `read_file`: refuses anything that is not a regular file, and files over the size cap (with
  a message naming the cap and its config key); reports binary files (a NUL byte in the first
  8 KiB, or not UTF-8) as `binary: true` with empty content instead of dumping them.
- `search`: case-insensitive literal substring, one match per line, over the guarded walk
  (every hit is a path the guard accepts), skipping binary files and files over the read cap
  (they could not be read either); stops at the match cap and says it did (`truncated`).

Both are blocking: the tools run them in a worker thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roundtable.errors import ToolError
from roundtable.services.pathguard import resolve_repo_path, walk_repo_files

BINARY_SNIFF_BYTES = 8192


def is_binary(data: bytes) -> bool:
    """A NUL byte in the first 8 KiB, or content that is not UTF-8."""
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _os_text(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


def read_file(root: Path, path: str, max_bytes: int) -> dict[str, Any]:
    """`{path, content, binary, size}` for one repository file (path repository-relative)."""
    absolute, rel = resolve_repo_path(root, path)
    try:
        info = os.stat(absolute)
    except OSError as exc:
        raise ToolError(f"read {rel}: {_os_text(exc)}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"read {rel}: is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"read {rel}: not a regular file")
    if info.st_size > max_bytes:
        raise ToolError(
            f"read {rel}: file is {info.st_size} bytes, over the read limit of {max_bytes} bytes "
            "(repo.max_read_bytes); use repo.search to find the lines you need"
        )
    try:
        with open(absolute, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ToolError(f"read {rel}: {_os_text(exc)}") from None
    if len(data) > max_bytes:  # grew since the stat
        raise ToolError(f"read {rel}: file is over the read limit of {max_bytes} bytes (repo.max_read_bytes)")
    if is_binary(data):
        return {"path": rel, "binary": True, "size": len(data), "content": ""}
    return {"path": rel, "binary": False, "size": len(data), "content": data.decode("utf-8")}


@dataclass(frozen=True)
class SearchResult:
    matches: list[dict[str, Any]]
    truncated: bool
    files_searched: int


def search(
    root: Path,
    query: str,
    *,
    path: str = "",
    max_matches: int,
    max_file_bytes: int,
) -> SearchResult:
    """Find `query` (literal, case-insensitive) line by line; `path` narrows the search to one
    file or one directory subtree (guarded)."""
    needle = query.lower()
    if not needle:
        raise ToolError("query is required")
    candidates: Iterable[tuple[Path, str]]
    if path:
        absolute, rel = resolve_repo_path(root, path)
        if absolute.is_dir():
            candidates = walk_repo_files(root, "" if rel == "." else rel)
        else:
            candidates = [(absolute, rel)]
    else:
        candidates = walk_repo_files(root)
    matches: list[dict[str, Any]] = []
    searched = 0
    for absolute, rel in candidates:
        data = _read_candidate(absolute, max_file_bytes)
        if data is None:
            continue
        searched += 1
        for number, line in enumerate(data.split("\n"), start=1):
            if needle in line.lower():
                if len(matches) >= max_matches:
                    return SearchResult(matches, True, searched)
                matches.append({"path": rel, "line": number, "content": line})
    return SearchResult(matches, False, searched)


def _read_candidate(path: Path, max_bytes: int) -> str | None:
    """The file's text, or None when it is unreadable, too large, not regular or binary."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    if len(data) > max_bytes or is_binary(data):
        return None
    return data.decode("utf-8")
