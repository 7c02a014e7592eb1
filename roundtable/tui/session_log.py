"""Reading a session's log: `.roundtable/logs/sessions/<session_id>.log`, which the supervisor
writes already redacted. Blocking file access, so callers run `read_chunk` in a
worker thread; the console follows the file by reading from the offset it reached last, when
`log_changes` says the log's directory changed.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path

# Ids that become file names: 1-128 of letters, digits, `.`, `_`, `-`; no leading `.`.
_SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
FIRST_READ_LIMIT = 256 * 1024  # the first read shows at most the log's last 256 KiB
READ_LIMIT = 1024 * 1024  # at most this much more per read while following


def log_path(root: Path, session_id: str) -> Path | None:
    """Where the supervisor writes the session's log; None for an id that cannot be a file name."""
    if not _SAFE_ID.fullmatch(session_id):
        return None
    return root / ".roundtable" / "logs" / "sessions" / f"{session_id}.log"


@dataclass(frozen=True)
class Chunk:
    """Complete lines read from `offset` on; `next_offset` is where the next read starts (a line
    still being written waits for its newline)."""

    lines: list[str]
    next_offset: int
    exists: bool
    skipped: int = 0  # bytes left out at the start (the first read of a long log)
    restarted: bool = False  # the file shrank (rewritten): reading started over


def read_chunk(path: Path, offset: int) -> Chunk:
    """The lines appended since `offset` (blocking: call it in a thread)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return Chunk([], 0, exists=False)
    except OSError as exc:
        return Chunk([f"(cannot read the log: {exc.strerror})"], offset, exists=True)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        restarted = size < offset
        start = 0 if restarted else offset
        skipped = 0
        if start == 0 and size > FIRST_READ_LIMIT:
            skipped = size - FIRST_READ_LIMIT
            start = skipped
        fh.seek(start)
        data = fh.read(min(size - start, READ_LIMIT))
    if skipped:
        cut = data.find(b"\n") + 1  # start on a line boundary
        start += cut
        skipped = start
        data = data[cut:]
    end = data.rfind(b"\n")
    if end < 0:
        return Chunk([], start, exists=True, skipped=skipped, restarted=restarted)
    text = data[: end + 1].decode("utf-8", errors="replace")
    return Chunk(text.splitlines(), start + end + 1, exists=True, skipped=skipped, restarted=restarted)


async def log_changes(path: Path, every: float = 1.0) -> AsyncGenerator[None]:
    """Yields whenever the directory of the log at `path` changes (the supervisor appended to a
    log, or created one), and at least every `every` seconds: the file tail followers wait on,
    instead of reading the file on a timer. Before the directory exists it only ticks."""
    import watchfiles

    while not path.parent.is_dir():
        yield None
        await asyncio.sleep(every)
    async for _changes in watchfiles.awatch(
        path.parent,
        debounce=50,
        step=25,
        rust_timeout=int(every * 1000),
        yield_on_timeout=True,
        recursive=False,
    ):
        yield None
