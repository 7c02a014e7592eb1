"""Claude Code and Codex, installed from npm, edit their workspace with their own tools and
propose it (issue "Workspaces").

For each harness: the demo project, a real owner, the agent's workspace made by the operator
(`roundtable workspaces create`), and two supervised implementer sessions against a local stub of
the harness's model API. The first edits `calc/ops.py` with the harness's own editing tool
(Claude Code: Read then Edit; Codex: apply_patch) and calls `workspace_propose`; the proposal's
revision is byte-equal to `git diff` of the workspace and the project's working tree is
unchanged. A reviewer then votes `revise`; the second session finds the first revision in place,
edits again and proposes revision 2 of the same proposal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import scripts
from .model_stub import Answer, StubServer, ToolCall, anthropic_tools, bare, responses_tools
from .scripts import Switch, in_order
from .table import (
    BEFORE,
    CHANGED,
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
from .test_supervised_sessions import SESSION_TIMEOUT, claude_setup, codex_plain_setup

pytestmark = pytest.mark.e2e_harness
FIRST = "\n\ndef mul(a: int, b: int) -> int:\n    return a * b\n"
SECOND = "\n\ndef div(a: int, b: int) -> float:\n    return a / b\n"


def claude_edit(ws: Path, task_id: str, old: str, new: str, title: str) -> list[ToolCall]:
    propose = ToolCall("workspace_propose", {"task_id": task_id, "title": title, "summary_md": f"{title}."})
    return [*scripts.claude_edit(ws, CHANGED, old, new), propose]


def codex_edit(ws: Path, task_id: str, old: str, new: str, title: str) -> list[ToolCall]:
    propose = ToolCall("workspace_propose", {"task_id": task_id, "title": title, "summary_md": f"{title}."})
    return [*scripts.codex_edit(ws, CHANGED, old, new), propose]


@dataclass(frozen=True)
class Case:
    adapter: str
    setup: Callable[[Path, StubServer], dict[str, str]]
    edit: Callable[[Path, str, str, str, str], list[ToolCall]]
    tools_of: Callable[[dict[str, object]], list[str]]
    editor: str  # the native editing tool the harness must offer


CASES = {
    "claude": Case("claude", claude_setup, claude_edit, anthropic_tools, "Edit"),
    "codex": Case("codex", codex_plain_setup, codex_edit, responses_tools, "exec_command"),
}


@pytest.mark.parametrize("case_id", list(CASES))
def test_harness_edits_its_workspace_natively_and_revises_it(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    root = tmp_path / "demo"
    switch = Switch(lambda history: Answer("not yet"))
    stub = StubServer(switch).start()
    stories: list[str] = []
    try:
        prepare_project(root, socket_dir, case.adapter, upstream=stub.url)
        _run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        ws = Path(
            rt(env, "workspaces", "create", "--root", str(root), "--agent", "implementer-1", "--task", task_id).strip()
        )
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            switch.script = in_order(case.edit(ws, task_id, BEFORE, BEFORE + FIRST, "Add mul()"), "Done: proposed.")
            first = launch(root, env, "implementer-1", task_id)
            status = wait_for_end(root, first, SESSION_TIMEOUT)
            offered_1 = sorted(
                {n for r in stub.requests if r.kind in ("messages", "responses") for n in case.tools_of(r.body)}
            )
            stories.append(
                f"session 1 log:\n{session_log(root, first)[-3000:]}\nsteps: {stub.steps}\noffered: {offered_1}"
            )
            assert status == "ended", stories[-1]
            final = stub.steps[-1]
            assert isinstance(final, Answer) and final.text.startswith("Done"), stories[-1]
            (proposal,) = query(root, "SELECT * FROM proposals WHERE task_id = ?", (task_id,))
            patch1 = (root / proposal["patch_path"]).read_text()
            assert patch1 == workspace_diff(ws)
            assert (root / CHANGED).read_text() == BEFORE  # the working tree is untouched until apply
            vote = {"proposal_id": proposal["id"], "agent_id": "reviewer-1", "vote": "revise", "reason_md": "add div"}
            rt(env, "mcp", "call", "--root", str(root), "--socket", "--tool", "vote_cast", "--args", json.dumps(vote))
            stub.steps.clear()
            switch.script = in_order(
                case.edit(ws, task_id, BEFORE + FIRST, BEFORE + FIRST + SECOND, "Add div()"), "Done: revised."
            )
            second = launch(root, env, "implementer-1", task_id)
            status = wait_for_end(root, second, SESSION_TIMEOUT)
            stories.append(f"session 2 log:\n{session_log(root, second)[-3000:]}\nsteps: {stub.steps}")
            assert status == "ended", stories[-1]
        finally:
            exit_code = owner.stop()
    finally:
        stub.stop()
    assert exit_code == 0, (tmp_path / "owner.err").read_text()
    offered = {
        bare(name) for r in stub.requests if r.kind in ("messages", "responses") for name in case.tools_of(r.body)
    }
    assert case.editor in offered and "workspace_propose" in offered, offered

    (proposal,) = query(root, "SELECT * FROM proposals WHERE task_id = ?", (task_id,))
    assert proposal["revision_number"] == 2 and proposal["workspace_id"], stories
    patch2 = (root / proposal["patch_path"]).read_text()
    assert patch2 == workspace_diff(ws)
    assert (ws / CHANGED).read_text() == BEFORE + FIRST + SECOND  # revision 1 was in place
    assert (root / CHANGED).read_text() == BEFORE
    revisions = query(root, "SELECT number, agent_id FROM patch_revisions WHERE proposal_id = ?", (proposal["id"],))
    assert [(r["number"], r["agent_id"]) for r in revisions] == [(1, "implementer-1"), (2, "implementer-1")]
    proposed = query(root, "SELECT principal, transport, payload_json FROM events WHERE type = 'workspace.proposed'")
    assert [(e["principal"], e["transport"]) for e in proposed] == [("agent:implementer-1", "session")] * 2
    if case.adapter == "codex":  # Codex applied the patch itself (a file change), not a shell program
        assert '"type":"file_change"' in session_log(root, first), stories[0]
    sessions = query(root, "SELECT working_directory FROM agent_sessions ORDER BY rowid")
    assert [s["working_directory"] for s in sessions] == [str(ws), str(ws)]
