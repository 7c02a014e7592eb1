"""A harness in a workspace gets its native tools there; without one it works through MCP only."""

from __future__ import annotations

from roundtable.services.sessions import adapters
from tests.support.configs import mcp_sessions


def _argv(name: str, workspace: str = "", sandboxed: bool = False) -> list[str]:
    plan = adapters.start_plan(
        mcp_sessions(),
        name,
        session_id="S-1",
        agent_id="implementer-1",
        run_id="RUN-1",
        working_directory="/project",
        role="implementer",
        task_id="T-1",
        socket_path="/run/s.sock",
        workspace=workspace,
        sandboxed=sandboxed,
    )
    return plan.argv


def _after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_claude_gets_file_and_shell_tools_only_in_a_workspace() -> None:
    plain = _argv("claude")
    assert _after(plain, "--tools") == "AskUserQuestion" and _after(plain, "--allowedTools") == "mcp__roundtable"
    assert "--permission-mode" not in plain
    native = _argv("claude", "/ws/WS-1")
    assert _after(native, "--tools") == "Read Edit Write Bash Glob Grep AskUserQuestion"
    assert _after(native, "--allowedTools") == "mcp__roundtable Read Edit Write Bash Glob Grep"
    assert _after(native, "--permission-mode") == "acceptEdits"


def test_codex_is_rooted_at_the_workspace_with_its_sandbox_or_ours() -> None:
    assert "-C" not in _argv("codex")
    own = _argv("codex", "/ws/WS-1")
    assert _after(own, "-C") == "/ws/WS-1" and _after(own, "--sandbox") == "workspace-write"
    ours = _argv("codex", "/ws/WS-1", sandboxed=True)
    assert _after(ours, "-C") == "/ws/WS-1" and "--dangerously-bypass-approvals-and-sandbox" in ours
    assert "--sandbox" not in ours


def test_the_prompt_points_at_the_workspace_and_workspace_propose() -> None:
    prompt = adapters.prompt_for("implementer-1", "implementer", "RUN-1", "T-1", "", workspace="/ws/WS-1")
    assert "/ws/WS-1" in prompt and "workspace_propose" in prompt and "task_id T-1" in prompt
