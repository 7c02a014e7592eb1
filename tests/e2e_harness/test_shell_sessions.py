"""Claude Code and Codex, installed from npm, with `sessions.tools: shell`: roundtable's tools are
`rt` commands run through the harness's own shell tool, and no MCP server is configured at all.

For each harness, an implementer in its workspace (the operator's `roundtable workspaces
create`), against a local stub of the harness's model API: the stubbed model runs `rt
table_watch` through the harness's shell tool (Claude Code: `Bash`; Codex: `exec_command`), edits
`calc/ops.py` with the harness's own editor (Claude Code: Read then Edit; Codex: apply_patch),
runs `rt workspace_propose [TASK] --title ... --summary-md ...` through the shell (Codex as its
prompt says, its session's task by default; Claude Code naming the task all the same), and answers. The
harness offered its model no roundtable MCP tool; what the model read back from the shell is rt's
output (the table's YAML naming the task; the new proposal's id); the proposal in the database is
the workspace's diff, recorded as the agent through its session.

And a reviewer (no workspace) on each: its shell (Claude Code: Bash alone); `rt` lists the
reviewer's tools (not the implementer's), `rt proposal_get P` reads the proposal it was launched
for and `rt vote_cast approve ...` votes on it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from . import scripts
from .model_stub import (
    Answer,
    Exchange,
    Script,
    Seen,
    Step,
    StubServer,
    ToolCall,
    anthropic_tools,
    responses_tools,
    user_texts,
)
from .scripts import Switch
from .table import (
    AFTER,
    BEFORE,
    CHANGED,
    TITLE,
    Owner,
    launch,
    operator_env,
    prepare_project,
    query,
    rt,
    seed,
    session_log,
    wait_for_end,
    workspace_diff,
)
from .test_roles import launch_role, prepare, seed_work
from .test_supervised_sessions import SESSION_TIMEOUT, claude_setup, codex_plain_setup

pytestmark = pytest.mark.e2e_harness


def use_shell_tools(root: Path) -> None:
    """`sessions.tools: shell` in the project's config."""
    config = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data.setdefault("sessions", {})["tools"] = "shell"
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def claude_shell(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "Run a roundtable command"})


def codex_shell(command: str) -> ToolCall:
    return ToolCall("exec_command", {"cmd": command})


# A step and what its result must hold for the script to go on (`""`: anything not an error).
Checked = tuple[ToolCall, str]


def checked_in_order(steps: list[Checked], done: str) -> Script:
    """Make `steps` one after another; a result that is an error or lacks its step's expected text
    ends the session with an answer naming it (the test then shows it); then answer `done`."""

    def script(history: list[Exchange]) -> Step:
        made = len(history)
        if made:
            last, (_call, wanted) = history[-1], steps[made - 1]
            if last.is_error or wanted not in last.result:
                return Answer(f"FAILED {last.tool} {last.arguments}: {last.result}")
        return steps[made][0] if made < len(steps) else Answer(done)

    return script


@dataclass(frozen=True)
class Case:
    adapter: str
    setup: Callable[[Path, StubServer], dict[str, str]]
    shell: Callable[[str], ToolCall]
    edit: Callable[[Path, str, str, str], list[ToolCall]]
    tools_of: Callable[[dict[str, object]], list[str]]
    names_its_task: bool  # `rt workspace_propose TASK_ID ...` (else the session's task by default)


CASES = {
    "claude": Case("claude", claude_setup, claude_shell, scripts.claude_edit, anthropic_tools, True),
    "codex": Case("codex", codex_plain_setup, codex_shell, scripts.codex_edit, responses_tools, False),
}


def offered(stub: StubServer, tools_of: Callable[[dict[str, object]], list[str]]) -> set[str]:
    models: list[Seen] = [r for r in stub.requests if r.kind in ("messages", "responses")]
    return {name for r in models for name in tools_of(r.body)}


def ended_well(
    root: Path,
    session_id: str,
    stub: StubServer,
    tools_of: Callable[[dict[str, object]], list[str]],
    status: str,
    exit_code: int,
    owner_err: Path,
) -> tuple[str, set[str], str]:
    """The session ended, the owner stopped cleanly and the model's last step was its answer:
    (the session's log, the tools the model was offered, the story to show when an assert fails)."""
    log = session_log(root, session_id)
    tools = offered(stub, tools_of)
    story = f"session log:\n{log[-4000:]}\nmodel steps: {stub.steps}\noffered: {sorted(tools)}"
    assert status == "ended", story
    assert exit_code == 0, owner_err.read_text()
    final = stub.steps[-1]
    assert isinstance(final, Answer) and final.text.startswith("Done"), story
    return log, tools, story


def ran(history: list[Exchange], command: str) -> Exchange:
    """The one shell call of `command`."""
    (found,) = [e for e in history if (e.arguments.get("command") or e.arguments.get("cmd")) == command]
    return found


@pytest.mark.parametrize("case_id", list(CASES))
def test_implementer_calls_rt_through_its_shell_and_proposes_its_workspace(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    root = tmp_path / "demo"
    switch = Switch(lambda history: Answer("not yet"))
    stub = StubServer(switch).start()
    histories: list[list[Exchange]] = []
    try:
        prepare_project(root, socket_dir, case.adapter, upstream=stub.url)
        use_shell_tools(root)
        _run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        ws = Path(
            rt(env, "workspaces", "create", "--root", str(root), "--agent", "implementer-1", "--task", task_id).strip()
        )
        # Codex as the prompt says (the session's task is the default: its capability names it),
        # Claude Code naming the task all the same, as the prompt's "working on task T" invites.
        named = f" {task_id}" if case.names_its_task else ""
        propose = f"rt workspace_propose{named} --title {shlex.quote(TITLE)} --summary-md {shlex.quote(TITLE + '.')}"
        steps: list[Checked] = [
            (case.shell("rt table_watch"), task_id),  # its own task is what concerns it
            *((call, "") for call in case.edit(ws, CHANGED, BEFORE, AFTER)),
            (case.shell(propose), "proposal"),
        ]
        inner = checked_in_order(steps, "Done: proposed.")

        def script(history: list[Exchange]) -> Step:
            histories.append(history)
            return inner(history)

        switch.script = script
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            session_id = launch(root, env, "implementer-1", task_id)
            status = wait_for_end(root, session_id, SESSION_TIMEOUT)
        finally:
            exit_code = owner.stop()
    finally:
        stub.stop()
    log, tools, story = ended_well(root, session_id, stub, case.tools_of, status, exit_code, tmp_path / "owner.err")

    # No roundtable MCP tool was offered (no MCP server at all); the shell tool was.
    assert tools and not [name for name in tools if name.startswith("mcp__")], story
    assert case.shell("rt").tool in tools, story

    # The prompt told the model how to call rt (and how to propose with it).
    prompt = next(t for r in stub.requests for t in user_texts(r) if "rt table_watch" in t)
    assert "`rt workspace_propose --title TITLE --summary-md SUMMARY`" in prompt, prompt

    # What the model read back from its shell is rt's output.
    history = histories[-1]
    watched = ran(history, "rt table_watch")
    assert task_id in watched.result and "next_after_event_id" in watched.result, watched
    (proposal,) = query(root, "SELECT * FROM proposals WHERE task_id = ?", (task_id,))
    proposed = ran(history, propose)
    assert proposal["id"] in proposed.result, proposed

    # The proposal is the workspace's diff, made by the agent through its session.
    assert proposal["agent_id"] == "implementer-1" and proposal["title"] == TITLE
    assert proposal["proposer_session_id"] == session_id and proposal["workspace_id"]
    assert (root / proposal["patch_path"]).read_text() == workspace_diff(ws)
    assert (ws / CHANGED).read_text() == AFTER and (root / CHANGED).read_text() == BEFORE
    events = query(root, "SELECT principal, transport FROM events WHERE type = 'workspace.proposed'")
    assert [(e["principal"], e["transport"]) for e in events] == [("agent:implementer-1", "session")]
    if case.adapter == "codex":  # Codex applied the patch itself (a file change), not a shell program
        assert '"type":"file_change"' in log, story
    (session,) = query(root, "SELECT working_directory FROM agent_sessions WHERE id = ?", (session_id,))
    assert session["working_directory"] == str(ws)
    assert "rtcap_" not in log


@pytest.mark.parametrize("case_id", list(CASES))
def test_reviewer_lists_and_calls_its_tools_with_rt(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    root = tmp_path / "demo"
    switch = Switch(lambda history: Answer("not yet"))
    stub = StubServer(switch).start()
    histories: list[list[Exchange]] = []
    vote = "rt vote_cast approve 'Looks right.'"  # its proposal is the session's
    try:
        prepare(root, socket_dir, case.adapter, stub.url)
        use_shell_tools(root)
        work = seed_work(root)
        steps: list[Checked] = [
            (case.shell("rt"), "proposal_get"),
            (case.shell(f"rt proposal_get {work.proposal_id}"), TITLE),
            (case.shell(vote), "vote:"),  # its own words are not said back: the vote's id
        ]
        inner = checked_in_order(steps, "Done: reviewed.")

        def script(history: list[Exchange]) -> Step:
            histories.append(history)
            return inner(history)

        switch.script = script
        env = operator_env(home, harness_bin, case.setup(home, stub))
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            launched = launch_role(root, env, "reviewer-1", work.task_id, work.proposal_id)
            session_id = str(launched["session"]["id"])
            status = wait_for_end(root, session_id, SESSION_TIMEOUT)
        finally:
            exit_code = owner.stop()
    finally:
        stub.stop()
    log, tools, story = ended_well(root, session_id, stub, case.tools_of, status, exit_code, tmp_path / "owner.err")

    # Its shell, no MCP tool; Claude Code its shell alone (and the question tool), no file tools.
    assert case.shell("rt").tool in tools and not [name for name in tools if name.startswith("mcp__")], story
    if case.adapter == "claude":
        assert tools == {"Bash", "AskUserQuestion"}, story
    history = histories[-1]
    listed = ran(history, "rt").result
    names = {line.split(" ", 1)[0] for line in listed.splitlines() if line and not line.startswith("usage:")}
    assert {"vote_cast", "proposal_get", "table_watch"} <= names, listed
    assert not names & {"workspace_propose", "proposal_create", "task_create"}, listed
    got = ran(history, f"rt proposal_get {work.proposal_id}").result
    assert TITLE in got and CHANGED in got, got
    # Its write call landed, as the agent through its session.
    (cast,) = query(root, "SELECT * FROM votes WHERE proposal_id = ? AND agent_id = 'reviewer-1'", (work.proposal_id,))
    assert cast["vote"] == "approve" and cast["id"] in ran(history, vote).result, cast
    events = query(root, "SELECT principal, transport FROM events WHERE type = 'vote.cast'")
    assert [(e["principal"], e["transport"]) for e in events] == [("agent:reviewer-1", "session")]
    (session,) = query(root, "SELECT metadata_json FROM agent_sessions WHERE id = ?", (session_id,))
    assert json.loads(session["metadata_json"])["isolation"] in ("bwrap", "landlock")
    assert "rtcap_" not in log
