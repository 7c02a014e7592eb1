"""`roundtable sessions show S-… --transcript | --follow`: the session's transcript in words from
the harness's stream in its log; `--follow` prints lines as they are appended and stops once the
session has ended and everything it wrote is shown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from roundtable.cli import cli

STREAMS = Path(__file__).parent / "streams"


def _register(project: Path, session_id: str) -> None:
    args = ["sessions", "register", "--id", session_id, "--agent", "implementer-1", "--run", "R"]
    out = CliRunner().invoke(cli, [*args, "--adapter", "claude", "--cwd", "/w", "--root", str(project)])
    assert out.exit_code == 0, out.output


def _log(project: Path, session_id: str) -> Path:
    path = project / ".roundtable" / "logs" / "sessions" / f"{session_id}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_show_transcript_prints_the_stream_in_words(project: Path) -> None:
    _register(project, "S-1")
    stream = (STREAMS / "claude-code-2.1.197-refused-and-asks.jsonl").read_text(encoding="utf-8")
    _log(project, "S-1").write_text(stream, encoding="utf-8")
    out = CliRunner().invoke(cli, ["sessions", "show", "S-1", "--transcript", "--root", str(project)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[1:4] == [
        "→ Read(file_path=/etc/hostname)",
        "← Read: 1 vm 2",
        "→ Bash(command=ls /, description=list the root)",
    ]
    assert "agent: I read the hostname. I was not allowed to run the shell: should I go on without it?" in lines
    assert (
        lines[-1]
        == "— S-1 active · waiting for a permission: not allowed: Bash(command=ls /, description=list the root)"
    )
    missing = CliRunner().invoke(cli, ["sessions", "show", "S-404", "--transcript", "--root", str(project)])
    assert missing.exit_code == 1 and "no session S-404" in missing.output


def test_follow_prints_appended_lines_until_the_session_ends(project: Path) -> None:
    _register(project, "S-2")
    log = _log(project, "S-2")
    stream = (STREAMS / "codex-0.171.0-shell-and-asks.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(stream[:3]), encoding="utf-8")
    follower = subprocess.Popen(
        [sys.executable, "-m", "roundtable", "sessions", "show", "S-2", "--follow", "--root", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        first = follower.stdout.readline()
        assert first == "· session 01a2379f-e368-7c60-8e76-cc0261954f1f started\n"
        with log.open("a", encoding="utf-8") as out:
            out.writelines(stream[3:])
        seen = [first]
        while not seen[-1].startswith("agent: "):
            seen.append(follower.stdout.readline())
            assert seen[-1], seen
        assert "✗ shell: exit 2 · ls: cannot access '/nonexistent-dir': No such file or directory\n" in seen
        assert follower.poll() is None  # still following: the session has not ended
        ended = CliRunner().invoke(cli, ["sessions", "end", "--session", "S-2", "--root", str(project)])
        assert ended.exit_code == 0, ended.output
        rest, err = follower.communicate(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    assert rest.splitlines()[-1] == (
        "— S-2 ended (ended) · waiting for an answer: Listed nothing. Do you want me to create the directory?"
    )
