"""Governed patch pipeline latency for a 50-file patch.

Builds a temporary git repository with 50 files of 40 lines, an author holding a directory
claim, and per iteration: `proposal.create` of a patch changing one line in every file, two
approving votes and a passing `test.run`, then measures through `Runtime.call`:
`proposal.create`, `patch.validate` (dry run + every gate), `patch.apply` (dry run, scratch
apply for after-hashes, intent + rollback artefact, `git apply`, commit) and `patch.rollback`.
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
LINES = 40
ITERATIONS = 5


def _row(metric: str, samples: list[float], note: str = "") -> dict[str, Any]:
    return {
        "benchmark": "apply",
        "metric": metric,
        "value": round(statistics.median(samples), 3),
        "unit": "ms",
        "note": note or f"median of {len(samples)}; max {max(samples):.1f} ms",
    }


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args], cwd=root, check=True, capture_output=True
    )


def _setup(root: Path) -> None:
    from roundtable.scaffold import init_project

    init_project(root)
    # Two registered reviewers: votes count only from agents the configuration names.
    config = root / ".roundtable" / "config.yaml"
    text = config.read_text()
    old = "  reviewers:\n    count: 1\n"
    if old in text:
        config.write_text(text.replace(old, "  reviewers:\n    count: 2\n"))
    src = root / "src"
    src.mkdir()
    for i in range(FILES):
        (src / f"mod_{i:02d}.py").write_text("".join(f"value_{n} = {n}\n" for n in range(LINES)))
    (root / ".gitignore").write_text(".roundtable/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench")


def _patch(tag: int) -> str:
    parts = []
    for i in range(FILES):
        path = f"src/mod_{i:02d}.py"
        parts.append(
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -20,3 +20,3 @@\n value_19 = 19\n-value_20 = 20\n+value_20 = {1000 + tag}\n value_21 = 21\n"
        )
    return "".join(parts)


async def _measure(root: Path) -> list[dict[str, Any]]:
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.agents import sync_agents
    from roundtable.tools.context import OPERATOR, Caller

    author = Caller("agent", "bench", agent_id="implementer-1")
    create_ms: list[float] = []
    validate_ms: list[float] = []
    apply_ms: list[float] = []
    rollback_ms: list[float] = []
    async with await Runtime.open(root) as rt:
        await sync_agents(rt)  # votes count only from registered agents
        task = (await rt.call("task.create", {"title": "bench", "body_md": "b"}))["task"]["id"]
        claim = {
            "resource_type": "directory",
            "claim_type": "write",
            "task_id": task,
            "path": "src",
            "agent_id": "implementer-1",
            "ttl_seconds": 3600,
        }
        for it in range(ITERATIONS):
            await rt.call("resource.claim", claim, author)  # an apply releases the author's claims
            args = {
                "task_id": task,
                "agent_id": "implementer-1",
                "title": "t",
                "summary_md": "s",
                "affected_resources": ["directory:src"],
                "risk": "normal",
                "patch": _patch(it),
            }
            t0 = time.perf_counter()
            pid = (await rt.call("proposal.create", args, author))["proposal"]["id"]
            create_ms.append((time.perf_counter() - t0) * 1000)
            for who in ("reviewer-1", "reviewer-2"):
                await rt.call(
                    "vote.cast",
                    {"proposal_id": pid, "agent_id": who, "vote": "approve", "reason_md": "ok"},
                    Caller("agent", "bench", agent_id=who),
                )
            await rt.call("test.run", {"command": "printf ok", "proposal_id": pid})
            t0 = time.perf_counter()
            report = await rt.call("patch.validate", {"proposal_id": pid})
            validate_ms.append((time.perf_counter() - t0) * 1000)
            assert report["applicable"], report["gates"]
            t0 = time.perf_counter()
            out = await rt.call("patch.apply", {"proposal_id": pid}, OPERATOR)
            apply_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            await rt.call("patch.rollback", {"transaction_id": out["transaction"]["id"]}, OPERATOR)
            rollback_ms.append((time.perf_counter() - t0) * 1000)
    return [
        _row("proposal.create (50 files)", create_ms),
        _row("patch.validate (50 files)", validate_ms),
        _row("patch.apply (50 files)", apply_ms),
        _row("patch.rollback (50 files)", rollback_ms),
    ]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="roundtable-bench-apply-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        _setup(root)
        return asyncio.run(_measure(root))


if __name__ == "__main__":
    for row in run():
        print(row)
