"""`make install PREFIX=…` from a fresh clone: a virtual environment of its own under the prefix
and a `roundtable` link in `PREFIX/bin` that works from any directory, and `connect` writes that
command's path into a harness's config. Opt-in (`make test-install`, which `.ci/run` runs after
`make test`): it builds a whole virtual environment from the package index."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.install
@pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None, reason="needs make and git")
def test_make_install_into_a_prefix_from_a_fresh_clone(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120)
    prefix = tmp_path / "prefix"
    done = subprocess.run(
        ["make", "-C", str(clone), "install", f"PREFIX={prefix}"], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr
    command = prefix / "bin" / "roundtable"
    assert (
        command.is_symlink() and command.resolve() == (prefix / "lib" / "roundtable" / "bin" / "roundtable").resolve()
    )
    assert f"installed {command} (roundtable, version" in done.stdout

    project = tmp_path / "mine"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}  # nothing of this checkout on PATH
    for args in (["init"], ["connect", "claude", "--agent", "implementer-1"]):
        step = subprocess.run([str(command), *args], cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert step.returncode == 0, step.stdout + step.stderr
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["roundtable"]
    assert entry["command"].startswith(str(prefix))  # the installed command, not this checkout's
    assert not (clone / ".venv").exists()  # install builds no checkout venv
