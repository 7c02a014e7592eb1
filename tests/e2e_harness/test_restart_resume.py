"""Restart resume, with the real harnesses: a supervised session is mid-turn (the stub holds its
model answer) when its owner is killed with SIGKILL; the next owner records it as ended by the
restart and resumes it — a new roundtable session continuing the same harness session (Claude
Code `--resume`, Codex `exec resume`) in the same workspace — and the model stub sees the turns
made before the crash in the resumed conversation. What both sessions spent is counted for the
task (the figures its budget is checked against)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roundtable.supervisor import RESTART_MESSAGE

from .model_stub import Answer, Exchange, StubServer, ToolCall, Usage, user_texts
from .scripts import Switch
from .table import Owner, launch, operator_env, prepare_project, query, seed, session_log, wait_for_end
from .test_supervised_sessions import CASES

pytestmark = pytest.mark.e2e_harness
SESSION_TIMEOUT = 180.0
SPEND = Usage(input_tokens=100, output_tokens=7)
RESUMED = "Carrying on after the restart: the task is still open."


def wait_until(what: Callable[[], bool], timeout: float, story: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, story()
        time.sleep(0.2)


def processes_of(session_id: str) -> list[int]:
    """The live processes whose environment names the session."""
    marker = f"ROUNDTABLE_SESSION_ID={session_id}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def spent(root: Path, session_id: str) -> dict[str, int]:
    rows = query(root, "SELECT input_tokens, output_tokens FROM session_usage WHERE session_id = ?", (session_id,))
    return {"input": int(rows[0]["input_tokens"]), "output": int(rows[0]["output_tokens"])} if rows else {}


@pytest.mark.parametrize("case_id", ["claude", "codex"])
def test_a_session_running_when_its_owner_was_killed_is_resumed_by_the_next_owner(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    root = tmp_path / "demo"
    held = threading.Event()  # set: the stub lets the held answer go (only once the owner is dead)
    crashing = threading.Event()  # the session is mid-turn, its second model answer held
    stub = StubServer(Switch(lambda history: Answer("unused")), usage=SPEND)

    def before_the_crash(history: list[Exchange]) -> ToolCall | Answer:
        if not history:
            return ToolCall("task_get", {})
        stub.hold = held  # this answer, and any after it, wait after their first event
        crashing.set()
        return Answer("This answer is never delivered: the owner dies first.")

    def after_the_restart(history: list[Exchange]) -> ToolCall | Answer:
        return Answer(RESUMED if any(e.tool == "task_get" for e in history) else "I remember no task.")

    stub.script = Switch(before_the_crash)
    stub.start()
    first = second = ""
    try:
        prepare_project(root, socket_dir, case.adapter, upstream=stub.url)
        run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            first = launch(root, env, "implementer-1", task_id)

            def story() -> str:
                return f"{(tmp_path / 'owner.err').read_text()[-2000:]}\n{session_log(root, first)[-3000:]}"

            wait_until(crashing.is_set, SESSION_TIMEOUT, story)
            # The gateway recorded the answer that made the task_get call (the held one is unfinished).
            wait_until(lambda: spent(root, first).get("output", 0) > 0, 60, story)
            assert processes_of(first)
            harness_id = query(root, "SELECT external_session_id FROM agent_sessions WHERE id = ?", (first,))[0][
                "external_session_id"
            ]
        finally:
            owner.kill()
        # The harness died with its owner (its sandbox dies with its parent): it cannot go on
        # beside the session that resumes it.
        wait_until(lambda: not processes_of(first), 30, lambda: f"still running: {processes_of(first)}")
        before_restart = spent(root, first)
        (left,) = query(root, "SELECT status, ended_at FROM agent_sessions WHERE id = ?", (first,))
        assert (left["status"], left["ended_at"]) == ("active", None)  # nobody recorded its end
        stub.script = Switch(after_the_restart)
        stub.hold = None
        held.set()
        asked = len(stub.requests)
        again = Owner(root, env, tmp_path / "owner2.err")
        try:
            rows = query(
                root, "SELECT id FROM agent_sessions WHERE json_extract(metadata_json, '$.resumed_from') = ?", (first,)
            )
            assert len(rows) == 1, (tmp_path / "owner2.err").read_text()
            second = str(rows[0]["id"])
            assert any(line.endswith(f"resumed an interrupted session as {second}\n") for line in again.said), again.said
            status = wait_for_end(root, second, SESSION_TIMEOUT)
        finally:
            again.stop()
    finally:
        held.set()
        stub.stop()
    story_text = (
        f"{(tmp_path / 'owner2.err').read_text()[-2000:]}\n{session_log(root, second)[-3000:]}\nsteps: {stub.steps}"
    )
    assert status == "ended", story_text

    # The interrupted session is recorded as ended by the restart, the resumed one continues the
    # same harness session in the same workspace.
    (old,) = query(root, "SELECT * FROM agent_sessions WHERE id = ?", (first,))
    (new,) = query(root, "SELECT * FROM agent_sessions WHERE id = ?", (second,))
    assert json.loads(old["metadata_json"])["exit_reason"] == "owner_restarted" and old["ended_at"]
    meta = json.loads(new["metadata_json"])
    assert (meta["mode"], meta["resumed_from"], meta["task_id"]) == ("resume", first, task_id)
    assert harness_id and new["external_session_id"] == harness_id, story_text
    assert new["working_directory"] == old["working_directory"] and meta["workspace"]

    # The model saw the turns made before the crash (the task_get call and its result) and was
    # told of the restart; it answered from that history.
    resumed = [r for r in stub.requests[asked:] if r.kind in ("messages", "responses")]
    assert resumed, story_text
    body = json.dumps(resumed[0].body)
    assert "task_get" in body and task_id in body, story_text
    assert any(RESTART_MESSAGE in text for text in user_texts(resumed[0])), user_texts(resumed[0])
    final = stub.steps[-1]
    assert isinstance(final, Answer) and final.text == RESUMED, story_text

    # Usage is counted across the restart: what the first session spent before the crash stays
    # its own, the resumed one's is added, and the task's total (what its budget is checked
    # against) is both.
    after = spent(root, second)
    assert spent(root, first) == before_restart and before_restart["output"] > 0
    assert after["output"] > 0 and after["output"] % SPEND.output_tokens == 0, after
    (total,) = query(
        root,
        "SELECT sum(input_tokens) AS i, sum(output_tokens) AS o, count(*) AS n FROM session_usage WHERE task_id = ?",
        (task_id,),
    )
    assert (total["n"], total["o"]) == (2, before_restart["output"] + after["output"])
    assert total["i"] == before_restart["input"] + after["input"]
    (event,) = query(root, "SELECT * FROM events WHERE type = 'session.message' AND run_id = ?", (run_id,))
    assert json.loads(event["payload_json"])["resumed_in"] == second
