"""Claude Code and Codex, installed from npm, in every role but the implementer's (which
`test_supervised_sessions` and `test_workspace_sessions` cover): each is launched by the
operator inside roundtable's sandbox and makes its role's write call, which must land.

- planner (`architect-1`, bound to a planning task): `task_create`
- reviewer (`reviewer-1`, bound to a proposal): `vote_cast`
- security (`security-1`): `security_review` (the scan of the proposal's revision, its verdict)
- tester (`tester-1`): `test_evidence_submit`

And a session killed while it holds its turn: the turn is handed back when its exit is
recorded, and the next agent's request is scheduled within a second of the kill.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.coordination.runs import create_run

from .model_stub import Answer, Exchange, Step, StubServer, ToolCall
from .scripts import Switch, in_order, request_event_id
from .table import (
    CHANGED,
    PATCH,
    TITLE,
    Owner,
    operator_env,
    prepare_project,
    query,
    rt,
    session_log,
    wait_for_end,
)
from .test_supervised_sessions import SESSION_TIMEOUT, claude_setup, codex_plain_setup

pytestmark = pytest.mark.e2e_harness

SETUPS: dict[str, Callable[[Path, StubServer], dict[str, str]]] = {"claude": claude_setup, "codex": codex_plain_setup}
# Every role section of the starter config (the implementers are set by `prepare_project`).
ROLE_SECTIONS = ("architect", "reviewers", "tester", "security")


@dataclass(frozen=True)
class Work:
    run_id: str
    task_id: str  # implementer-1's task
    proposal_id: str  # its proposal (with a real patch)
    planning_task_id: str  # architect-1's task


def prepare(root: Path, socket_dir: Path, adapter: str, upstream: str) -> None:
    """The demo project with every launchable role on `adapter`, whose model API (the gateway's
    upstream) is `upstream`."""
    prepare_project(root, socket_dir, adapter, upstream=upstream)
    config = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    for section in ROLE_SECTIONS:
        data["agents"][section]["adapter"] = adapter
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def seed_work(root: Path) -> Work:
    """A run; implementer-1's task with a proposal of a real patch (its file claimed for it);
    a planning task for architect-1 — all recorded as the operator before the owner starts."""

    async def work() -> Work:
        runtime = await Runtime.open(root)
        try:
            run = await create_run(runtime, "Improve the calculator")
            task = await runtime.call(
                "task.create",
                {
                    "title": TITLE,
                    "body_md": f"Add `mul(a, b)` to `{CHANGED}`.",
                    "assigned_agent_id": "implementer-1",
                    "readable_paths": ["calc"],
                },
            )
            task_id = str(task["task"]["id"])
            await runtime.call(
                "resource.claim",
                {
                    "agent_id": "implementer-1",
                    "task_id": task_id,
                    "resource_type": "file",
                    "resource_id": f"file:{CHANGED}",
                    "path": CHANGED,
                    "claim_type": "write",
                    "rationale": "the change under review",
                },
            )
            proposal = await runtime.call(
                "proposal.create",
                {
                    "agent_id": "implementer-1",
                    "task_id": task_id,
                    "title": TITLE,
                    "summary_md": "Adds mul().",
                    "affected_resources": [f"file:{CHANGED}"],
                    "risk": "normal",
                    "patch": PATCH,
                },
            )
            planning = await runtime.call(
                "task.create",
                {
                    "title": "Plan the calculator",
                    "body_md": "Split the goal into tasks.",
                    "assigned_agent_id": "architect-1",
                },
            )
            return Work(run.id, task_id, str(proposal["proposal"]["id"]), str(planning["task"]["id"]))
        finally:
            await runtime.close()

    return asyncio.run(work())


def launch_role(root: Path, env: dict[str, str], agent_id: str, task_id: str, proposal_id: str = "") -> dict[str, Any]:
    args = ["sessions", "launch", "--agent", agent_id, "--task", task_id, "--root", str(root), "--json"]
    if proposal_id:
        args += ["--proposal", proposal_id]
    return dict(json.loads(rt(env, *args)))


@dataclass(frozen=True)
class Role:
    agent_id: str
    call: Callable[[Work], ToolCall]
    landed: Callable[[Path, Work], list[dict[str, Any]]]  # the rows the call wrote (must be one)
    event: str  # the event it recorded as the agent, through its session


ROLES = {
    "planner": Role(
        "architect-1",
        lambda w: ToolCall("task_create", {"title": "Add div()", "body_md": "Add `div(a, b)` to `calc/ops.py`."}),
        lambda root, w: query(root, "SELECT * FROM tasks WHERE title = 'Add div()'"),
        "task.created",
    ),
    "reviewer": Role(
        "reviewer-1",
        lambda w: ToolCall("vote_cast", {"proposal_id": w.proposal_id, "vote": "approve", "reason_md": "Looks right."}),
        lambda root, w: query(
            root, "SELECT * FROM votes WHERE proposal_id = ? AND agent_id = 'reviewer-1'", (w.proposal_id,)
        ),
        "vote.cast",
    ),
    "security": Role(
        "security-1",
        lambda w: ToolCall("security_review", {"proposal_id": w.proposal_id}),
        lambda root, w: query(root, "SELECT * FROM security_reviews WHERE proposal_id = ?", (w.proposal_id,)),
        "security.reviewed",
    ),
    "tester": Role(
        "tester-1",
        lambda w: ToolCall(
            "test_evidence_submit",
            {
                "proposal_id": w.proposal_id,
                "command": "python -m pytest",
                "outcome": "passed",
                "summary_md": "3 passed.",
            },
        ),
        lambda root, w: query(root, "SELECT * FROM test_runs WHERE proposal_id = ?", (w.proposal_id,)),
        "test.evidence_reported",
    ),
}


@pytest.mark.parametrize("role_name", list(ROLES))
@pytest.mark.parametrize("adapter", list(SETUPS))
def test_harness_in_role_makes_its_write_call(
    adapter: str, role_name: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    role = ROLES[role_name]
    root = tmp_path / "demo"
    script = Switch(lambda history: Answer("not yet"))
    stub = StubServer(script).start()
    try:
        prepare(root, socket_dir, adapter, stub.url)
        work = seed_work(root)
        script.script = in_order([role.call(work)], "Done: recorded.")
        env = operator_env(home, harness_bin, SETUPS[adapter](home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            bound_to = work.planning_task_id if role_name == "planner" else work.task_id
            proposal = "" if role_name == "planner" else work.proposal_id
            session_id = str(launch_role(root, env, role.agent_id, bound_to, proposal)["session"]["id"])
            status = wait_for_end(root, session_id, SESSION_TIMEOUT)
        finally:
            exit_code = owner.stop()
    finally:
        stub.stop()
    story = f"session log:\n{session_log(root, session_id)[-3000:]}\nmodel steps: {stub.steps}"
    assert status == "ended", story
    assert exit_code == 0, (tmp_path / "owner.err").read_text()
    final = stub.steps[-1]
    assert isinstance(final, Answer) and final.text.startswith("Done"), story  # not "FAILED <tool>: …"
    assert len(role.landed(root, work)) == 1, story
    events = query(
        root, "SELECT principal, transport FROM events WHERE type = ? AND actor_id = ?", (role.event, role.agent_id)
    )
    assert [(e["principal"], e["transport"]) for e in events] == [(f"agent:{role.agent_id}", "session")], story
    (session,) = query(root, "SELECT adapter, metadata_json FROM agent_sessions WHERE id = ?", (session_id,))
    assert session["adapter"] == adapter
    assert json.loads(session["metadata_json"])["isolation"] in ("bwrap", "landlock")


def hold_the_turn(title: str) -> Callable[[list[Exchange]], Step]:
    """Request a turn, start it once scheduled, then keep watching the table (never complete)."""

    def script(history: list[Exchange]) -> Step:
        requested = next((e for e in history if e.tool == "agent_turn_request" and not e.is_error), None)
        if requested is None:
            if history:
                return Answer(f"FAILED agent_turn_request: {history[-1].result}")
            return ToolCall("agent_turn_request", {"reason_md": title})
        request_id = request_event_id(requested.result)
        started = any(e.tool == "agent_turn_start" and not e.is_error for e in history)
        last = history[-1]
        if not started and last.tool != "agent_turn_start":
            return ToolCall("agent_turn_start", {"request_event_id": request_id})
        return ToolCall("table_watch", {"after_event_id": request_id, "limit": 50, "wait_ms": 2000})

    return script


@pytest.mark.parametrize("adapter", list(SETUPS))
def test_a_session_killed_while_holding_its_turn_frees_it_within_a_second(
    adapter: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    root = tmp_path / "demo"
    stub = StubServer(hold_the_turn("implement: Add mul()")).start()
    try:
        prepare(root, socket_dir, adapter, stub.url)
        work = seed_work(root)
        env = operator_env(home, harness_bin, SETUPS[adapter](home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            launched = launch_role(root, env, "implementer-1", work.task_id)
            session_id = str(launched["session"]["id"])
            deadline = time.monotonic() + SESSION_TIMEOUT
            while not query(root, "SELECT 1 FROM events WHERE type = 'agent.turn_started'"):
                assert time.monotonic() < deadline, session_log(root, session_id)[-3000:]
                time.sleep(0.2)
            # implementer-2 waits for the turn implementer-1 holds (the operator asks for it).
            ask = {"run_id": work.run_id, "agent_id": "implementer-2", "reason_md": "next"}
            call = ["mcp", "call", "--root", str(root), "--socket", "--tool", "agent_turn_request"]
            second = request_event_id(rt(env, *call, "--args", json.dumps(ask)))
            assert second > 0
            killed_at = clock.now()
            os.killpg(int(launched["pid"]), signal.SIGKILL)
            status = wait_for_end(root, session_id, 60)
            deadline = time.monotonic() + 30
            while not (
                scheduled := [
                    e
                    for e in query(root, "SELECT * FROM events WHERE type = 'agent.turn_scheduled' ORDER BY id")
                    if json.loads(e["payload_json"])["request_event_id"] == second
                ]
            ):
                assert time.monotonic() < deadline, "implementer-2's turn was not scheduled"
                time.sleep(0.1)
        finally:
            exit_code = owner.stop()
    finally:
        stub.stop()
    assert status == "failed"
    assert exit_code == 0, (tmp_path / "owner.err").read_text()
    (expired,) = query(root, "SELECT * FROM events WHERE type = 'agent.turn_expired'")
    payload = json.loads(expired["payload_json"])
    assert payload["agent_id"] == "implementer-1" and payload["timeout"] == "session_exited"
    assert payload["session_id"] == session_id
    handed_over = (clock.parse(scheduled[0]["created_at"]) - clock.parse(killed_at)) / 1e9
    assert handed_over < 1.0, f"{handed_over:.2f} s from the kill to the next turn"
