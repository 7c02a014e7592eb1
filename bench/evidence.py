"""Evidence latency: the automatic security scan of a 50-file patch, and `test.run` /
`test.suggest` through `Runtime.call` in a temporary git repository.

`test.run` of `printf ok` measures our overhead around a trivial process: guard, the `running`
row, the subprocess, the atomic log write and the outcome row (two write transactions).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FILES = 50
ADDED = 20
ITERATIONS = 20


def _row(metric: str, samples: list[float], note: str = "") -> dict[str, Any]:
    return {
        "benchmark": "evidence",
        "metric": metric,
        "value": round(statistics.median(samples), 3),
        "unit": "ms",
        "note": note or f"median of {len(samples)}; max {max(samples):.1f} ms",
    }


def _patch() -> str:
    parts = []
    for i in range(FILES):
        path = f"src/mod_{i:02d}.py"
        body = "".join(f"+value_{n} = compute({n}, format='x')  # log it\n" for n in range(ADDED))
        parts.append(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,0 +1,{ADDED} @@\n{body}")
    return "".join(parts)


def _scan_samples() -> list[float]:
    from roundtable.services.pathguard import is_sensitive_path
    from roundtable.services.security_scan import scan_patch

    text = _patch()
    samples = []
    for _ in range(ITERATIONS):
        started = time.perf_counter()
        scan_patch(text, is_sensitive=is_sensitive_path)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def _calls(root: Path) -> tuple[list[float], list[float]]:
    from roundtable.runtime import Runtime
    from roundtable.tools.context import Caller

    agent = Caller("agent", "http", agent_id="tester-1")
    rt = await Runtime.open(root)
    runs, suggests = [], []
    try:
        for _ in range(ITERATIONS):
            started = time.perf_counter()
            await rt.call("test.run", {"command": "printf ok"}, agent)
            runs.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await rt.call("test.suggest", {}, agent)
            suggests.append((time.perf_counter() - started) * 1000)
    finally:
        await rt.close()
    return runs, suggests


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    rows = [_row("security scan, 50 files x 20 added lines", _scan_samples())]
    with tempfile.TemporaryDirectory(prefix="rt-bench-evidence-") as tmp:
        root = Path(tmp)
        init_project(root)
        (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
        (root / "Makefile").write_text("test:\n\tpytest\n")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        runs, suggests = asyncio.run(_calls(root))
    rows.append(_row("test.run printf ok (end to end)", runs))
    rows.append(_row("test.suggest (root markers)", suggests))
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
