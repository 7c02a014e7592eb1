"""Content hashes of resources: lowercase hex SHA-256.

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

Only regular files are read, and never through a symlink: `path_hash` looks at the path with
`lstat`, opens it with `O_NOFOLLOW | O_NONBLOCK` and checks the open descriptor again, streams
the bytes and stops at `MAX_HASH_BYTES`. Anything else hashes to a sentinel that can never equal
a content hash: `symlink:<sha256 of the target>`, `directory:`, `fifo:`, `socket:`, `device:`.
A symlink to `/dev/zero` or a FIFO therefore costs one `lstat`, not the owner's memory.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

from roundtable.errors import ToolError
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.pathguard import resolve_repo_path, walk_repo_files

_CHUNK = 1 << 16
MAX_HASH_BYTES = 1 << 30
DIRECTORY = "directory:"
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _kind_sentinel(mode: int) -> str:
    """The hash of something that is not a regular file (never a valid content hash)."""
    if stat.S_ISDIR(mode):
        return DIRECTORY
    if stat.S_ISFIFO(mode):
        return "fifo:"
    if stat.S_ISSOCK(mode):
        return "socket:"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device:"
    return "special:"


def _hash_fd_into(digest: hashlib._Hash, fd: int, label: str, limit: int = MAX_HASH_BYTES) -> None:
    """Stream an open regular file into `digest`, refusing more than `limit` bytes."""
    total = 0
    while chunk := os.read(fd, _CHUNK):
        total += len(chunk)
        if total > limit:
            raise ToolError(f"hash file {label}: larger than {limit // (1 << 20)} MiB")
        digest.update(chunk)


def _hash_file_into(digest: hashlib._Hash, path: Path, label: str = "") -> None:
    """Stream a regular file into `digest` (no symlink, FIFO or device is ever opened)."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolError(f"hash file {label or path.name}: not a regular file")
        _hash_fd_into(digest, fd, label or path.name)
    finally:
        os.close(fd)


class LargerThan(Exception):
    """A regular file over the `max_bytes` its caller set (nothing was read)."""


def path_hash(path: Path, label: str = "", *, max_bytes: int | None = None) -> str:
    """The hash of whatever is at `path`, never following a final symlink: `""` when nothing is
    there, the sha256 of a regular file's bytes, else a sentinel (see the module docstring).
    `LargerThan` for a regular file over `max_bytes`, when given."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    if stat.S_ISLNK(st.st_mode):
        return "symlink:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    if not stat.S_ISREG(st.st_mode):
        return _kind_sentinel(st.st_mode)
    if max_bytes is not None and st.st_size > max_bytes:
        raise LargerThan
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # swapped for a symlink after the lstat
            return path_hash(path, label, max_bytes=max_bytes)
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return _kind_sentinel(st.st_mode)
        if max_bytes is not None and st.st_size > max_bytes:
            raise LargerThan
        digest = hashlib.sha256()
        _hash_fd_into(digest, fd, label or str(path))
        return digest.hexdigest()
    finally:
        os.close(fd)


def read_regular(path: Path, limit: int, label: str = "") -> bytes | None:
    """The bytes of a regular file (no symlink followed, at most `limit` bytes), `None` when it
    does not exist; `ToolError` for anything else."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ToolError(f"read {label or path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"read {label or path}: not a regular file")
        if st.st_size > limit:
            raise ToolError(f"read {label or path}: larger than {limit} bytes")
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, _CHUNK):
            total += len(chunk)
            if total > limit:
                raise ToolError(f"read {label or path}: larger than {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_hash(root: Path, rel: str, *, max_bytes: int | None = None) -> str:
    """The hash of the file at `rel` (see `path_hash`); `LargerThan` over `max_bytes`."""
    absolute, shown = resolve_repo_path(root, rel)
    # The guard checked where the path leads; the last component is hashed as itself (a
    # symlink is a link, as git sees it), the directories above it as the OS resolves them.
    try:
        digest = path_hash(Path(root) / shown if shown != "." else absolute, shown, max_bytes=max_bytes)
    except OSError as exc:
        raise ToolError(f"hash file {shown}: {exc.strerror or exc}") from None
    if digest == DIRECTORY:
        raise ToolError(f"hash file {shown}: is a directory")
    return digest


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
            _hash_file_into(digest, path, file_rel)
        except OSError as exc:
            raise ToolError(f"hash file {file_rel}: {exc.strerror or exc}") from None
        digest.update(b"\0")
    return digest.hexdigest()


def line_range_hash(root: Path, rel: str, start: int, end: int) -> str:
    if start <= 0 or end < start:
        return ""
    absolute, _ = resolve_repo_path(root, rel)
    try:
        data = read_regular(absolute, MAX_HASH_BYTES // 16, rel)
    except OSError as exc:
        raise ToolError(f"hash symbol in {rel}: {exc.strerror or exc}") from None
    if data is None:
        return ""
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
