"""What a hostile workspace costs the owner before it is refused, and what an ordinary one costs.

In a temporary git project of 300 files, one workspace per case (`workspace.create` through
`Runtime.call`), then the wall time of `workspace.propose`:

- hostile: 40 files of 15 MiB of random bytes (each under the per-file bound), and 20,000 small
  new files — refused by the cheap bounds (`workspaces.max_bytes`, `workspaces.max_files`) read
  by an `lstat` walk before git hashes anything (without them: git hashed and diffed it all);
- ordinary: three edited files (median of 5 proposals), and the same beside a git-ignored
  `.venv/` of 5,000 files (which the bounds must not count, and which costs one `git ls-files`
  walk when the plain count is over the bound).

`python -m bench workspace_bounds` prints the table.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.apply import _git
from bench.rows import row

BIG_FILES, BIG_BYTES = 40, 15 * 1024 * 1024
SMALL_FILES = 20_000
BASE_FILES = 300
VENV_FILES = 5_000
REPEATS = 5


def _setup(root: Path, workspaces: Path) -> None:
    from roundtable.scaffold import init_project

    init_project(root)
    config = root / ".roundtable" / "config.yaml"
    config.write_text(config.read_text() + f"workspaces:\n  dir: {workspaces}\n")
    for i in range(BASE_FILES):
        sub = root / "src" / f"pkg{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"mod{i}.py").write_text("".join(f"value_{n} = {n}\n" for n in range(40)))
    (root / ".gitignore").write_text(".roundtable/\n.venv/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "bench")


def _hostile_big(ws: Path) -> None:
    for i in range(BIG_FILES):
        (ws / f"blob{i}.bin").write_bytes(os.urandom(BIG_BYTES))


def _hostile_many(ws: Path) -> None:
    for i in range(SMALL_FILES):
        sub = ws / "gen" / f"d{i // 1000}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i}.txt").write_text(f"{i}\n")


def _edit(ws: Path, round_: int) -> None:
    for i in range(3):
        path = ws / "src" / f"pkg{i}" / f"mod{i}.py"
        path.write_text(path.read_text() + f"edited_{round_} = {round_}\n")


def _venv(ws: Path) -> None:
    for i in range(VENV_FILES):
        sub = ws / ".venv" / "lib" / f"p{i // 250}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{i}.py").write_text("x = 1\n" * 20)


async def _measure(root: Path) -> list[dict[str, Any]]:
    from roundtable.errors import RoundtableError
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.agents import sync_agents
    from roundtable.tools.context import OPERATOR, Caller

    author = Caller("agent", "bench", agent_id="implementer-1")
    rows: list[dict[str, Any]] = []
    async with await Runtime.open(root) as rt:
        await sync_agents(rt)

        async def workspace() -> tuple[str, Path]:
            task = (await rt.call("task.create", {"title": "bench", "body_md": "b"}, OPERATOR))["task"]["id"]
            made = await rt.call("workspace.create", {"agent_id": "implementer-1", "task_id": task}, OPERATOR)
            return task, Path(made["workspace"]["path"])

        async def propose(task: str) -> tuple[float, str]:
            args = {"task_id": task, "title": "t", "summary_md": "s", "request_review": False}
            t0 = time.perf_counter()
            try:
                await rt.call("workspace.propose", args, author)
                outcome = "proposed"
            except RoundtableError as exc:
                outcome = f"refused: {str(exc)[:110]}"
            return (time.perf_counter() - t0) * 1000, outcome

        for name, fill in (
            (f"hostile: {BIG_FILES} x 15 MiB random files", _hostile_big),
            (f"hostile: {SMALL_FILES:,} small files", _hostile_many),
        ):
            task, path = await workspace()
            await asyncio.to_thread(fill, path)
            ms, outcome = await propose(task)
            rows.append(row("workspace_bounds", f"{name}: propose", ms, "ms", outcome))

        for name, extra in (
            ("ordinary: 3 edited files", None),
            (f"ordinary + ignored .venv ({VENV_FILES:,} files)", _venv),
        ):
            task, path = await workspace()
            if extra is not None:
                await asyncio.to_thread(extra, path)
            times: list[float] = []
            outcome = ""
            for i in range(REPEATS):
                _edit(path, i)
                ms, outcome = await propose(task)
                times.append(ms)
            rows.append(
                row(
                    "workspace_bounds",
                    f"{name}: propose (median of {REPEATS})",
                    statistics.median(times),
                    "ms",
                    f"{outcome}; min {min(times):.0f} ms, base {BASE_FILES} files",
                )
            )
    return rows


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="roundtable-bench-wsbounds-") as tmp:
        root, workspaces = Path(tmp) / "project", Path(tmp) / "workspaces"
        root.mkdir()
        workspaces.mkdir()
        _setup(root, workspaces)
        return asyncio.run(_measure(root))
