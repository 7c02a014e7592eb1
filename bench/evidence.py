"""Evidence latency: the automatic security scan of a 50-file patch, and `test.run` /
`test.suggest` through `Runtime.call` in a temporary git repository.

`test.run` of `printf ok` measures our overhead around a trivial process: the command choice,
the `running` row, the scratch worktree (snapshot, `git worktree add`, the revision's patch),
the sandboxed subprocess, the cleanup, the atomic log write and the outcome row. Per sandbox
kind (bubblewrap; Landlock plus namespaces) the launcher alone and the worktree alone are
measured as well.
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
    from roundtable.services.governance.security_scan import scan_patch
    from roundtable.services.repository.pathguard import is_sensitive_path

    text = _patch()
    samples = []
    for _ in range(ITERATIONS):
        started = time.perf_counter()
        scan_patch(text, is_sensitive=is_sensitive_path)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


SANDBOX_RUNS = 10
PATCH = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"


async def _calls(root: Path) -> tuple[list[float], list[float]]:
    from roundtable.runtime import Runtime
    from roundtable.tools.context import Caller

    agent = Caller("agent", "http", agent_id="tester-1")
    rt = await Runtime.open(root)
    runs, suggests = [], []
    try:
        for _ in range(ITERATIONS):
            started = time.perf_counter()
            await rt.call("test.run", {"command": "ok"}, agent)
            runs.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            await rt.call("test.suggest", {}, agent)
            suggests.append((time.perf_counter() - started) * 1000)
    finally:
        await rt.close()
    return runs, suggests


def _policy(root: Path, kind: str) -> None:
    (root / "POLICIES.ROUNDTABLE.md").write_text(
        f"```yaml\ntests:\n  commands:\n    ok: [printf, ok]\n  sandbox: {kind}\n```\n", encoding="utf-8"
    )


async def _sandbox_samples(root: Path, kind: str) -> dict[str, list[float]]:
    """Per sandbox kind: the launcher alone (printf ok in a directory), the scratch worktree
    with the patch applied (create + remove), and test.run of a proposal end to end."""
    from roundtable.runtime import Runtime
    from roundtable.sandbox import runner
    from roundtable.services.policy.engine import load_policy
    from roundtable.services.repository import scratch
    from roundtable.services.testing import test_exec
    from roundtable.tools.context import Caller

    _policy(root, kind)
    sandbox = await runner.choose(kind)
    out: dict[str, list[float]] = {"launch": [], "session": [], "worktree": [], "proposal": []}
    with tempfile.TemporaryDirectory(prefix="rt-bench-sandbox-") as work:
        spec = runner.build_spec(kind, ["printf", "ok"], Path(work), root=root, executable=sandbox.executable)
        session = runner.build_spec(
            kind, ["printf", "ok"], Path(work), root=root, profile="session", executable=sandbox.executable
        )
        for name, one in (("launch", spec), ("session", session)):
            for _ in range(SANDBOX_RUNS):
                started = time.perf_counter()
                done = await test_exec.execute(["printf", "ok"], Path(work), spec=one)
                out[name].append((time.perf_counter() - started) * 1000)
                assert done.status == "passed", done
    for _ in range(SANDBOX_RUNS):
        started = time.perf_counter()
        tree = await scratch.create(root, PATCH)
        await scratch.remove(tree)
        out["worktree"].append((time.perf_counter() - started) * 1000)
    author = Caller("agent", "http", agent_id="implementer-1")
    tester = Caller("agent", "http", agent_id="tester-1")
    rt = await Runtime.open(root)
    rt.policy = load_policy(root)
    try:
        task = await rt.call("task.create", {"title": "t", "body_md": "b"})
        task_id = task["task"]["id"]
        claim = {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": "app.py"}
        await rt.call("resource.claim", {**claim, "agent_id": "implementer-1"}, author)
        created = await rt.call(
            "proposal.create",
            {
                "task_id": task_id,
                "title": "y",
                "summary_md": "s",
                "risk": "normal",
                "patch": PATCH,
                "affected_resources": [],
            },
            author,
        )
        pid = created["proposal"]["id"]
        for _ in range(SANDBOX_RUNS):
            started = time.perf_counter()
            result = await rt.call("test.run", {"command": "ok", "proposal_id": pid}, tester)
            out["proposal"].append((time.perf_counter() - started) * 1000)
            assert result["test_run"]["status"] == "passed" and result["test_run"]["sandbox"] == kind, result
    finally:
        await rt.close()
    return out


def _git_project(root: Path) -> None:
    from roundtable.scaffold import init_project

    init_project(root)
    (root / "app.py").write_text("x = 1\n")
    (root / ".gitignore").write_text(".roundtable/\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=root, check=True)


def run() -> list[dict[str, Any]]:
    from roundtable.sandbox import runner

    rows = [_row("security scan, 50 files x 20 added lines", _scan_samples())]
    with tempfile.TemporaryDirectory(prefix="rt-bench-evidence-") as tmp:
        root = Path(tmp)
        _git_project(root)
        (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
        (root / "Makefile").write_text("test:\n\tpytest\n")
        _policy(root, "auto")
        runs, suggests = asyncio.run(_calls(root))
    rows.append(_row("test.run ok = printf ok, no proposal (worktree + sandbox, end to end)", runs))
    rows.append(_row("test.suggest (root markers)", suggests))
    for kind in ("bwrap", "landlock"):
        why = asyncio.run(runner.problem(kind))
        if why:
            rows.append(
                {"benchmark": "evidence", "metric": f"{kind}: not available", "value": None, "unit": "ms", "note": why}
            )
            continue
        with tempfile.TemporaryDirectory(prefix="rt-bench-evidence-") as tmp:
            root = Path(tmp)
            _git_project(root)
            samples = asyncio.run(_sandbox_samples(root, kind))
        rows.append(_row(f"{kind}: launcher + printf ok in a directory", samples["launch"]))
        rows.append(_row(f"{kind}: session profile, launcher + printf ok", samples["session"]))
        rows.append(
            _row(f"scratch worktree: snapshot + worktree add + apply + remove ({kind} pass)", samples["worktree"])
        )
        rows.append(_row(f"{kind}: test.run of a proposal (worktree + apply + run + cleanup)", samples["proposal"]))
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
