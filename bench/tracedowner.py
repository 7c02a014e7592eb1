"""The owner (`python -m roundtable ARGS`) with Python allocation tracing on demand, for the soak.

`python -m bench.tracedowner start --root ROOT` runs exactly what `python -m roundtable` runs.
SIGUSR1 starts `tracemalloc` (one frame per allocation) and takes the baseline snapshot; SIGUSR2
compares a new snapshot with that baseline and writes the ten source lines whose live memory grew
most to the file named by `RT_TRACEMALLOC_OUT` (one line each: size, growth, count, place).
Tracing costs CPU on every allocation, so the soak starts it only once its RSS window opens.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
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
    lines = [f"traced now {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB"]
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


def main() -> None:
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _dump)
    sys.argv = ["roundtable", *sys.argv[1:]]
    runpy.run_module("roundtable", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
