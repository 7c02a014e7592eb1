"""Start-up costs a user feels: `roundtable --help` wall time (median of several runs)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def _wall(argv: list[str], runs: int = 7) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def run() -> list[dict[str, object]]:
    python_floor = _wall([sys.executable, "-c", "pass"])
    help_ms = _wall([sys.executable, "-m", "roundtable", "--help"])
    return [
        {"benchmark": "startup", "metric": "python -c pass (floor)", "value": python_floor, "unit": "ms", "note": ""},
        {
            "benchmark": "startup",
            "metric": "roundtable --help",
            "value": help_ms,
            "unit": "ms",
            "note": f"{help_ms / python_floor:.1f}x the bare interpreter",
        },
    ]
