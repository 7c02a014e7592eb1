"""One huge patch and the owner's event loop.

In a temporary git project with an author holding a directory claim, measures through
`Runtime.call` the wall time of `proposal.create` for a 900-file patch (inside the default
`repo.max_patch_files` of 1,000) and of the refusal of a 5,000-file one, and the event loop's
lag during each (`bench.looplag`: lateness of 10 ms sleeps), and the longest a small write
(`task.create`) waits meanwhile. Parsing, hashing and validating
run on worker threads and the limit refuses the larger patch before any per-file work, so the
loop's lag stays under 100 ms either way.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.apply import _git
from bench.looplag import LoopLag
from bench.rows import row

ALLOWED_FILES = 900
REFUSED_FILES = 5000


def _new_files(count: int, tag: str) -> str:
    return "".join(
        f"diff --git a/gen/{tag}{i}.txt b/gen/{tag}{i}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/gen/{tag}{i}.txt\n@@ -0,0 +1 @@\n+line {i}\n"
        for i in range(count)
    )


def _setup(root: Path) -> None:
    from roundtable.scaffold import init_project

    init_project(root)
    (root / "README.txt").write_text("bench\n")
    (root / ".gitignore").write_text(".roundtable/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench")


async def _measure(root: Path) -> list[dict[str, Any]]:
    from roundtable.errors import RoundtableError
    from roundtable.runtime import Runtime
    from roundtable.tools.context import Caller

    author = Caller("agent", "bench", agent_id="implementer-1")
    async with await Runtime.open(root) as rt:
        task = (await rt.call("task.create", {"title": "bench", "body_md": "b"}))["task"]["id"]
        await rt.call(
            "resource.claim",
            {
                "resource_type": "directory",
                "claim_type": "write",
                "task_id": task,
                "path": "gen",
                "agent_id": "implementer-1",
                "ttl_seconds": 3600,
            },
            author,
        )
        base = {
            "task_id": task,
            "agent_id": "implementer-1",
            "title": "t",
            "summary_md": "s",
            "affected_resources": [],
            "risk": "normal",
        }
        allowed, refused = _new_files(ALLOWED_FILES, "a"), _new_files(REFUSED_FILES, "r")
        writes_ms: list[float] = []
        done = asyncio.Event()

        async def other_writer() -> None:  # another agent's small writes meanwhile
            n = 0
            while not done.is_set():
                n += 1
                t = time.perf_counter()
                await rt.call("task.create", {"title": f"beside {n}", "body_md": "b"})
                writes_ms.append((time.perf_counter() - t) * 1000)
                await asyncio.sleep(0.01)

        async with LoopLag() as lag_ok:
            beside = asyncio.create_task(other_writer())
            t0 = time.perf_counter()
            await rt.call("proposal.create", {**base, "patch": allowed}, author)
            create_ms = (time.perf_counter() - t0) * 1000
            done.set()
            await beside
        async with LoopLag() as lag_refused:
            t0 = time.perf_counter()
            try:
                await rt.call("proposal.create", {**base, "patch": refused}, author)
            except RoundtableError as exc:
                assert "repo.max_patch_files" in str(exc), exc
            else:
                raise AssertionError("a 5,000-file patch was accepted")
            refuse_ms = (time.perf_counter() - t0) * 1000
    kib_ok, kib_refused = len(allowed) // 1024, len(refused) // 1024
    return [
        row("bigpatch", f"proposal.create ({ALLOWED_FILES} files)", create_ms, "ms", f"{kib_ok} KiB patch"),
        row(
            "bigpatch",
            f"loop lag max during create ({ALLOWED_FILES} files)",
            lag_ok.max_ms,
            "ms",
            f"p99 {lag_ok.p99_ms:.1f} ms over {len(lag_ok.samples_ms)} wake-ups",
            target="<= 100 ms",
        ),
        row(
            "bigpatch",
            f"task.create max latency beside the create ({ALLOWED_FILES} files)",
            max(writes_ms),
            "ms",
            f"{len(writes_ms)} small writes meanwhile; the patch is parsed and checked before the write lock",
        ),
        row("bigpatch", f"refusal ({REFUSED_FILES} files)", refuse_ms, "ms", f"{kib_refused} KiB patch, limit named"),
        row(
            "bigpatch",
            f"loop lag max during refusal ({REFUSED_FILES} files)",
            lag_refused.max_ms,
            "ms",
            f"p99 {lag_refused.p99_ms:.1f} ms over {len(lag_refused.samples_ms)} wake-ups",
            target="<= 100 ms",
        ),
    ]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="roundtable-bench-bigpatch-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        _setup(root)
        return asyncio.run(_measure(root))
