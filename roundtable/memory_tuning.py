"""The owner's process-wide memory settings: how the C allocator keeps freed memory.

The owner is one long-lived process with many threads (a worker thread per SQLite connection,
the default executor's workers for file and git work). glibc's malloc gives each thread that
allocates concurrently an arena of its own (up to eight per core, each reserving 64 MiB) and
returns freed memory at the top of an arena only: under a steady load the resident size of
those arenas creeps up as fragmentation accumulates, though Python's own objects do not grow.

- `tune()` (once, at owner start, before the threads exist) caps the arenas with
  `mallopt(M_ARENA_MAX, …)`;
- `trim()` (periodically, off the event loop) hands memory freed inside the arenas back to the
  system with `malloc_trim(0)`.

Both are glibc functions found through `ctypes`; with another C library (musl, macOS) they are
no-ops that say so. `ROUNDTABLE_MALLOC_TUNING=0` in the environment turns both off (for
comparing a run with and without them).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("roundtable.memory")

M_ARENA_MAX = -8  # glibc's malloc.h
ARENA_MAX = 2  # arenas for the whole process: the loop thread's and one shared by the workers
TRIM_INTERVAL_S = 60.0  # how often the owner's housekeeping calls `trim()`
ENV = "ROUNDTABLE_MALLOC_TUNING"


@dataclass(frozen=True)
class Tuning:
    """What `tune()` did: `applied` is False on a C library without these knobs (or when turned off)."""

    applied: bool
    detail: str


def _glibc() -> Any | None:
    """The process's C library when it is glibc (it has `gnu_get_libc_version`), else None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not all(hasattr(libc, name) for name in ("gnu_get_libc_version", "mallopt", "malloc_trim")):
        return None
    libc.gnu_get_libc_version.restype = ctypes.c_char_p
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.mallopt.restype = ctypes.c_int
    libc.malloc_trim.argtypes = (ctypes.c_size_t,)
    libc.malloc_trim.restype = ctypes.c_int
    return libc


def enabled() -> bool:
    """False when the environment turns the tuning off."""
    return os.environ.get(ENV, "1").strip() not in ("0", "off", "false", "no")


def tune(arena_max: int = ARENA_MAX) -> Tuning:
    """Cap glibc's malloc arenas at `arena_max` for this process. Call it before threads start:
    an arena already created stays. A no-op (saying why) off glibc or when turned off."""
    if not enabled():
        return Tuning(False, f"memory tuning off ({ENV}=0)")
    libc = _glibc()
    if libc is None:
        return Tuning(False, "not glibc: malloc arenas left as they are")
    if libc.mallopt(M_ARENA_MAX, int(arena_max)) != 1:
        return Tuning(False, "mallopt(M_ARENA_MAX) refused")
    version = libc.gnu_get_libc_version().decode("ascii", "replace")
    return Tuning(True, f"glibc {version}: at most {arena_max} malloc arenas")


def trim() -> bool:
    """Return freed C-heap memory to the system (`malloc_trim(0)`); whether any was released.
    It walks every arena under its lock: run it on a worker thread, not on the event loop."""
    if not enabled():
        return False
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


async def trim_periodically(interval: float = TRIM_INTERVAL_S) -> None:
    """The owner's housekeeping: `trim()` on a worker thread every `interval` seconds, forever."""
    if not enabled():
        return
    while True:
        await asyncio.sleep(interval)
        try:
            await asyncio.to_thread(trim)
        except Exception:  # housekeeping never stops the owner
            log.exception("malloc_trim failed")
