"""`roundtable init` for a first-time user: a warning outside git, `.roundtable/` kept out of git,
next steps, `--force` named on a second run; `run`/`start` before `init` create nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from roundtable.scaffold import ignore_state_dir


def rt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roundtable", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )


def test_init_in_a_git_repository_ignores_state_and_prints_next_steps(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("build/")  # no final newline
    out = rt("init", "--root", str(root))
    assert out.returncode == 0, out.stderr
    assert "warning" not in out.stderr
    assert (root / ".gitignore").read_text() == (
        "build/\n# roundtable's private state: database, credentials, logs\n.roundtable/\n"
    )
    assert "added .roundtable/ to .gitignore" in out.stdout
    ignored = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", ".roundtable/roundtable.db"], check=False)
    assert ignored.returncode == 0
    assert "next:" in out.stdout and "git init" not in out.stdout
    for step in (
        f"roundtable connect claude --agent implementer-1 --approve --root {root}",
        f"roundtable connect codex --agent implementer-1 --trust --root {root}",
        f"roundtable start --root {root}",
        f"roundtable doctor --root {root}",
    ):
        assert step in out.stdout
    again = rt("init", "--root", str(root))
    assert again.returncode == 1 and "rerun with --force" in again.stderr
    forced = rt("init", "--root", str(root), "--force")
    assert forced.returncode == 0 and "added .roundtable/" not in forced.stdout
    assert (root / ".gitignore").read_text().count(".roundtable/") == 1


def test_init_outside_git_warns(tmp_path: Path) -> None:
    out = rt("init", cwd=tmp_path)
    assert out.returncode == 0
    assert f"warning: {tmp_path} is not inside a git repository" in out.stderr
    assert f"1. git init {tmp_path}" in out.stdout
    assert "--root" not in out.stdout  # run from the project itself: the commands need no --root


@pytest.mark.parametrize("existing", ["/.roundtable\n", ".roundtable\n", "x\n.roundtable/*\n"])
def test_an_existing_ignore_line_is_respected(tmp_path: Path, existing: str) -> None:
    (tmp_path / ".gitignore").write_text(existing)
    assert ignore_state_dir(tmp_path) is False
    assert (tmp_path / ".gitignore").read_text() == existing


@pytest.mark.parametrize("command", [["run", "--headless"], ["start"]])
def test_run_or_start_before_init_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    out = rt(*command, "--root", str(tmp_path))
    assert out.returncode == 1
    assert f"run `roundtable init --root {tmp_path}` first" in out.stderr
    assert list(tmp_path.iterdir()) == []  # no .roundtable/, no owner.lock


def test_run_headless_on_a_missing_root_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "deeper"
    out = rt("run", "--headless", "--root", str(missing))
    assert out.returncode == 1
    assert out.stderr.strip() == (
        f"project root {missing} does not exist; create a project there with `roundtable init --root {missing}`"
    )
    assert not (tmp_path / "nope").exists()


def test_commands_find_the_project_upwards_and_init_refuses_to_nest(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert rt("init", "--root", str(root)).returncode == 0
    sub = root / "src" / "deep"
    sub.mkdir(parents=True)
    listed = rt("runs", "create", "--goal", "from below", "--run", "RUN-sub", cwd=sub)
    assert listed.returncode == 0, listed.stderr
    assert "RUN-sub" in rt("runs", "list", "--root", str(root)).stdout  # the project above, not a new one
    assert not (sub / ".roundtable").exists()

    nested = rt("init", cwd=sub)
    assert nested.returncode == 1
    assert f"is inside the roundtable project {root.resolve()}" in nested.stderr
    assert "roundtable init --force" in nested.stderr and not (sub / ".roundtable").exists()
    forced = rt("init", "--force", cwd=sub)
    assert forced.returncode == 0, forced.stderr
    assert (sub / ".roundtable" / "config.yaml").is_file()
    # Now the nested project is the nearest one below it.
    assert "no runs yet" in rt("runs", "list", cwd=sub).stdout
