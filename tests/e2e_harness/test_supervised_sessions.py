"""Claude Code and Codex, installed from npm, as supervised implementer sessions
(the real harnesses, for real).

For each harness: the demo project with its implementers on that adapter, a real owner
(`roundtable start`), the operator's `roundtable sessions launch`, and a local stub of the
harness's model API that scripts the model's side (request a turn, start it, edit the file in the
session's workspace with the harness's own tools, propose the workspace's diff with
`workspace_propose`, complete the turn, answer). A session in a workspace is not shown the tools
its own editor replaces (`proposal_create`, `resource_claim`, `repo_read_file`, …), so the harness
could not call them. Everything else is real: the harness, its MCP
client, the `roundtable mcp stdio` bridge it starts, the session's capability socket, the
supervisor's sandbox and the owner's database, which the test then reads.

How each harness reaches the stub is how an operator points roundtable at any model endpoint:
the stub is the upstream of the owner's gateway (`adapters.<name>.upstream`), and the operator's
key is in the owner's environment (`ANTHROPIC_API_KEY`, `CODEX_API_KEY`). The session has no
network but its sandbox's loopback, where the gateway is relayed: Claude Code gets
`ANTHROPIC_BASE_URL` pointing there and a per-session gateway token as its key; Codex a model
provider in its private CODEX_HOME whose `base_url` is the gateway (the operator's own Codex
configuration still chooses the model). Codex runs twice: with a model it has no metadata for
(MCP tools offered as functions) and with its default model ("code mode": MCP tools, and its own
tools, reached from JavaScript through its `exec` tool). While each session runs, its processes' environments and
every file of its directory and workspace are searched for the operator's key.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .model_stub import Answer, StubServer, ToolCall, Usage, anthropic_tools, bare, responses_tools
from .scripts import Switch, claude_edit, codex_edit, implementer
from .table import (
    AFTER,
    BEFORE,
    CHANGED,
    TITLE,
    KeyWatch,
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

pytestmark = pytest.mark.e2e_harness
SESSION_TIMEOUT = 180.0
# The roundtable calls, in order; the harness's own edit (its case's `edit`) comes between the
# start of the turn and the proposal.
EXPECTED_STEPS = [
    "agent_turn_request",
    "agent_turn_start",
    "workspace_propose",
    "agent_turn_complete",
]
# What a session in its workspace is not shown: its own editor, shell and search do that.
NOT_SHOWN = ("proposal_create", "resource_claim", "repo_read_file", "vote_cast", "patch_apply", "task_create")
# What the stub reports for every model request (distinct numbers, so a mix-up shows).
SPEND = Usage(input_tokens=1234, output_tokens=321, cached_tokens=456, cache_creation_tokens=78)
ANTHROPIC_KEY = "sk-ant-stub-e2e-harness"
PROVIDER_KEY = "sk-stub-e2e-harness"


def claude_setup(home: Path, stub: StubServer) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": ANTHROPIC_KEY}


def codex_setup(home: Path, model: str = "") -> dict[str, str]:
    """The operator's Codex configuration (only the model's name) and key."""
    if model:
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(f'model = "{model}"\n', encoding="utf-8")
    return {"CODEX_API_KEY": PROVIDER_KEY}


def codex_plain_setup(home: Path, stub: StubServer) -> dict[str, str]:
    # A model Codex has no metadata for gets the plain tool set: each MCP server's tools are
    # functions in a namespace `mcp__<server>`.
    return codex_setup(home, "stub-model")


def codex_code_mode_setup(home: Path, stub: StubServer) -> dict[str, str]:
    # Codex's own default model gets "code mode": MCP tools are not offered as functions but
    # reached from JavaScript run by the `exec` tool (the stub writes that script).
    return codex_setup(home)


def codex_own_provider_setup(home: Path, stub: StubServer) -> dict[str, str]:
    # The operator's own Codex provider names the endpoint and the variable of its key (no
    # CODEX_API_KEY at all): the owner's gateway follows it; the session's Codex never sees it.
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(
        'model = "stub-model"\nmodel_provider = "mine"\n\n[model_providers.mine]\nname = "mine"\n'
        f'base_url = "{stub.url}/v1"\nwire_api = "responses"\nenv_key = "MINE_PROVIDER_KEY"\n',
        encoding="utf-8",
    )
    return {"MINE_PROVIDER_KEY": PROVIDER_KEY}


@dataclass(frozen=True)
class Case:
    adapter: str
    setup: Callable[[Path, StubServer], dict[str, str]]
    key_header: tuple[str, str]  # the header carrying the operator's key, and its value
    direct: str  # how workspace_propose is offered directly ("" when only through `exec`)
    edit: Callable[[Path, str, str, str], list[ToolCall]]  # the harness's own edit of a file
    upstream: bool = True  # `adapters.<adapter>.upstream` names the stub (else the setup does)


CASES = {
    "claude": Case(
        "claude", claude_setup, ("x-api-key", ANTHROPIC_KEY), "mcp__roundtable__workspace_propose", claude_edit
    ),
    "codex": Case(
        "codex",
        codex_plain_setup,
        ("authorization", f"Bearer {PROVIDER_KEY}"),
        "mcp__roundtable.workspace_propose",
        codex_edit,
    ),
    "codex-code-mode": Case(
        "codex", codex_code_mode_setup, ("authorization", f"Bearer {PROVIDER_KEY}"), "", codex_edit
    ),
    "codex-own-provider": Case(
        "codex",
        codex_own_provider_setup,
        ("authorization", f"Bearer {PROVIDER_KEY}"),
        "mcp__roundtable.workspace_propose",
        codex_edit,
        upstream=False,
    ),
}


@pytest.mark.parametrize("case_id", list(CASES))
def test_supervised_implementer_edits_proposes_and_completes_its_turn(
    case_id: str, tmp_path: Path, harness_bin: Path, home: Path, socket_dir: Path
) -> None:
    case = CASES[case_id]
    adapter = case.adapter
    root = tmp_path / "demo"
    switch = Switch(lambda history: Answer("not yet"))
    stub = StubServer(switch, usage=SPEND).start()
    try:
        prepare_project(root, socket_dir, adapter, upstream=stub.url if case.upstream else "")
        run_id, task_id = seed(root)
        env = operator_env(home, harness_bin, case.setup(home, stub))
        # The workspace the supervisor gives the session (made now, so the script can name it).
        ws = Path(
            rt(env, "workspaces", "create", "--root", str(root), "--agent", "implementer-1", "--task", task_id).strip()
        )
        edit = case.edit(ws, CHANGED, BEFORE, AFTER)
        switch.script = implementer(edit, TITLE)
        owner = Owner(root, env, tmp_path / "owner.err")
        try:
            started = time.monotonic()
            session_id = launch(root, env, "implementer-1", task_id)
            watch = KeyWatch(root, session_id, (ANTHROPIC_KEY, PROVIDER_KEY))
            try:
                status = wait_for_end(root, session_id, SESSION_TIMEOUT)
            finally:
                watch.stop()
            took = time.monotonic() - started
        finally:
            exit_code = owner.stop()
    finally:
        stub.stop()
    log = session_log(root, session_id)
    story = f"session log:\n{log[-3000:]}\nmodel steps: {stub.steps}"
    refused = [
        f"{p['host']}:{p['port']}"
        for p in (
            json.loads(e["payload_json"])
            for e in query(root, "SELECT payload_json FROM events WHERE type = ?", ("gateway.connection_refused",))
        )
    ]
    print(
        f"{case_id}: session of {took:.1f} s, {len(watch.processes)} processes and {len(watch.files)} files searched;"
        f" connections refused by the gateway: {refused}"
    )

    # The operator's key never existed in the session: in no process's environment or argv, in
    # no file of its directory or workspace (searched while it ran).
    assert watch.processes and watch.files, (watch.processes, watch.files)
    assert watch.leaks == [], watch.leaks

    # The harness ran the whole script through the roundtable tools and exited cleanly.
    assert status == "ended", story
    assert exit_code == 0, (tmp_path / "owner.err").read_text()
    calls = [step.tool for step in stub.steps if isinstance(step, ToolCall)]
    expected = [*EXPECTED_STEPS[:2], *(step.tool for step in edit), *EXPECTED_STEPS[2:]]
    assert [c for c in calls if c != "table_watch"] == expected, story
    final = stub.steps[-1]
    assert isinstance(final, Answer) and final.text.startswith("Done"), story

    # The model API saw the operator's key (added by the owner's gateway: the session had only
    # its gateway token) and the session's tools: the implementer in its workspace is offered
    # workspace_propose, and neither what its own editor does nor what its role may not call.
    model_calls = [r for r in stub.requests if r.kind in ("messages", "responses")]
    assert model_calls, [r.kind for r in stub.requests]
    header, value = case.key_header
    assert all(r.headers.get(header) == value for r in model_calls)
    tools_of = anthropic_tools if adapter == "claude" else responses_tools
    offered = {name for r in model_calls for name in tools_of(r.body)}
    if case.direct:
        assert case.direct in offered
    else:
        assert "functions.exec" in offered and not [n for n in offered if n.startswith("mcp__")]
    assert not [name for name in offered if bare(name) in NOT_SHOWN], offered

    # The database: the claim, the proposal with its patch revision, the completed turn.
    (session,) = query(root, "SELECT * FROM agent_sessions WHERE id = ?", (session_id,))
    assert session["adapter"] == adapter and session["agent_id"] == "implementer-1"
    metadata = json.loads(session["metadata_json"])
    assert metadata["role"] == "implementer" and metadata["task_id"] == task_id
    assert session["working_directory"] == str(ws)

    (claim,) = query(root, "SELECT * FROM claims WHERE agent_id = 'implementer-1'")
    assert (claim["resource_id"], claim["claim_type"], claim["task_id"]) == (f"file:{CHANGED}", "write", task_id)

    (proposal,) = query(root, "SELECT * FROM proposals WHERE task_id = ?", (task_id,))
    diff = workspace_diff(ws)  # the harness's own edit, as `git diff` shows it
    revision = hashlib.sha256(diff.encode()).hexdigest()
    assert proposal["agent_id"] == "implementer-1" and proposal["title"] == TITLE
    assert proposal["proposer_session_id"] == session_id
    assert (proposal["current_revision"], proposal["revision_number"]) == (revision, 1)
    (stored,) = query(root, "SELECT * FROM patch_revisions WHERE proposal_id = ?", (proposal["id"],))
    assert (stored["number"], stored["sha256"], stored["agent_id"]) == (1, revision, "implementer-1")
    assert json.loads(stored["touched_files_json"]) == [CHANGED]
    assert json.loads(stored["claim_fences_json"]) == {claim["id"]: claim["fence"]}
    patch_file = root / stored["patch_path"]
    assert patch_file.read_text() == diff and f"+++ b/{CHANGED}" in diff
    assert (ws / CHANGED).read_text() == AFTER and (root / CHANGED).read_text() == BEFORE
    if adapter == "codex":  # Codex applied the patch itself (a file change), in code mode from `exec`
        assert '"type":"file_change"' in log, story
    applies = subprocess.run(["git", "apply", "--check", str(patch_file)], cwd=root, capture_output=True, text=True)
    assert applies.returncode == 0, applies.stderr  # a real diff of the demo project

    # Every agent event came through the session's capability socket as the agent.
    events = query(root, "SELECT * FROM events WHERE run_id = ? ORDER BY id", (run_id,))
    by_agent = [e for e in events if e["actor_id"] == "implementer-1"]
    assert [e["type"] for e in by_agent] == [
        "agent.turn_requested",
        "agent.turn_started",
        # workspace_propose: claims what the diff touches, proposes it and asks for review.
        "claim.created",
        "proposal.created",
        "proposal.review_requested",
        "workspace.proposed",
        "agent.turn_completed",
    ]
    assert {(e["principal"], e["transport"]) for e in by_agent} == {("agent:implementer-1", "session")}
    request_id = by_agent[0]["id"]
    assert json.loads(by_agent[-1]["payload_json"])["request_event_id"] == request_id
    assert json.loads(by_agent[3]["payload_json"])["revision"] == revision
    ends = [e for e in events if e["type"] == "session.exited"]
    assert [json.loads(e["payload_json"])["exit_code"] for e in ends] == [0]
    revoked = query(
        root, "SELECT revoked_at, revoked_reason FROM session_capabilities WHERE session_id = ?", (session_id,)
    )
    assert revoked and all(r["revoked_at"] and r["revoked_reason"] == "process_exited" for r in revoked)

    # The usage recorded for the session, its task and its run is what the stub reported, as the
    # gateway read it on the wire (what the harness printed is only a cross-check).
    n = len(model_calls)
    if adapter == "claude":
        expected = (
            n * (SPEND.input_tokens + SPEND.cache_creation_tokens + SPEND.cached_tokens),
            n * SPEND.cached_tokens,
        )
    else:
        expected = (n * SPEND.input_tokens, n * SPEND.cached_tokens)
    (spent,) = query(root, "SELECT * FROM session_usage WHERE session_id = ?", (session_id,))
    assert (spent["input_tokens"], spent["cached_input_tokens"]) == expected, story
    assert spent["output_tokens"] == n * SPEND.output_tokens
    assert spent["task_id"] == task_id and spent["run_id"] == run_id and spent["source"] == "gateway"
    for column, key in (("task_id", task_id), ("run_id", run_id)):  # the rollups: this one session
        (total,) = query(
            root,
            f"SELECT sum(input_tokens) AS i, sum(output_tokens) AS o FROM session_usage WHERE {column} = ?",
            (key,),
        )
        assert (total["i"], total["o"]) == (expected[0], n * SPEND.output_tokens)
    assert (spent["proposal_id"], spent["revision"]) == (proposal["id"], 1)
    # No price table is configured: the cost is unknown (a harness's own estimate is not taken).
    assert (spent["cost_source"], spent["cost_usd"]) == ("", 0)

    # The session log holds the harness's own trace of the tool calls, and never the token.
    assert "workspace_propose" in log
    assert "rtcap_" not in log
    assert ANTHROPIC_KEY not in log and PROVIDER_KEY not in log
