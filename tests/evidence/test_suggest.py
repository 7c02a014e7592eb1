"""test.suggest derives commands from the repository's real markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.testing.test_suggest import suggest

from .conftest import AGENT, add_lines_patch, make_proposal

pytestmark = pytest.mark.anyio


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_no_markers_no_suggestions(tmp_path: Path) -> None:
    assert suggest(tmp_path) == []


def test_each_marker_maps_to_its_runner(tmp_path: Path) -> None:
    _write(tmp_path, "pyproject.toml", "[project]\nname = 'x'\n")
    _write(tmp_path, "package.json", json.dumps({"scripts": {"test": "vitest run"}}))
    _write(tmp_path, "go.mod", "module example.com/x\n")
    _write(tmp_path, "Cargo.toml", "[package]\nname = 'x'\n")
    _write(tmp_path, "Makefile", "VAR := 1\ntest: build\n\tgo test ./...\n")
    found = suggest(tmp_path)
    assert [s.command for s in found] == ["cargo test", "go test ./...", "make test", "npm test", "pytest"]
    assert {s.command: s.marker for s in found}["pytest"] == "pyproject.toml"


def test_placeholders_and_lockfiles(tmp_path: Path) -> None:
    _write(tmp_path, "package.json", json.dumps({"scripts": {"test": 'echo "Error: no test specified" && exit 1'}}))
    _write(tmp_path, "Makefile", "build:\n\tcc x.c\ntest := no\n")
    assert suggest(tmp_path) == []
    _write(tmp_path, "package.json", json.dumps({"scripts": {"test": "jest"}}))
    _write(tmp_path, "pnpm-lock.yaml", "lockfileVersion: 9\n")
    assert [s.command for s in suggest(tmp_path)] == ["pnpm test"]
    _write(tmp_path, "package.json", "{not json")
    assert suggest(tmp_path) == []


def test_narrowed_to_touched_languages(tmp_path: Path) -> None:
    _write(tmp_path, "package.json", json.dumps({"scripts": {"test": "jest"}}))
    _write(tmp_path, "setup.cfg", "[tool:pytest]\n")
    _write(tmp_path, "svc/go.mod", "module example.com/svc\n")
    assert [s.command for s in suggest(tmp_path, ["svc/cmd/main.go"])] == ["go -C svc test ./..."]
    assert [s.command for s in suggest(tmp_path, ["pkg/mod.py", "web/app.ts"])] == ["npm test", "pytest"]
    # Nothing language-specific touched (docs): the whole repository's suggestions.
    assert [s.command for s in suggest(tmp_path, ["README.md"])] == ["npm test", "pytest"]
    # Paths that try to leave the root are ignored.
    assert [s.command for s in suggest(tmp_path, ["../outside/x.go"])] == ["npm test", "pytest"]


async def test_tool_uses_the_proposal_patch(rt: Runtime) -> None:
    _write(rt.root, "pyproject.toml", "[tool.pytest.ini_options]\n")
    _write(rt.root, "Cargo.toml", "[package]\n")
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# change"]))
    out = await rt.call("test.suggest", {"proposal_id": pid}, AGENT)
    assert out == {
        "task_id": "T-1",
        "proposal_id": pid,
        "commands": ["pytest"],
        "suggestions": [{"command": "pytest", "marker": "pyproject.toml", "language": "python"}],
    }
    whole = await rt.call("test.suggest", {}, AGENT)
    assert whole["commands"] == ["cargo test", "pytest"] and whole["proposal_id"] == ""
    with pytest.raises(ToolError, match="get proposal P-nope: not found"):
        await rt.call("test.suggest", {"proposal_id": "P-nope"}, AGENT)


def test_allowed_commands_are_the_markers_exact_argv(tmp_path: Path) -> None:
    """Without configured commands, `test.run` accepts what `test.suggest` lists — for a
    proposal also what its touched files' markers imply — each as an exact argv."""
    from roundtable.services.policy.engine import TestsPolicy
    from roundtable.services.testing.test_exec import allowed_commands, resolve

    _write(tmp_path, "setup.cfg", "[tool:pytest]\n")
    _write(tmp_path, "svc/go.mod", "module example.com/svc\n")
    root_only = allowed_commands(tmp_path, TestsPolicy())
    assert [(c.name, c.argv) for c in root_only] == [("pytest", ("pytest",))]
    with_touched = allowed_commands(tmp_path, TestsPolicy(), ["svc/main.go"])
    assert [c.name for c in with_touched] == ["go -C svc test ./...", "pytest"]
    assert resolve("go -C svc test ./...", with_touched) is not None
    assert resolve("go -C svc test ./... -run X", with_touched) is None
    assert resolve("go -C / test ./...", with_touched) is None
    configured = TestsPolicy(commands={"unit": ("python3", "-m", "pytest", "-q")})
    [only] = allowed_commands(tmp_path, configured, ["svc/main.go"])
    assert only.name == "unit" and only.source == "POLICIES.ROUNDTABLE.md"
    assert resolve("unit", [only]) is only and resolve("python3 -m pytest -q", [only]) is only
    assert resolve("python3 -m pytest", [only]) is None


def _project_venv(repo: Path) -> str:
    """A `.venv` (no pip) whose `pytest` module only prints; returns its python's path."""
    import subprocess
    import sys

    _write(repo, "pyproject.toml", "[project]\nname = 'x'\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    python = str(repo / ".venv" / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "pytest.py").write_text("print('the project pytest ran')\n", encoding="utf-8")
    return python


async def test_a_python_project_runs_its_own_interpreter_in_the_sandbox(repo: Path) -> None:
    """The inferred command is the project's `.venv` python (by its path, not what it links to),
    and it runs in the test sandbox, which otherwise hides the project root (exit 127)."""
    from roundtable.tools.context import OPERATOR

    python = _project_venv(repo)
    assert [s.command for s in suggest(repo)] == [f"{python} -m pytest"]
    rt = await Runtime.open(repo)
    try:
        out = await rt.call("test.run", {"command": f"{python} -m pytest"}, OPERATOR)
        run = out["test_run"]
    finally:
        await rt.close()
    assert run["status"] == "passed" and run["exit_code"] == 0, run
