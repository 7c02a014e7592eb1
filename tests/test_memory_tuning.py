"""The owner's memory settings: on glibc `tune()` really caps the arenas new threads get and
`trim()` runs; SQLite's soft heap limit holds for the connections opened afterwards; turned off
nothing changes, and on another C library only the SQLite limit applies.

Each case runs in a fresh interpreter: an arena limit holds for the whole process and an arena
once created stays, so the count must start from a process that never tuned anything."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from roundtable import memory_tuning

GLIBC = platform.libc_ver()[0] == "glibc"

# Eight threads allocate at the same time; then the 64 MiB-aligned anonymous mappings (glibc's
# non-main arenas) are counted from /proc/self/maps.
PROBE = r"""
import json, sys, threading
from roundtable import memory_tuning

tuning = memory_tuning.tune(arena_max=int(sys.argv[1])) if sys.argv[1] != "-" else None
start = threading.Barrier(8)

def work():
    start.wait()
    keep = [bytearray(4096) for _ in range(2000)]
    del keep

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
arenas = 0
for line in open("/proc/self/maps"):
    fields = line.split()
    lo, hi = (int(x, 16) for x in fields[0].split("-"))
    if len(fields) == 5 and fields[1].startswith("rw") and lo % (64 << 20) == 0 and hi - lo < (64 << 20) + 1:
        arenas += 1
trimmed = memory_tuning.trim()
import sqlite3
limit = sqlite3.connect(":memory:").execute("PRAGMA soft_heap_limit").fetchone()[0]
print(json.dumps({"applied": tuning.applied if tuning else None, "detail": tuning.detail if tuning else "",
                  "arenas": arenas, "trimmed": trimmed, "sqlite_limit": limit}))
"""


def _probe(arg: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, arg], capture_output=True, text=True, check=True, timeout=60, env=env
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc arenas")
def test_tune_caps_the_arenas_new_threads_get() -> None:
    untuned = _probe("-")
    tuned = _probe("2")
    assert tuned["applied"] is True and "at most 2 malloc arenas" in str(tuned["detail"])
    # Without the cap each thread that allocates gets an arena of its own; with it, one at most
    # besides the main heap.
    assert int(untuned["arenas"]) >= 4, untuned  # type: ignore[call-overload]
    assert int(tuned["arenas"]) <= 1, tuned  # type: ignore[call-overload]
    # SQLite's soft heap limit holds for every connection the process opens afterwards.
    assert untuned["sqlite_limit"] == 0 and tuned["sqlite_limit"] == memory_tuning.SQLITE_HEAP_LIMIT


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_turned_off_it_changes_nothing() -> None:
    import os

    off = _probe("2", env={**os.environ, memory_tuning.ENV: "0"})
    assert off["applied"] is False and memory_tuning.ENV in str(off["detail"])
    assert off["trimmed"] is False and off["sqlite_limit"] == 0
    if GLIBC:
        assert int(off["arenas"]) >= 4, off  # type: ignore[call-overload]


@pytest.mark.skipif(GLIBC, reason="another C library than glibc")
def test_a_no_op_off_glibc() -> None:
    tuning = memory_tuning.tune()
    assert tuning.applied is False and "not glibc" in tuning.detail
    assert tuning.sqlite_heap_limit == memory_tuning.SQLITE_HEAP_LIMIT
    assert memory_tuning.trim() is False


FREEZE = r"""
import gc, json
from roundtable import memory_tuning

first = memory_tuning.freeze_startup_heap()
made_after = [[i] for i in range(1000)]  # made after the freeze: the collector still sees them
second = memory_tuning.freeze_startup_heap()
print(json.dumps({"first": first, "second": second, "tracked": len(gc.get_objects())}))
"""


@pytest.mark.parametrize("setting", ["1", "0"])
def test_the_start_up_heap_is_frozen_once_and_not_when_turned_off(setting: str) -> None:
    env = {**os.environ, memory_tuning.ENV: setting}
    done = subprocess.run([sys.executable, "-c", FREEZE], capture_output=True, text=True, env=env, check=True)
    found = json.loads(done.stdout)
    if setting == "0":
        assert found["first"] == found["second"] == 0
        return
    assert found["first"] > 1000  # every object the interpreter and the import made
    assert found["second"] == found["first"]  # once per process: the later objects stay collectable
    assert found["tracked"] >= 1000
