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
    assert "revision 1 (in_review): src/app.py +1 -1" in proposed
    ws_id = listed.split()[0]
    assert _run("workspaces", "remove", "--root", root, ws_id).strip() == f"removed {ws_id}"
    assert not path.exists()
    assert _run("workspaces", "list", "--root", root).strip() == "no workspaces"


def test_connect_sets_a_harness_up_in_the_workspace(repo: Path) -> None:
    root = str(repo)
    task_id = json.loads(
        _run("mcp", "call", "--root", root, "--tool", "task_create", "--args", '{"title": "t", "body_md": "b"}')
    )["task"]["id"]
    out = _run("connect", "claude", "--root", root, "--agent", AUTHOR, "--workspace", "--task", task_id, "--approve")
    path = Path(_run("workspaces", "create", "--root", root, "--agent", AUTHOR, "--task", task_id).strip())
    assert f"cd {path}" in out
    entry = json.loads((path / ".mcp.json").read_text())["mcpServers"]["roundtable"]
    # Its bridge asks for a workspace session's listing (none of what the harness's own tools do).
    assert entry["args"][-6:] == ["--root", str(repo.resolve()), "--agent", AUTHOR, "--tools", "workspace"]
    assert (path / ".claude" / "settings.local.json").exists()
    assert not (repo / ".mcp.json").exists()  # the project itself is not pointed at
    # The harness's own files are never proposed; its edits are.
    assert " 0 files +0 -0 " in _run("workspaces", "list", "--root", root)
    (path / "src" / "app.py").write_text("print('harness')\n")
    proposed = _run(
        "workspaces", "propose", "--root", root, "--agent", AUTHOR, "--task", task_id, "--title", "t", "--summary", "s"
    )
    assert "revision 1 (in_review): src/app.py +1 -1" in proposed
    # Without --task, the agent's only workspace is the one.
    again = _run("connect", "codex", "--root", root, "--agent", AUTHOR, "--workspace")
    assert (path / ".codex" / "config.toml").exists() and f"cd {path}" in again
    assert " 1 files +1 -1 " in _run("workspaces", "list", "--root", root)
