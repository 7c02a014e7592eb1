"""The owner's process-wide memory settings: how the C allocator keeps freed memory, and how
much SQLite may keep for its page caches.

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
no-ops that say so.

SQLite gives each connection a page cache of up to 2 MiB (the owner has a writer, readers, an
inline reader and a change watcher), filled as the database grows: several MiB of RSS growth
over a long run. `tune()` also sets SQLite's soft heap limit (`PRAGMA soft_heap_limit`, one
setting for every connection of the process): past it, SQLite reuses cached pages instead of
allocating more. Five connections reading a 26 MiB database held 12.1 MiB with the default,
4.3 MiB under a 4 MiB limit, and read as fast (the OS keeps the file's pages).

Python's cyclic garbage collector scans every tracked object in a full collection: the owner
holds about 115,000 after start-up (the tool registry, schemas, the SDK's models), so each full
collection took 77 ms on the event loop and, under load, one came every few seconds (half the
collector's time in a 50-client HTTP run). None of those objects is garbage — a collection
right after start-up finds about ten. `freeze_startup_heap()` (once, when the owner has
started) moves them into the collector's permanent generation, so later collections scan only
what the owner made since: full collections fell to a third of their time.

`ROUNDTABLE_MALLOC_TUNING=0` in the environment turns all of it off (for comparing a run with
and without).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
import sqlite3
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("roundtable.memory")

M_ARENA_MAX = -8  # glibc's malloc.h
ARENA_MAX = 2  # arenas for the whole process: the loop thread's and one shared by the workers
SQLITE_HEAP_LIMIT = 8 * 2**20  # bytes: SQLite's soft heap limit for the whole process
TRIM_INTERVAL_S = 60.0  # how often the owner's housekeeping calls `trim()`
ENV = "ROUNDTABLE_MALLOC_TUNING"


@dataclass(frozen=True)
class Tuning:
    """What `tune()` did: `applied` is False on a C library without the malloc knobs (or when
    turned off); `sqlite_heap_limit` is SQLite's soft heap limit in bytes (0: none)."""

    applied: bool
    detail: str
    sqlite_heap_limit: int = 0


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


def limit_sqlite_heap(limit: int = SQLITE_HEAP_LIMIT) -> int:
    """Set SQLite's soft heap limit for the whole process (every connection, open or not yet);
    returns the limit now in force."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"PRAGMA soft_heap_limit = {int(limit)}")
        return int(conn.execute("PRAGMA soft_heap_limit").fetchone()[0])
    finally:
        conn.close()


def tune(arena_max: int = ARENA_MAX, sqlite_heap_limit: int = SQLITE_HEAP_LIMIT) -> Tuning:
    """Cap glibc's malloc arenas at `arena_max` for this process and set SQLite's soft heap
    limit. Call it before threads start: an arena already created stays. The malloc part is a
    no-op (saying why) off glibc; everything is when turned off."""
    if not enabled():
        return Tuning(False, f"memory tuning off ({ENV}=0)")
    limit = limit_sqlite_heap(sqlite_heap_limit)
    sqlite_part = f"SQLite soft heap limit {limit / 2**20:g} MiB"
    libc = _glibc()
    if libc is None:
        return Tuning(False, f"not glibc: malloc arenas left as they are; {sqlite_part}", limit)
    if libc.mallopt(M_ARENA_MAX, int(arena_max)) != 1:
        return Tuning(False, f"mallopt(M_ARENA_MAX) refused; {sqlite_part}", limit)
    version = libc.gnu_get_libc_version().decode("ascii", "replace")
    return Tuning(True, f"glibc {version}: at most {arena_max} malloc arenas; {sqlite_part}", limit)


_frozen = False


def freeze_startup_heap() -> int:
    """Move every object alive now into the garbage collector's permanent generation (once per
    process: a second owner in the same process, as in tests, adds nothing); returns how many
    objects are frozen (0 when turned off). Objects that die later are still freed by their
    reference counts; only cycles among them would stay."""
    global _frozen
    if not enabled():
        return 0
    if not _frozen:
        _frozen = True
        gc.freeze()
    return gc.get_freeze_count()


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
