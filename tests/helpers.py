"""Helpers shared by the test packages: git in a temp project, agent callers."""

from __future__ import annotations

import subprocess
from pathlib import Path

from roundtable.tools.context import Caller

AUTHOR = "implementer-1"


def git(root: Path, *args: str) -> str:
    """Run git in `root` with a fixed identity; returns stdout (raises on failure)."""
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def agent(agent_id: str = AUTHOR) -> Caller:
    """An agent caller as the open HTTP endpoint would build it."""
    return Caller("agent", "http", agent_id=agent_id)


def make_git_project(root: Path, files: dict[str, str]) -> Path:
    """Write `files`, ignore `.roundtable/`, `git init` and commit everything."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text(".roundtable/\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root
