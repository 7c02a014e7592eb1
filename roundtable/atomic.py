"""Atomic file writes: a temporary file in the same directory, fsync, chmod, rename — a reader
sees the old content or the new, never a torn file. Used for patches, rollback artefacts, test
logs and the generated MCP assets."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic_bytes(path: Path, data: bytes, mode: int = 0o600, *, sync: bool = True) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename.
    With `sync=False` the caller makes the data durable itself (`services.repository.patches.fsync_all`)."""
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


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` (UTF-8) to `path` atomically and durably."""
    write_atomic_bytes(path, text.encode("utf-8"), mode)
