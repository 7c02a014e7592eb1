"""Resuming a harness's own session: the argv each harness continues a session with, its state
carried from one home to another (Claude Code's conversations refiled under the new working
directory, Codex's thread index left behind), and what the supervisor refuses."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ValidationError
from roundtable.runtime import Runtime
from roundtable.services.sessions import records, resume
from roundtable.services.sessions.records import LaunchArgs
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
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"),
            extra_args=("--turn-timeout", "1"),
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


# A stand-in for Claude Code's `-p --input-format stream-json` session: user messages as JSON lines
# on standard input, one turn each (its session id — the one it was told to resume, else a new one —
# then what it was started with and told, as the agent's message, then a closing result), until its
# input ends; a file in its home, as the harness keeps its conversation there. The first turn of a
# new session lasts until the test lets it end (`hold` … `release`); with `linger`, it waits for
# `go` after its first turn before it reads on.
FAKE_HARNESS = """
import json, os, sys, time
from pathlib import Path
argv = sys.argv[1:]
resumed = argv[argv.index("--resume") + 1] if "--resume" in argv else ""
assert argv[argv.index("--input-format") + 1] == "stream-json"
here = Path(__file__).parent
conversation = Path(os.environ["HOME"]) / ".claude" / "projects" / "fake.jsonl"
conversation.parent.mkdir(parents=True, exist_ok=True)
turns = 0
while True:
    line = sys.stdin.readline()
    if not line:
        break
    said = json.loads(line)["message"]["content"].strip()
    print(json.dumps({"type": "system", "subtype": "init", "session_id": resumed or "fake-harness-1"}), flush=True)
    while not resumed and not turns and (here / "hold").exists() and not (here / "release").exists():
        time.sleep(0.05)
    before = conversation.read_text() if conversation.exists() else ""
    with conversation.open("a") as out:
        out.write(said[:40] + "\\n")
    text = json.dumps({"resumed": resumed, "remembered": before.splitlines(), "told": said[:40], "turn": turns})
    print(json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}), flush=True)
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False}), flush=True)
    turns += 1
    while not resumed and (here / "linger").exists() and not (here / "go").exists():
        time.sleep(0.05)
"""


@pytest.fixture
def where() -> Iterator[Path]:
    """The fake harness, where the sandbox may read it (not below /tmp: the sandbox has its own)."""
    path = Path(tempfile.mkdtemp(prefix="rt-fake-", dir="/var/tmp"))
    (path / "fake_claude.py").write_text(FAKE_HARNESS)
    (path / "fake_claude.py").chmod(0o644)
    path.chmod(0o755)  # as root, the session runs as nobody
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.anyio
async def test_a_session_left_running_by_an_owner_is_resumed_with_its_harness_session(
    runtime: Runtime, tmp_path: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import sys

    from roundtable.config import AdapterConfig
    from roundtable.services.sessions.transcript import Kind, read

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-only")
    adapters = dict(runtime.config.adapters)
    adapters["claude"] = AdapterConfig(command=f"{sys.executable} {where / 'fake_claude.py'}", supports_mcp=True)
    sessions_config = runtime.config.sessions.model_copy(update={"read_paths": (str(where),)})
    runtime.config = runtime.config.model_copy(update={"adapters": adapters, "sessions": sessions_config})
    _run_id, task_id = await make_task(runtime)
    first_owner = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        started = await first_owner.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude"))
        first = started["session"]["id"]
        await first_owner.wait(first, 60)
    finally:
        await first_owner.close()
    # As an owner that died mid-session leaves it: no end recorded.
    async with runtime.db.write() as tx:
        await tx.update("agent_sessions", {"id": first}, {"status": "active", "ended_at": None})
        # A message the operator sent it that was waiting for its turn to end.
        waiting = records.RecordMessageArgs(
            session_id=first, message="Also update the docs.", sent_by="operator", delivery="when_turn_ends"
        )
        await records.record_message(tx, waiting)

    second_owner = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        (second,) = await second_owner.resume_interrupted()
        await second_owner.wait(second, 60)
    finally:
        await second_owner.close()
    async with runtime.db.read() as r:
        old = await r.fetchone("SELECT * FROM agent_sessions WHERE id = ?", (first,))
        new = await r.fetchone("SELECT * FROM agent_sessions WHERE id = ?", (second,))
    assert old is not None and new is not None
    assert json.loads(old["metadata_json"])["exit_reason"] == "owner_restarted" and old["ended_at"]
    meta = json.loads(new["metadata_json"])
    assert (meta["mode"], meta["resumed_from"], meta["task_id"]) == ("resume", first, task_id)
    assert new["external_session_id"] == old["external_session_id"] == "fake-harness-1"
    log = (runtime.root / ".roundtable" / "logs" / "sessions" / f"{second}.log").read_text().splitlines()
    transcript = read(log)
    assert transcript.entries[0].kind == Kind.OPERATOR and "coordinator restarted" in transcript.entries[0].text
    assert transcript.entries[0].text.endswith("The operator's messages meanwhile:\n\nAlso update the docs.")
    assert "pending_messages" not in json.loads(old["metadata_json"])  # carried on by the resumed session
    said = json.loads(next(e.text for e in transcript.entries if e.kind == Kind.MESSAGE))
    # It was started with `--resume` and the id, in a home holding what the first session kept.
    assert said["resumed"] == "fake-harness-1"
    assert len(said["remembered"]) == 1 and said["remembered"][0].startswith("You are implementer-1")


def fake_claude(runtime: Runtime, where: Path) -> None:
    """The project's claude adapter is the stand-in harness."""
    import sys

    from roundtable.config import AdapterConfig

    adapters = dict(runtime.config.adapters)
    adapters["claude"] = AdapterConfig(command=f"{sys.executable} {where / 'fake_claude.py'}", supports_mcp=True)
    sessions_config = runtime.config.sessions.model_copy(update={"read_paths": (str(where),)})
    runtime.config = runtime.config.model_copy(update={"adapters": adapters, "sessions": sessions_config})


async def said_by(runtime: Runtime, session_id: str) -> list[dict[str, Any]]:
    """What the stand-in said in each of its turns, from the session's transcript."""
    from roundtable.services.sessions.transcript import Kind, read

    log = await asyncio.to_thread((runtime.root / ".roundtable" / "logs" / "sessions" / f"{session_id}.log").read_text)
    return [json.loads(e.text) for e in read(log.splitlines()).entries if e.kind == Kind.MESSAGE]


async def session_row(runtime: Runtime, session_id: str) -> dict[str, Any]:
    async with runtime.db.read() as r:
        row = await r.fetchone("SELECT * FROM agent_sessions WHERE id = ?", (session_id,))
    assert row is not None
    return {**dict(row), "meta": json.loads(row["metadata_json"])}


async def message_events(runtime: Runtime) -> list[tuple[str, dict[str, Any]]]:
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT actor_id, payload_json FROM events WHERE type = 'session.message' ORDER BY id")
    return [(str(row[0]), json.loads(row[1])) for row in rows]


@pytest.mark.anyio
async def test_a_message_to_a_running_session_reaches_its_harness_within_the_turn(
    runtime: Runtime, tmp_path: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable.services.sessions.transcript import read

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-only")
    await asyncio.to_thread((where / "hold").write_text, "")
    fake_claude(runtime, where)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        first = (await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude")))["session"][
            "id"
        ]
        sent = await sup.send(first, "Also update the docs.")
        assert (sent["delivery"], sent["queued"], sent["resumed_in"]) == ("live", False, "")
        assert "reads the message now" in sent["note"]
        await asyncio.to_thread((where / "release").write_text, "")
        await sup.wait(first, 60)
    finally:
        await sup.close()
    # The same process read it (a second turn of the same harness session): nothing was resumed.
    turns = await said_by(runtime, first)
    assert [(t["turn"], t["told"], t["resumed"]) for t in turns][1:] == [(1, "Also update the docs.", "")]
    assert turns[0]["told"].startswith("You are implementer-1")
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM agent_sessions") == 1
    ((actor, payload),) = await message_events(runtime)
    assert (actor, payload["delivery"], payload["resumed_in"]) == ("operator", "live", "")
    log = (runtime.root / ".roundtable" / "logs" / "sessions" / f"{first}.log").read_text().splitlines()
    lines = [e.line() for e in read(log).entries]
    assert lines.index("operator: Also update the docs.") < len(lines) - 1
    assert (await session_row(runtime, first))["meta"].get("pending_messages") is None


@pytest.mark.anyio
async def test_a_message_after_the_turn_ended_is_pending_until_the_session_is_resumed_with_it(
    runtime: Runtime, tmp_path: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-only")
    await asyncio.to_thread((where / "linger").write_text, "")
    fake_claude(runtime, where)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        first = (await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude")))["session"][
            "id"
        ]
        deadline = time.monotonic() + 60
        while (await session_row(runtime, first))["meta"].get("attention", {}).get("state") != "finished":
            assert time.monotonic() < deadline, "the first turn did not end"
            await asyncio.sleep(0.05)
        # Its turn is over and its input closed; the process lingers (as Codex's `exec` runs on).
        sent = await sup.send(first, "Also update the docs.")
        assert (sent["delivery"], sent["queued"], sent["resumed_in"]) == ("when_turn_ends", True, "")
        assert "delivered then (the session is resumed with it: claude --resume)" in sent["note"]
        pending = (await session_row(runtime, first))["meta"]["pending_messages"]
        assert [(m["message"], m["sent_by"]) for m in pending] == [("Also update the docs.", "operator")]
        await asyncio.to_thread((where / "go").write_text, "")
        await sup.wait(first, 60)
        second = ""
        while not second:
            assert time.monotonic() < deadline, "no session resumed the first"
            async with runtime.db.read() as r:
                second = str(
                    await r.scalar(
                        "SELECT id FROM agent_sessions WHERE json_extract(metadata_json, '$.resumed_from') = ?",
                        (first,),
                    )
                    or ""
                )
            await asyncio.sleep(0.05)
        await sup.wait(second, 60)
    finally:
        await sup.close()
    # Recorded when sent (pending), then when it resumed the session, which cleared it.
    assert [(a, p["delivery"], p["resumed_in"]) for a, p in await message_events(runtime)] == [
        ("operator", "when_turn_ends", ""),
        ("operator", "resumed", second),
    ]
    assert "pending_messages" not in (await session_row(runtime, first))["meta"]
    (resumed,) = await said_by(runtime, second)
    assert (resumed["resumed"], resumed["told"]) == ("fake-harness-1", "Also update the docs.")
    assert resumed["remembered"][0].startswith("You are implementer-1")


@pytest.mark.anyio
async def test_a_silent_running_session_is_idle_until_it_prints_again(
    runtime: Runtime, tmp_path: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import json
    import sys
    import time

    from roundtable.config import AdapterConfig

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-only")
    await asyncio.to_thread((where / "hold").write_text, "")
    adapters = dict(runtime.config.adapters)
    adapters["claude"] = AdapterConfig(command=f"{sys.executable} {where / 'fake_claude.py'}", supports_mcp=True)
    sessions_config = runtime.config.sessions.model_copy(update={"read_paths": (str(where),)})
    runtime.config = runtime.config.model_copy(update={"adapters": adapters, "sessions": sessions_config})
    run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path, idle_after=0.5)
    try:
        session_id = (await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude")))[
            "session"
        ]["id"]
        deadline = time.monotonic() + 30
        state = ""
        while state != "idle" and time.monotonic() < deadline:
            async with runtime.db.read() as r:
                meta = json.loads(
                    str(await r.scalar("SELECT metadata_json FROM agent_sessions WHERE id = ?", (session_id,)))
                )
            state = str(meta.get("attention", {}).get("state", ""))
            await asyncio.sleep(0.05)
        assert state == "idle" and meta["attention"]["detail"] == "no output for 0.5 s"
        await asyncio.to_thread((where / "release").write_text, "")
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    async with runtime.db.read() as r:
        states = [
            json.loads(row[0])["state"]
            for row in await r.fetchall(
                "SELECT payload_json FROM events WHERE type = 'session.attention' AND run_id = ? ORDER BY id", (run_id,)
            )
        ]
        final = json.loads(str(await r.scalar("SELECT metadata_json FROM agent_sessions WHERE id = ?", (session_id,))))
    assert states == ["idle", "working"]  # into idle, and out of it when it printed again
    assert final["attention"]["state"] == "finished"


# A stand-in for Claude Code asking the operator under `--permission-prompt-tool stdio`: it calls
# its question tool, asks on its stream (`control_request` can_use_tool) and waits for the
# `control_response` on its input; the tool's result is what came back, the agent says it, and the
# turn ends.
ASKING_HARNESS = """
import json, sys
def say(event):
    print(json.dumps(event), flush=True)
sys.stdin.readline()
say({"type": "system", "subtype": "init", "session_id": "asking-1"})
ask = {"questions": [{"question": "Which scope", "header": "Scope", "options": []}]}
say({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "AskUserQuestion", "input": ask}]}})
request = {"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "input": ask, "tool_use_id": "t1"}
say({"type": "control_request", "request_id": "r1", "request": request})
answer = json.loads(sys.stdin.readline())["response"]
decision = answer["response"]
allowed = decision["behavior"] == "allow"
got = json.dumps(decision["updatedInput"]["answers"]) if allowed else decision["message"]
result = {"type": "tool_result", "tool_use_id": "t1", "content": got, "is_error": not allowed}
say({"type": "user", "message": {"content": [result]}})
say({"type": "assistant", "message": {"content": [{"type": "text", "text": answer["request_id"] + " " + got}]}})
say({"type": "result", "subtype": "success", "is_error": False})
sys.stdin.read()
"""


@pytest.mark.anyio
@pytest.mark.parametrize("answered", [True, False])
async def test_a_question_on_the_stream_waits_for_the_operator_and_is_given_up_on_when_nobody_answers(
    answered: bool, runtime: Runtime, tmp_path: Path, where: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from roundtable.config import AdapterConfig
    from roundtable.services.sessions.transcript import Kind, read

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-only")
    await asyncio.to_thread((where / "asking.py").write_text, ASKING_HARNESS)
    await asyncio.to_thread((where / "asking.py").chmod, 0o644)
    adapters = dict(runtime.config.adapters)
    adapters["claude"] = AdapterConfig(command=f"{sys.executable} {where / 'asking.py'}", supports_mcp=True)
    sessions_config = runtime.config.sessions.model_copy(update={"read_paths": (str(where),)})
    runtime.config = runtime.config.model_copy(update={"adapters": adapters, "sessions": sessions_config})
    _run_id, task_id = await make_task(runtime)
    # Nobody answers: the question is given up on after the idle time (here 1 s).
    sup = await start_supervisor(runtime, base_dir=tmp_path, idle_after=60.0 if answered else 1.0)
    try:
        first = (await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude")))["session"][
            "id"
        ]
        if answered:
            deadline = time.monotonic() + 60
            while (await session_row(runtime, first))["meta"].get("attention", {}).get("state") != "waiting_answer":
                assert time.monotonic() < deadline, "it never waited for an answer"
                await asyncio.sleep(0.05)
            assert (await session_row(runtime, first))["meta"]["attention"]["detail"] == "Which scope"
            sent = await sup.send(first, "only mul()")
            assert sent["delivery"] == "live" and "is its answer" in sent["note"]
        await sup.wait(first, 60)
    finally:
        await sup.close()
    log = await asyncio.to_thread((runtime.root / ".roundtable" / "logs" / "sessions" / f"{first}.log").read_text)
    transcript = read(log.splitlines())
    said = next(e.text for e in transcript.entries if e.kind == Kind.MESSAGE)
    attention = (await session_row(runtime, first))["meta"]["attention"]
    if answered:
        assert said == 'r1 {"Which scope": "only mul()"}'
        assert attention["state"] == "finished"
    else:
        assert said.startswith("r1 No one answered within 1 s")
        assert (attention["state"], attention["detail"]) == ("waiting_answer", "Which scope")
