"""`make bench`: run every benchmark module, print one markdown table, save JSON.

Each module in `MODULES` exposes `run() -> list[dict]` whose rows carry `benchmark`, `metric`,
`value`, `unit`, an optional `note`, and optionally `floor` (the metric of the row it is measured
against) and `target` (`<= 2x`, `>= 50%` of the floor, or `<= 20 ms` for the value itself): see
`bench/rows.py`. The table adds a `ratio` column (value ÷ the named floor) and a `target` column
(met/missed); the JSON keeps every row with those fields. After each module come its `loop lag
p99` and `loop lag max` rows: a probe in every event loop the module runs in this process
(`bench.looplag`) records how late 10 ms sleeps wake.

- `python -m bench` runs every module and saves `bench/results/latest.json`;
- `python -m bench claims watch` runs a subset (saved as `bench/results/claims-watch.json`);
- `python -m bench agent_task --port 7200` gives a benchmark that starts an owner that HTTP port;
- `python -m bench --compare OLD.json` prints the change per row between OLD.json and the latest
  full run; with module names (`python -m bench claims --compare OLD.json`) it runs them first and
  compares their rows; `--against NEW.json` names the newer file explicitly.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench.looplag import LoopLag, probing_every_loop
from bench.rows import compare, evaluate, row, table

MODULES = (
    "transports",
    "handshake",
    "claims",
    "watch",
    "apply",
    "bigpatch",
    "evidence",
    "sessions",
    "gateway",
    "tui",
    "startup",
    "chair",
    "state",
    "memory",
    "writes",
    "notify",
    "agent_task",
    "signatures",
    "workspace_bounds",
)
RESULTS = Path(__file__).resolve().parent / "results"


def _run(selected: list[str]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name in selected:
        module_name = f"bench.{name}"
        if importlib.util.find_spec(module_name) is None:
            print(f"(skipping {name}: not built yet)", file=sys.stderr)
            continue
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(module_name)
        try:
            with probing_every_loop() as lag:
                rows.extend(module.run())
            rows.extend(_lag_rows(name, lag))
        except Exception as exc:  # a broken benchmark must not hide the others
            rows.append({"benchmark": name, "metric": "error", "value": repr(exc), "unit": "", "note": ""})
        print(f"  {name} took {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return evaluate(rows)


def _lag_rows(name: str, lag: LoopLag) -> list[dict[str, Any]]:
    """The module's loop-lag rows: how late 10 ms sleeps woke in the loops it ran in this process
    (an owner it runs as a subprocess reports its own, where the module adds them)."""
    if not lag.samples_ms:
        return []
    note = f"this process's event loops, set-up (imports, opening) included; {len(lag.samples_ms)} wake-ups"
    return [
        row(name, "loop lag p99", lag.p99_ms, "ms", note),
        row(name, "loop lag max", lag.max_ms, "ms", note),
    ]


def _load(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text())
    rows = data.get("rows", []) if isinstance(data, dict) else data
    return evaluate(r for r in rows if isinstance(r, dict))


def main(argv: list[str]) -> int:
    names: list[str] = []
    old_path: Path | None = None
    new_path: Path | None = None
    args = iter(argv)
    for arg in args:
        if arg == "--port":  # the port a benchmark that starts an owner gives it (agent_task)
            value = next(args, None)
            if value is None or not value.isdigit():
                print("--port needs a port number", file=sys.stderr)
                return 2
            os.environ["BENCH_PORT"] = value
        elif arg in ("--compare", "--against"):
            value = next(args, None)
            if value is None:
                print(f"{arg} needs a JSON file", file=sys.stderr)
                return 2
            if arg == "--compare":
                old_path = Path(value)
            else:
                new_path = Path(value)
        else:
            names.append(arg)
    if old_path is not None and not names:
        new_rows = _load(new_path or RESULTS / "latest.json")
        print("\n".join(compare(_load(old_path), new_rows)))
        return 0
    rows = _run(names or list(MODULES))
    print("\n".join(table(rows)))
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "time": time.time()}
    meta["load_average"] = list(os.getloadavg())
    saved = RESULTS / ("latest.json" if not names else "-".join(names) + ".json")
    saved.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2, default=str))
    print(f"\n(saved {saved})", file=sys.stderr)
    if old_path is not None:
        print()
        print("\n".join(compare(_load(old_path), rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
