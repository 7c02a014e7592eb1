"""`roundtable workspaces`: create prints the path, list shows the live work, propose and
remove act through the registered operations."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from roundtable.cli import cli
from tests.helpers import AUTHOR


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_create_list_propose_remove(repo: Path) -> None:
    root = str(repo)
    task = _run("mcp", "call", "--root", root, "--tool", "task_create", "--args", '{"title": "t", "body_md": "b"}')
    task_id = json.loads(task)["task"]["id"]
    path = Path(_run("workspaces", "create", "--root", root, "--agent", AUTHOR, "--task", task_id).strip())
    assert path.is_dir() and (path / "src" / "app.py").exists()
    assert _run("workspaces", "create", "--root", root, "--agent", AUTHOR, "--task", task_id).strip() == str(path)
    (path / "src" / "app.py").write_text("print('cli')\n")
    listed = _run("workspaces", "list", "--root", root)
    assert f"{AUTHOR} {task_id} active 1 files +1 -1 {path}" in listed
    proposed = _run(
        "workspaces", "propose", "--root", root, "--agent", AUTHOR, "--task", task_id, "--title", "t", "--summary", "s"
    )
    assert "revision 1: 1 files +1 -1" in proposed
    ws_id = listed.split()[0]
    assert _run("workspaces", "remove", "--root", root, ws_id).strip() == f"removed {ws_id}"
    assert not path.exists()
    assert _run("workspaces", "list", "--root", root).strip() == "no workspaces"
