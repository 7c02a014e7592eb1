"""Path-escape corpus against every path-taking tool: `..`, absolute paths, symlinks leading
out of the root, hidden directories, unicode look-alikes wrapped around real escapes, very long
names and NUL bytes. Every input is refused with a message, and neither the database nor any
file (inside the root or in the directory next to it) changes."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from tests.faults.helpers import AUTHOR, agent, db_fingerprint, make_git_project, tree_fingerprint

pytestmark = pytest.mark.anyio

ESCAPES = [
    "../outside/secret.txt",
    "../../etc/passwd",
    "src/../../outside/secret.txt",
    "./src/../../outside",
    "/etc/passwd",
    "OUTSIDE_ABS",  # replaced by the absolute path of the outside file
    "ROOT_ABS/../outside/secret.txt",  # absolute, through the root, then out
    "link_out_file",
    "link_out_dir/secret.txt",
    "link_out_dir/new.txt",
    "src/up/outside/secret.txt",
    ".git/config",
    ".roundtable/roundtable.db",
    "src/../.git/HEAD",
    "src/\uff0e\uff0e/../../../outside/secret.txt",  # look-alike dots hiding a real escape
    "src/\u2024\u2024/../../../etc/passwd",
    "src/app.py\x00.txt",
    "\x00",
    "../" * 60 + "etc/passwd",
    "a/" * 3000 + "../" * 3001 + "outside/secret.txt",
]
# Names that look like escapes but are ordinary (missing) names inside the root: reading them
# must fail as "not found" without ever touching anything outside.
LOOKALIKES = ["\uff0e\uff0e/outside/secret.txt", "\u2025/etc/passwd", "..\u2215outside\u2215secret.txt", "x" * 5000]


@pytest.fixture
async def env(tmp_path: Path, project: Path) -> AsyncIterator[tuple[Runtime, Path, Path, str]]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    make_git_project(project, {"src/app.py": "def main():\n    return 1\n"})
    os.symlink(outside / "secret.txt", project / "link_out_file")
    os.symlink(outside, project / "link_out_dir")
    os.symlink("../..", project / "src" / "up")
    rt = await Runtime.open(project)
    task = await rt.call("task.create", {"title": "t", "body_md": "b"})
    try:
        yield rt, project, outside, str(task["task"]["id"])
    finally:
        await rt.close()


def _concrete(path: str, root: Path, outside: Path) -> str:
    return path.replace("OUTSIDE_ABS", str(outside / "secret.txt")).replace("ROOT_ABS", str(root))


def _patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-top secret\n+owned\n"


def _new_file_patch(path: str) -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+owned\n"


CALLS: dict[str, Callable[[str, str], tuple[str, dict[str, Any]]]] = {
    "repo.read_file": lambda p, t: ("repo.read_file", {"path": p}),
    "repo.search": lambda p, t: ("repo.search", {"query": "secret", "path": p}),
    "repo.symbols": lambda p, t: ("repo.symbols", {"path": p}),
    "repo.dependency_context": lambda p, t: ("repo.dependency_context", {"path": p}),
    "resource.claim path": lambda p, t: (
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": t, "path": p, "agent_id": AUTHOR},
    ),
    "resource.claim resource_id": lambda p, t: (
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": t, "resource_id": f"file:{p}", "agent_id": AUTHOR},
    ),
    "task.create readable_paths": lambda p, t: ("task.create", {"title": "x", "body_md": "y", "readable_paths": [p]}),
    "proposal.create patch": lambda p, t: (
        "proposal.create",
        {
            "task_id": t,
            "agent_id": AUTHOR,
            "title": "x",
            "summary_md": "y",
            "affected_resources": [],
            "risk": "normal",
            "patch": _patch(p),
        },
    ),
    "proposal.create new file": lambda p, t: (
        "proposal.create",
        {
            "task_id": t,
            "agent_id": AUTHOR,
            "title": "x",
            "summary_md": "y",
            "affected_resources": [],
            "risk": "normal",
            "patch": _new_file_patch(p),
        },
    ),
    "proposal.create affected_resources": lambda p, t: (
        "proposal.create",
        {
            "task_id": t,
            "agent_id": AUTHOR,
            "title": "x",
            "summary_md": "y",
            "affected_resources": [f"file:{p}"],
            "risk": "normal",
            "patch": _patch("src/app.py"),
        },
    ),
}


async def _refused(rt: Runtime, root: Path, outside: Path, tool: str, args: dict[str, Any]) -> str:
    db_before = await db_fingerprint(rt)
    files_before = tree_fingerprint(root)
    outside_before = tree_fingerprint(outside)
    with pytest.raises(ToolError) as info:
        await rt.call(tool, args, agent())
    message = str(info.value)
    assert message and "Traceback" not in message and "internal error" not in message, message
    assert await db_fingerprint(rt) == db_before, f"{tool} {args!r} changed the database"
    assert tree_fingerprint(root) == files_before, f"{tool} {args!r} changed files"
    assert tree_fingerprint(outside) == outside_before
    return message


# `task.create` checks readable_paths lexically (no `..`, relative, no sensitive names), so a
# symlink in the tree that leads out is accepted; the read tools resolve it at use and refuse.
SYMLINKS_OUT = {"link_out_file", "link_out_dir/new.txt"}


@pytest.mark.parametrize("kind", list(CALLS))
async def test_every_escape_is_refused(env: tuple[Runtime, Path, Path, str], kind: str) -> None:
    rt, root, outside, task_id = env
    for raw in ESCAPES:
        path = _concrete(raw, root, outside)
        tool, args = CALLS[kind](path, task_id)
        message = await _refused(rt, root, outside, tool, args)
        assert "top secret" not in message


@pytest.mark.parametrize("path", sorted(SYMLINKS_OUT))
async def test_readable_paths_symlink_out_is_refused(env: tuple[Runtime, Path, Path, str], path: str) -> None:
    rt, root, outside, task_id = env
    tool, args = CALLS["task.create readable_paths"](path, task_id)
    await _refused(rt, root, outside, tool, args)


@pytest.mark.parametrize("kind", ["repo.read_file", "repo.symbols", "repo.dependency_context"])
async def test_lookalikes_are_plain_missing_names(env: tuple[Runtime, Path, Path, str], kind: str) -> None:
    rt, root, outside, task_id = env
    for path in LOOKALIKES:
        tool, args = CALLS[kind](path, task_id)
        message = await _refused(rt, root, outside, tool, args)
        assert "top secret" not in message


async def test_search_never_returns_outside_content(env: tuple[Runtime, Path, Path, str]) -> None:
    rt, _root, _outside, _task = env
    out = await rt.call("repo.search", {"query": "top secret"}, agent())
    assert "top secret" not in repr(out)
