"""Steer and resume, with the real harnesses: a supervised session that ends its turn on a question
waits for the operator's answer (classified from its stream); `roundtable sessions send` resumes it
— a new roundtable session continuing the same harness session (Claude Code `--resume`, Codex
`exec resume`) in the same workspace — and the model stub sees the earlier turns and the operator's
message in the resumed conversation."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .model_stub import Answer, Exchange, StubServer, ToolCall, user_texts
from .scripts import Switch
from .table import ROUNDTABLE, Owner, launch, operator_env, prepare_project, query, rt, seed, session_log, wait_for_end
from .test_supervised_sessions import CASES

pytestmark = pytest.mark.e2e_harness
SESSION_TIMEOUT = 180.0
QUESTION = "I read the task. Shall I add div() as well?"
REPLY = "No: only mul(), please."


def first_turn(history: list[Exchange]) -> ToolCall | Answer:
    if not history:
        return ToolCall("task_get", {})
    return Answer(QUESTION)


def after_the_reply(history: list[Exchange]) -> ToolCall | Answer:
    return Answer("Understood: only mul()." if history else "I do not remember any task.")


@pytest.mark.parametrize("case_id", ["claude", "codex"])
def test_an_operator_message_resumes_the_same_harness_session(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    root = tmp_path / "demo"
    script = Switch(first_turn)
    stub = StubServer(script).start()
    try:
        prepare_project(root, socket_dir, case.adapter, upstream=stub.url)
        run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            first = launch(root, env, "implementer-1", task_id)
            assert wait_for_end(root, first, SESSION_TIMEOUT) == "ended"
            (row,) = query(root, "SELECT * FROM agent_sessions WHERE id = ?", (first,))
            harness_id = row["external_session_id"]
            attention = json.loads(row["metadata_json"])["attention"]
            before = len(stub.requests)
            script.script = after_the_reply
            sent = json.loads(rt(env, "sessions", "send", first, REPLY, "--root", str(root), "--json"))
            second = sent["resumed_in"]
            assert second and second != first and not sent["queued"]
            assert wait_for_end(root, second, SESSION_TIMEOUT) == "ended", session_log(root, second)[-3000:]
            transcript = subprocess.run(
                [*ROUNDTABLE, "sessions", "show", second, "--transcript", "--root", str(root)],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
        finally:
            owner.stop()
    finally:
        stub.stop()
    story = (tmp_path / "owner.err").read_text()[-3000:] + f"\nsteps: {stub.steps}"

    # The first session ended its turn on a question: it waits for an answer, by its own stream.
    assert harness_id, story
    assert (attention["state"], attention["detail"]) == ("waiting_answer", QUESTION), story

    # The resumed session is the same harness session, in the same workspace.
    (again,) = query(root, "SELECT * FROM agent_sessions WHERE id = ?", (second,))
    meta = json.loads(again["metadata_json"])
    assert again["external_session_id"] == harness_id, story
    assert (meta["mode"], meta["resumed_from"], meta["task_id"]) == ("resume", first, task_id)
    assert again["working_directory"] == row["working_directory"] and meta["workspace"]
    assert meta["attention"]["state"] == "finished"

    # The model saw the earlier turns (the task_get call and the question) and the operator's reply.
    resumed = [r for r in stub.requests[before:] if r.kind in ("messages", "responses")]
    assert resumed, story
    body = json.dumps(resumed[0].body)
    assert QUESTION in body and "task_get" in body, story
    assert any(REPLY in text for text in user_texts(resumed[0])), user_texts(resumed[0])
    final = stub.steps[-1]
    assert isinstance(final, Answer) and final.text == "Understood: only mul().", story

    # The message is the operator's: an event and a transcript entry.
    (event,) = query(root, "SELECT * FROM events WHERE type = 'session.message' AND run_id = ?", (run_id,))
    payload = json.loads(event["payload_json"])
    assert (payload["session_id"], payload["resumed_in"], payload["message"]) == (first, second, REPLY)
    assert event["actor_id"] == payload["sent_by"] and payload["sent_by"].startswith("operator")
    assert transcript.returncode == 0, transcript.stderr
    lines = transcript.stdout.splitlines()
    assert lines[0] == f"operator: {REPLY}" and "agent: Understood: only mul()." in lines, transcript.stdout
