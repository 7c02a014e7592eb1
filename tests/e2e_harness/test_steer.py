"""Steering a running session, with the real harnesses: while a supervised session is mid-turn (the
stub holds its model's answer), the operator sends it a message with `roundtable sessions send`.

- Claude Code reads user messages on its standard input while it works (`--input-format
  stream-json`): the message reaches the model within the same turn of the same session — the stub
  sees it in the session's next model request — and no session is resumed.
- Codex's `exec` takes no input while it runs: the answer says the message is delivered when the
  turn ends, `sessions show` lists it as pending, and once the turn has ended the session is
  resumed with it (`codex exec resume`), where the stub sees it.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .model_stub import Answer, Exchange, StubServer, ToolCall, anthropic_history
from .table import ROUNDTABLE, Owner, launch, operator_env, prepare_project, query, rt, seed, session_log, wait_for_end
from .test_supervised_sessions import CASES

pytestmark = pytest.mark.e2e_harness
SESSION_TIMEOUT = 180.0
MESSAGE = "Operator here: leave calc/ops.py alone, only report what you found."


def wait_until(what: Callable[[], bool], timeout: float, story: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, story()
        time.sleep(0.2)


@pytest.mark.parametrize("case_id", ["claude", "codex"])
def test_an_operator_message_reaches_a_running_session(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    root = tmp_path / "demo"
    held = threading.Event()
    holding = threading.Event()  # the session's second model answer is held: it is mid-turn
    stub = StubServer(lambda history: Answer("unused"))

    def script(history: list[Exchange]) -> ToolCall | Answer:
        if len(history) == 0:
            return ToolCall("task_get", {})
        if len(history) == 1 and not holding.is_set():
            stub.hold = held  # this answer waits after its first event until the message is sent
            holding.set()
            return ToolCall("task_get", {})
        return Answer("Understood: I only report.")

    stub.script = script
    stub.start()
    first = ""
    try:
        prepare_project(root, socket_dir, case.adapter, upstream=stub.url)
        _run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            first = launch(root, env, "implementer-1", task_id)

            def story() -> str:
                return f"{(tmp_path / 'owner.err').read_text()[-2000:]}\n{session_log(root, first)[-3000:]}"

            wait_until(holding.is_set, SESSION_TIMEOUT, story)
            sent_at = len(stub.requests)
            sent = json.loads(rt(env, "sessions", "send", first, MESSAGE, "--root", str(root), "--json"))
            said = rt(env, "sessions", "send", first, "and say when you are done", "--root", str(root))
            shown = subprocess.run(
                [*ROUNDTABLE, "sessions", "show", first, "--root", str(root)],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            ).stdout
            stub.hold = None
            held.set()
            status = wait_for_end(root, first, SESSION_TIMEOUT)

            def resumed() -> str:
                rows = query(
                    root,
                    "SELECT id FROM agent_sessions WHERE json_extract(metadata_json, '$.resumed_from') = ?",
                    (first,),
                )
                return str(rows[0]["id"]) if rows else ""

            if case_id == "codex":  # resumed once its turn has ended
                wait_until(lambda: bool(resumed()), 60, story)
                wait_for_end(root, resumed(), SESSION_TIMEOUT)
            second = resumed()
            pending_after = json.loads(
                query(root, "SELECT metadata_json FROM agent_sessions WHERE id = ?", (first,))[0]["metadata_json"]
            ).get("pending_messages")
        finally:
            owner.stop()
    finally:
        held.set()
        stub.stop()
    story_text = f"{story()}\nsteps: {stub.steps}"
    assert status == "ended", story_text
    later = [r for r in stub.requests[sent_at:] if r.kind in ("messages", "responses")]
    reached = [r for r in later if MESSAGE in json.dumps(r.body)]
    assert reached, story_text
    events = query(root, "SELECT payload_json FROM events WHERE type = 'session.message' ORDER BY id")
    deliveries = [(p["delivery"], p["resumed_in"]) for p in (json.loads(e["payload_json"]) for e in events)]

    if case_id == "claude":
        # It read the message within the turn it was in: the model's next request in the same
        # session carried it (beside the result of the call it was making), and nothing was resumed.
        assert (sent["delivery"], sent["queued"], sent["resumed_in"]) == ("live", False, "")
        assert "reads the message now, within its current turn" in said, said
        assert second == "" and "pending message" not in shown, shown
        assert deliveries == [("live", ""), ("live", "")]
        history = anthropic_history(reached[0].body)
        assert [e.tool for e in history] == ["task_get", "task_get"], story_text
        # The message came right after the result of the call it was making, before the model's
        # next answer (Claude Code 2.1 adds it as a note after the tool result).
        messages = reached[0].body["messages"]
        at = max(i for i, m in enumerate(messages) if "tool_result" in json.dumps(m.get("content")))
        assert MESSAGE in json.dumps(messages[at:]) and MESSAGE not in json.dumps(messages[:at]), messages[at:]
        assert all(m.get("role") != "assistant" for m in messages[at:]), messages[at:]
        final = stub.steps[-1]
        assert isinstance(final, Answer) and final.text == "Understood: I only report.", story_text
        assert not pending_after
    else:
        # Codex takes it when its turn ends: said so, shown as pending, then resumed with it.
        assert (sent["delivery"], sent["queued"]) == ("when_turn_ends", True)
        assert "takes no message until its current turn ends" in said and "codex exec resume" in said, said
        assert f"delivered when its turn ends: {json.dumps(MESSAGE)}" in shown, shown
        assert second, story_text
        assert deliveries == [("when_turn_ends", ""), ("when_turn_ends", ""), ("resumed", second)]
        assert not pending_after
        (row,) = query(root, "SELECT external_session_id FROM agent_sessions WHERE id = ?", (second,))
        assert row["external_session_id"] and "and say when you are done" in json.dumps(reached[0].body)


QUESTION = "Pick the scope of the change"  # no question mark: the stream says it is a question


def test_a_claude_session_asking_the_operator_waits_for_the_answer_and_goes_on_with_it(
    tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    """Claude Code asks with its question tool: the stream says so explicitly (`control_request`
    can_use_tool AskUserQuestion), the session waits for an answer (classified from that, not from
    the wording), and the operator's `sessions send` is the answer the model gets, in the same turn."""
    case = CASES["claude"]
    root = tmp_path / "demo"
    ask = {
        "questions": [
            {
                "question": QUESTION,
                "header": "Scope",
                "multiSelect": False,
                "options": [
                    {"label": "mul", "description": "only mul()"},
                    {"label": "both", "description": "and div()"},
                ],
            }
        ]
    }

    def script(history: list[Exchange]) -> ToolCall | Answer:
        if not history:
            return ToolCall("AskUserQuestion", ask)
        return Answer(f"Going on with: {history[-1].result}")

    stub = StubServer(script).start()
    try:
        prepare_project(root, socket_dir, case.adapter, upstream=stub.url)
        run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            first = launch(root, env, "implementer-1", task_id)

            def attention() -> dict[str, str]:
                row = query(root, "SELECT metadata_json FROM agent_sessions WHERE id = ?", (first,))[0]
                return dict(json.loads(row["metadata_json"]).get("attention") or {})

            def story() -> str:
                return f"{(tmp_path / 'owner.err').read_text()[-2000:]}\n{session_log(root, first)[-3000:]}"

            wait_until(lambda: attention().get("state") == "waiting_answer", SESSION_TIMEOUT, story)
            waiting = attention()
            said = rt(env, "sessions", "send", first, "Only mul(), please", "--root", str(root))
            status = wait_for_end(root, first, SESSION_TIMEOUT)
        finally:
            owner.stop()
    finally:
        stub.stop()
    story_text = f"{story()}\nsteps: {stub.steps}"
    assert waiting["detail"] == QUESTION, waiting
    assert "the message is its answer" in said, said
    assert status == "ended", story_text
    final = stub.steps[-1]
    assert isinstance(final, Answer) and "Only mul(), please" in final.text, story_text
    assert f'"{QUESTION}"="Only mul(), please"' in final.text, final.text  # the tool's own answer
    assert len(query(root, "SELECT id FROM agent_sessions")) == 1  # the same session went on
    assert attention()["state"] == "finished"
    states = [
        json.loads(e["payload_json"])["state"]
        for e in query(
            root, "SELECT payload_json FROM events WHERE type = 'session.attention' AND run_id = ?", (run_id,)
        )
    ]
    assert states[:2] == ["waiting_answer", "working"], states
