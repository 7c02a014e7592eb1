"""`make bench`: run every benchmark module, print one markdown table, save JSON.

Each module in `MODULES` exposes `run() -> list[dict]` whose rows carry `benchmark`, `metric`,
`value`, `unit` and an optional `note` (targets and ratios to the floor go in the note).
`python -m bench claims watch` runs a subset.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path

MODULES = (
    "transports",
    "claims",
    "watch",
    "apply",
    "evidence",
    "sessions",
    "tui",
    "startup",
    "chair",
    "state",
    "memory",
    "writes",
)
RESULTS = Path(__file__).resolve().parent / "results"


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if value < 100 else f"{value:,.0f}"
    return str(value)


def main(argv: list[str]) -> int:
    selected = argv or list(MODULES)
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
            rows.extend(module.run())
        except Exception as exc:  # a broken benchmark must not hide the others
            rows.append({"benchmark": name, "metric": "error", "value": repr(exc), "unit": "", "note": ""})
        print(f"  {name} took {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    print("| benchmark | metric | value | unit | note |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row.get('benchmark', '')} | {row.get('metric', '')} | {_format(row.get('value', ''))} "
            f"| {row.get('unit', '')} | {row.get('note', '')} |"
        )
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "time": time.time()}
    (RESULTS / "latest.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2, default=str))
    print(f"\n(saved {RESULTS / 'latest.json'})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
