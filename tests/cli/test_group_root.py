"""`roundtable --root X <command>` works as `roundtable <command> --root X` (the README says every
command takes --root; before the command it was refused: "No such option '--root'")."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable.cli import cli


@pytest.mark.parametrize("command", [["status"], ["runs", "list"]])
def test_root_before_the_command(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # not inside the project: only --root can name it
    before = CliRunner().invoke(cli, ["--root", str(project), *command])
    after = CliRunner().invoke(cli, [*command, "--root", str(project)])
    assert before.exit_code == 0, before.output
    assert after.exit_code == 0 and before.output.splitlines()[:1] == after.output.splitlines()[:1]


def test_the_commands_own_root_wins(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "none"
    done = CliRunner().invoke(cli, ["--root", str(elsewhere), "status", "--root", str(project)])
    assert done.exit_code == 0, done.output
    missing = CliRunner().invoke(cli, ["--root", str(elsewhere), "status"])
    assert missing.exit_code != 0 and str(elsewhere) in missing.output
