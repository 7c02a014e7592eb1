"""Repository reads: one file, a literal search, through the path guard.

- `read_regular_bytes`: the one bounded read every repository read goes through (read_file,
  search, the symbol index). It refuses anything that is not a regular file *before* opening it
  (`lstat`: a FIFO, socket or device is never opened, so it can never block a thread), opens
  with `O_NONBLOCK | O_NOFOLLOW` (a symlink swapped in after the guard's check, or a symlink
  loop, is refused instead of followed), re-checks the opened file with `fstat` (same inode,
  still regular), and reads at most `max_bytes + 1` bytes, so a file that grows meanwhile is
  refused too. Nothing ever loads more than the cap.
- `read_file`: refuses files over the size cap (with a message naming the cap and its config
  key); reports binary files (a NUL byte in the first 8 KiB, or not UTF-8) as `binary: true`
  with empty content instead of dumping them.
- `read_file` also cuts a line range (`start_line`/`end_line`, 1-based and inclusive) and
  numbers the lines it returns; a cut answer says how many lines the file has, so an agent
  reads only the part it needs and writes no hunk header by counting.
- `search`: case-insensitive literal substring, one match per line, over the guarded walk
  (every hit is a path the guard accepts), skipping binary files, files over the read cap and
  anything that is not a regular file (they could not be read either); stops at the match cap
  and says it did (`truncated`). `context_lines` adds the lines around each match.

All are blocking: the tools run them in a worker thread. `read_file` and `search` receive their
operation's validated model (`ReadFileArgs`, `SearchArgs`, declared here) and the repository's
limits (`RepoConfig`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from annotated_types import Le
from pydantic import Field

from roundtable.config import RepoConfig
from roundtable.errors import ToolError, ValidationError
from roundtable.services.args import Args, Count, Flag, Positive, Query, RepoPath
from roundtable.services.repository.pathguard import resolve_repo_path, walk_repo_files

MAX_CONTEXT_LINES = 20


class ReadFileArgs(Args):
    # `repo.read_file`: 0 is "from the start" / "to the end".
    path: RepoPath
    start_line: Positive = 0
    end_line: Positive = 0
    numbered: Flag = Field(False, description="Number the lines.")


class SearchArgs(Args):
    # `repo.search`: the path narrows it to one file or one directory subtree.
    query: Query
    path: RepoPath = ""
    context_lines: Annotated[Count, Le(MAX_CONTEXT_LINES)] = Field(0, description="Lines around each match.")


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


# O_NONBLOCK: opening a FIFO (swapped in after the lstat) returns at once instead of waiting for
# a writer; O_NOFOLLOW: a symlink in the last component (swapped in, or a loop) fails with ELOOP.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
_READ_CHUNK = 1 << 16
_KINDS: tuple[tuple[Any, str], ...] = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(mode: int) -> str:
    """Why a non-regular file is refused, in the words the callers' messages use."""
    if stat.S_ISDIR(mode):
        return "is a directory"
    for test, label in _KINDS:
        if test(mode):
            return f"not a regular file ({label})"
    return "not a regular file"


def _over_limit(verb: str, label: str, size: int | None, max_bytes: int, hint: str) -> str:
    """The message for a file over the read cap (`size` None: it grew while being read)."""
    what = f"file is {size} bytes, over" if size is not None else "file is over"
    return f"{verb} {label}: {what} the read limit of {max_bytes} bytes (repo.max_read_bytes){hint}"


def read_regular_bytes(
    absolute: str | os.PathLike[str], label: str, max_bytes: int, *, verb: str = "read", hint: str = ""
) -> bytes:
    """The bytes of one regular file of at most `max_bytes`, or `ToolError` naming `label`.

    `absolute` must already be resolved (the path guard's result): a symlink in its last
    component is refused, not followed. Never blocks on a FIFO or device and never reads more
    than `max_bytes + 1` bytes. `hint` is appended to the over-the-cap message.
    """
    try:
        before = os.lstat(absolute)
    except OSError as exc:
        raise ToolError(f"{verb} {label}: {_os_text(exc)}") from None
    if not stat.S_ISREG(before.st_mode):
        raise ToolError(f"{verb} {label}: {_not_regular(before.st_mode)}")
    if before.st_size > max_bytes:
        raise ToolError(_over_limit(verb, label, before.st_size, max_bytes, hint))
    try:
        fd = os.open(absolute, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"{verb} {label}: not a regular file (a symbolic link)") from None
        raise ToolError(f"{verb} {label}: {_os_text(exc)}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{verb} {label}: {_not_regular(info.st_mode)}")
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise ToolError(f"{verb} {label}: the file was replaced while being opened; try again")
        if info.st_size > max_bytes:
            raise ToolError(_over_limit(verb, label, info.st_size, max_bytes, hint))
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(_READ_CHUNK, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise ToolError(f"{verb} {label}: {_os_text(exc)}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # grew since the fstat
        raise ToolError(_over_limit(verb, label, None, max_bytes, hint))
    return data


def split_lines(text: str) -> list[str]:
    """The lines of `text` as an editor counts them (a final newline ends the last line, it
    does not start another)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def number_lines(lines: list[str], first: int) -> str:
    """`lines` as `<number>\t<text>` rows, the first numbered `first`."""
    return "".join(f"{first + i}\t{line}\n" for i, line in enumerate(lines))


def read_file(root: Path, args: ReadFileArgs, limits: RepoConfig) -> dict[str, Any]:
    """`{path, content, binary, size}` for one repository file (path repository-relative), at
    most `limits.max_read_bytes` long.

    `start_line`/`end_line` (1-based, inclusive; 0 = from the start / to the end) cut a range,
    and the answer then also carries `start_line`, `end_line` and `total_lines`; `numbered`
    prefixes every returned line with its number and a tab."""
    start_line, end_line, numbered = args.start_line, args.end_line, args.numbered
    absolute, rel = resolve_repo_path(root, args.path)
    data = read_regular_bytes(absolute, rel, limits.max_read_bytes, hint="; read a range with start_line/end_line")
    if is_binary(data):
        return {"path": rel, "binary": True, "size": len(data), "content": ""}
    text = data.decode("utf-8")
    out: dict[str, Any] = {"path": rel, "binary": False, "size": len(data), "content": text}
    if not (start_line or end_line or numbered):
        return out
    lines = split_lines(text)
    total = len(lines)
    if end_line and start_line and end_line < start_line:
        raise ValidationError(f"repo.read_file: end_line {end_line} is before start_line {start_line}")
    first = max(start_line, 1)
    if first > max(total, 1):
        raise ValidationError(f"repo.read_file: start_line {start_line} is past the end of {rel} ({total} lines)")
    last = min(end_line, total) if end_line else total
    chosen = lines[first - 1 : last]
    if numbered:
        out["content"] = number_lines(chosen, first)
    else:
        body = "\n".join(chosen)
        ends = last < total or text.endswith("\n")
        out["content"] = body + "\n" if chosen and ends else body
    if start_line or end_line:
        out.update({"start_line": first, "end_line": last, "total_lines": total})
    return out


@dataclass(frozen=True)
class SearchResult:
    matches: list[dict[str, Any]]
    truncated: bool
    files_searched: int


def search(root: Path, args: SearchArgs, limits: RepoConfig) -> SearchResult:
    """Find `query` (literal, case-insensitive) line by line, at most `limits.max_search_matches`
    matches over files of at most `limits.max_read_bytes`; `path` narrows the search to one
    file or one directory subtree (guarded). `context_lines` adds up to that many lines before
    (`before`) and after (`after`) each match."""
    needle = args.query.lower()
    path, context_lines = args.path, args.context_lines
    max_matches, max_file_bytes = limits.max_search_matches, limits.max_read_bytes
    candidates: Iterable[tuple[Path, str]]
    if path:
        absolute, rel = resolve_repo_path(root, path)
        if os.path.isdir(absolute):  # False for any error (a too-long name, a loop)
            candidates = walk_repo_files(root, "" if rel == "." else rel)
        else:
            candidates = [(absolute, rel)]
    else:
        candidates = walk_repo_files(root)
    matches: list[dict[str, Any]] = []
    searched = 0
    for absolute, rel in candidates:
        data = _read_candidate(absolute, rel, max_file_bytes)
        if data is None:
            continue
        searched += 1
        lines = split_lines(data)
        for number, line in enumerate(lines, start=1):
            if needle in line.lower():
                if len(matches) >= max_matches:
                    return SearchResult(matches, True, searched)
                match: dict[str, Any] = {"path": rel, "line": number, "content": line}
                if context_lines > 0:
                    match["before"] = lines[max(0, number - 1 - context_lines) : number - 1]
                    match["after"] = lines[number : number + context_lines]
                matches.append(match)
    return SearchResult(matches, False, searched)


def _read_candidate(path: Path, rel: str, max_bytes: int) -> str | None:
    """The file's text, or None when it is unreadable, too large, not regular or binary."""
    try:
        data = read_regular_bytes(path, rel, max_bytes)
    except ToolError:
        return None
    if is_binary(data):
        return None
    return data.decode("utf-8")
