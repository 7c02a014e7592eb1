"""Resuming a harness's own session: the argv each harness continues a session with, its state
carried from one home to another (Claude Code's conversations refiled under the new working
directory, Codex's thread index left behind), and what the supervisor refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.errors import ValidationError
from roundtable.runtime import Runtime
from roundtable.services.sessions import resume
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

CLAUDE = ["claude", "-p", "--allowedTools", "mcp__roundtable", "--output-format", "stream-json", "--verbose"]
CODEX = [
    "codex",
    "exec",
    "--skip-git-repo-check",
    "--json",
    "-C",
    "/ws",
    "--sandbox",
    "workspace-write",
    "--model",
    "m",
    "-",
]


def test_resume_argv_of_each_harness() -> None:
    assert resume.resume_argv("claude", CLAUDE, "abc")[:4] == ["claude", "-p", "--resume", "abc"]
    assert resume.resume_argv("codex", CODEX, "t-1") == [
        "codex", "exec", "resume", "--skip-git-repo-check", "--json",
        "-c", 'sandbox_mode="workspace-write"', "--model", "m", "t-1", "-",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="cannot resume"):
        resume.resume_argv("gemini", ["gemini"], "x")


def test_state_moves_to_a_new_home(tmp_path: Path) -> None:
    old_home, kept, new_home = tmp_path / "a" / "home", tmp_path / "kept", tmp_path / "b" / "home"
    conversation = old_home / ".claude" / "projects" / resume.claude_project_name(str(old_home)) / "c1.jsonl"
    conversation.parent.mkdir(parents=True)
    conversation.write_text("{}\n")
    rollout = old_home / ".codex-home" / "sessions" / "2026" / "rollout-t1.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text("{}\n")
    (old_home / ".codex-home" / "state_5.sqlite").write_text("index")
    (old_home / "PROMPT.md").write_text("not state")
    assert resume.save_state(old_home, kept)
    new_home.mkdir(parents=True)
    assert resume.restore_state(kept, new_home, str(old_home), str(new_home))
    moved = new_home / ".claude" / "projects" / resume.claude_project_name(str(new_home)) / "c1.jsonl"
    assert moved.read_text() == "{}\n" and resume.claude_project_name("/tmp/a.b/home") == "-tmp-a-b-home"
    assert (new_home / ".codex-home" / "sessions" / "2026" / "rollout-t1.jsonl").is_file()
    assert not (new_home / ".codex-home" / "state_5.sqlite").exists() and not (new_home / "PROMPT.md").exists()
    assert not resume.save_state(tmp_path / "empty", tmp_path / "nothing")


@pytest.mark.anyio
async def test_send_refuses_what_cannot_be_resumed_and_unknown_sessions(runtime: Runtime, tmp_path: Path) -> None:
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        started = await sup.launch(
            agent_id="implementer-1", task_id=task_id, adapter="scripted", extra_args=("--turn-timeout", "1")
        )
        session_id = started["session"]["id"]
        with pytest.raises(ValidationError, match="adapter scripted has no resume"):
            await sup.send(session_id, "stop after this")  # refused while it runs, and after
        await sup.wait(session_id, 60)
        with pytest.raises(ValidationError, match="adapter scripted has no resume"):
            await sup.send(session_id, "again")
        with pytest.raises(ValidationError, match="no session S-nope"):
            await sup.send("S-nope", "hello")
        with pytest.raises(ValidationError, match="needs text"):
            await sup.send(session_id, "  ")
    finally:
        await sup.close()
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM events WHERE type = 'session.message'") == 0
