"""The owner (`python -m roundtable ARGS`) with Python allocation tracing on demand, for the soak.

`python -m bench.tracedowner start --root ROOT` runs exactly what `python -m roundtable` runs.
SIGUSR1 starts `tracemalloc` (one frame per allocation) and takes the baseline snapshot; SIGUSR2
compares a new snapshot with that baseline and writes to the file named by `RT_TRACEMALLOC_OUT`
the traced total, tracemalloc's own memory, and the ten source lines whose live memory grew most
(one line each: size, growth, count, place). `RT_TRACEMALLOC_LOG` names a file that gets those
two totals every 10 s, with SQLite's heap and glibc malloc's in-use, free-but-kept and mmapped
bytes (a measuring aid).

Tracing costs CPU on every allocation (the soak measured about 2.5 times the owner's CPU per
call) and memory of its own, so the soak starts it only after its measured part, for a tail.
It is not started with the process: its traces of every live block, and a baseline snapshot of
them (a Python object per block), would add some 100 MiB.
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from types import FrameType

TOP = 10
_baseline: list[tracemalloc.Snapshot] = []
_IGNORE = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>"))


def _start(signum: int, frame: FrameType | None) -> None:
    if not tracemalloc.is_tracing():
        tracemalloc.start(1)
        _baseline[:] = [tracemalloc.take_snapshot().filter_traces(_IGNORE)]


def _dump(signum: int, frame: FrameType | None) -> None:
    out = os.environ.get("RT_TRACEMALLOC_OUT", "")
    if not out or not tracemalloc.is_tracing():
        return
    snapshot = tracemalloc.take_snapshot().filter_traces(_IGNORE)
    lines = [
        f"traced now {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB;"
        f" tracemalloc's own memory {tracemalloc.get_tracemalloc_memory() / 2**20:.1f} MiB"
    ]
    stats = snapshot.compare_to(_baseline[0], "lineno") if _baseline else snapshot.statistics("lineno")
    for stat in stats[:TOP]:
        place = stat.traceback[0]
        growth = getattr(stat, "size_diff", stat.size)
        lines.append(
            f"{stat.size / 1024:10.1f} KiB  {growth / 1024:+10.1f} KiB  {stat.count:8d} blocks  "
            f"{place.filename}:{place.lineno}"
        )
    tmp = Path(out + ".part")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(out)


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _c_heap() -> str:
    """SQLite's heap and glibc malloc's in-use / free-but-kept / mmapped bytes, in MiB ('' when
    those functions are not there)."""
    parts = []
    try:
        sqlite = ctypes.CDLL("libsqlite3.so.0")
        sqlite.sqlite3_memory_used.restype = ctypes.c_int64
        parts.append(f"sqlite {sqlite.sqlite3_memory_used() / 2**20:.1f}")
    except (OSError, AttributeError):
        pass
    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        parts.append(
            f"malloc used {info.uordblks / 2**20:.1f} free-kept {info.fordblks / 2**20:.1f}"
            f" mmapped {info.hblkhd / 2**20:.1f}"
        )
    except AttributeError:
        pass
    return " ".join(parts)


def _log_overhead(path: str) -> None:
    """Every 10 s append: seconds, traced MiB, tracemalloc's own MiB, then the C heap (a measuring aid)."""
    t0 = time.monotonic()
    while True:
        time.sleep(10)
        traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        own = tracemalloc.get_tracemalloc_memory()
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{time.monotonic() - t0:.0f} {traced / 2**20:.1f} {own / 2**20:.1f} {_c_heap()}\n")


def main() -> None:
    log = os.environ.get("RT_TRACEMALLOC_LOG", "")
    if log:
        threading.Thread(target=_log_overhead, args=(log,), daemon=True).start()
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _dump)
    sys.argv = ["roundtable", *sys.argv[1:]]
    runpy.run_module("roundtable", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
