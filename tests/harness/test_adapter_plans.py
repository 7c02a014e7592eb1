"""What the e2e-harness tier found each real harness needs, as the adapters plan it (fast: no
harness is run; `make e2e-harness` runs them).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from roundtable.services.sessions import adapters
from tests.support.configs import mcp_sessions


def plan(name: str, model: str = "") -> adapters.Plan:
    return adapters.start_plan(
        mcp_sessions(),
        name,
        session_id="S",
        agent_id="implementer-1",
        run_id="R",
        working_directory="/w",
        role="implementer",
        task_id="T",
        model=model,
        socket_path="/tmp/rt-x/s.sock",
    )


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def test_claude_gets_the_session_bridge_inline_its_tools_allowed_and_no_builtin_tools(codex_home: Path) -> None:
    made = plan("claude", model="sonnet")
    argv = made.argv
    assert argv[:2] == ["claude", "-p"] and made.prompt.startswith("You are implementer-1")
    assert not any("You are" in word for word in argv)  # the prompt comes on standard input
    assert "--max-budget-usd" not in argv  # no cap configured
    config = json.loads(argv[argv.index("--mcp-config") + 1])  # not a file name: cwd is the repository
    assert config["mcpServers"]["roundtable"]["args"][-4:] == ["--root", "/w", "--socket", "/tmp/rt-x/s.sock"]
    assert "--strict-mcp-config" in argv
    assert argv[argv.index("--allowedTools") + 1] == "mcp__roundtable"
    # No built-in tool but its question tool, which asks the operator on its stream (stdio).
    assert argv[argv.index("--tools") + 1] == "AskUserQuestion"
    assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"
    assert argv[argv.index("--input-format") + 1] == "stream-json"
    assert argv[argv.index("--output-format") + 1] == "stream-json" and "--verbose" in argv
    assert argv[-2:] == ["--model", "sonnet"]
    assert "rtcap_" not in " ".join(argv)


def test_claude_waits_for_the_roundtable_server_before_its_first_turn(codex_home: Path) -> None:
    # Left to its default, `claude -p` starts after ~5 s with a slow server "pending" and never
    # offers its tools; the supervisor sets this in the session's environment.
    assert plan("claude").settings["MCP_CONNECTION_NONBLOCKING"] == "0"
    # A session reaches only its gateway: no telemetry or update checks to refuse.
    assert plan("claude").settings["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert plan("codex").settings == {}


def test_claude_inherits_no_model_key_or_endpoint(codex_home: Path) -> None:
    inherit = plan("claude").inherit
    assert set(inherit) == {"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"}  # the model's name only
    assert not {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"} & set(inherit)
    assert plan("claude").gateway_token == () and "ANTHROPIC_BASE_URL" not in plan("claude").settings


def test_claude_reaches_its_model_through_the_gateway_with_the_session_token(codex_home: Path) -> None:
    made = adapters.start_plan(
        mcp_sessions(),
        "claude",
        session_id="S",
        agent_id="implementer-1",
        run_id="R",
        working_directory="/w",
        socket_path="/tmp/rt-x/s.sock",
        gateway_url="http://127.0.0.1:4780",
    )
    assert made.settings["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4780/anthropic"
    assert made.gateway_token == ("ANTHROPIC_API_KEY",)  # set by the supervisor to the grant's token


def test_codex_without_operator_settings_writes_only_the_mcp_server(codex_home: Path) -> None:
    p = plan("codex")
    assert p.argv[:4] == ["codex", "exec", "--skip-git-repo-check", "--json"] and p.argv[-1] == "-"
    doc = tomllib.loads(p.files[".codex-home/config.toml"])
    assert set(doc) == {"mcp_servers"}
    assert doc["mcp_servers"]["roundtable"]["env_vars"] == ["ROUNDTABLE_MCP_TOKEN", "ROUNDTABLE_MCP_SOCKET"]
    assert p.inherit == () and p.gateway_token == ()


@pytest.mark.parametrize("role", ["planner", "reviewer", "tester", "security", "implementer"])
def test_codex_approves_the_roundtable_servers_tools_in_every_role(codex_home: Path, role: str) -> None:
    # `codex exec` has approval policy "never": an MCP tool not approved in its configuration is
    # refused ("MCP tool call requires approval, but approval policy is never"). Only implementers
    # in a workspace got past it (their approvals are bypassed with the sandbox).
    made = adapters.start_plan(
        mcp_sessions(),
        "codex",
        session_id="S",
        agent_id=f"{role}-1",
        run_id="R",
        working_directory="/w",
        role=role,
        task_id="T",
        socket_path="/tmp/rt-x/s.sock",
    )
    entry = tomllib.loads(made.files[".codex-home/config.toml"])["mcp_servers"]["roundtable"]
    assert entry["default_tools_approval_mode"] == "approve"
    # Codex waits for the server before its first turn (left optional, a slow start dropped it).
    assert entry["required"] is True and entry["startup_timeout_sec"] >= 30
    assert "--dangerously-bypass-approvals-and-sandbox" not in made.argv  # no workspace: its own sandbox stays
    # Its working directory is the private home: a CODEX_HOME at `<home>/.codex` is read as an
    # untrusted project's configuration there, and Codex then starts no MCP server at all.
    assert made.env == {"CODEX_HOME": ".codex-home"} and not [f for f in made.files if f.startswith(".codex/")]


def test_codex_takes_the_operators_model_name_and_the_gateway_as_its_provider(codex_home: Path) -> None:
    (codex_home / "config.toml").write_text(
        'model = "m1"\nmodel_provider = "mine"\napproval_policy = "never"\nopenai_base_url = "http://evil/v1"\n\n'
        '[model_providers.mine]\nname = "mine"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'wire_api = "responses"\nenv_key = "MINE_KEY"\n\n'
        '[mcp_servers.other]\ncommand = "other"\n\n[projects."/w"]\ntrust_level = "trusted"\n',
        encoding="utf-8",
    )
    p = adapters.start_plan(
        mcp_sessions(),
        "codex",
        session_id="S",
        agent_id="implementer-1",
        run_id="R",
        working_directory="/w",
        socket_path="/tmp/rt-x/s.sock",
        gateway_url="http://127.0.0.1:4780",
    )
    doc = tomllib.loads(p.files[".codex-home/config.toml"])
    # The operator's model name; never its provider, base URL or key variable.
    assert doc["model"] == "m1" and doc["model_provider"] == "roundtable"
    assert doc["model_providers"] == {
        "roundtable": {
            "name": "roundtable gateway",
            "base_url": "http://127.0.0.1:4780/openai/v1",
            "wire_api": "responses",
            "env_key": "ROUNDTABLE_GATEWAY_TOKEN",
        }
    }
    assert set(doc) == {"model", "model_provider", "model_providers", "mcp_servers", *adapters.CODEX_QUIET}
    assert doc["check_for_update_on_startup"] is False and doc["analytics"] == {"enabled": False}
    assert set(doc["mcp_servers"]) == {"roundtable"}
    assert p.inherit == () and p.gateway_token == ("ROUNDTABLE_GATEWAY_TOKEN",)
    assert "MINE_KEY" not in p.files[".codex-home/config.toml"] and "evil" not in p.files[".codex-home/config.toml"]


def test_codex_ignores_an_unreadable_operator_config(codex_home: Path) -> None:
    (codex_home / "config.toml").write_text("model = [unclosed\n", encoding="utf-8")
    doc = tomllib.loads(plan("codex").files[".codex-home/config.toml"])
    assert set(doc) == {"mcp_servers"}


def test_claude_gets_its_spending_cap_when_one_is_configured(codex_home: Path) -> None:
    from roundtable.config import parse_config
    from roundtable.services.sessions import adapters

    config = parse_config("limits:\n  max_budget_usd: 2.5\n")
    argv = adapters.start_plan(
        config, "claude", session_id="S-1", agent_id="implementer-1", run_id="RUN-1", working_directory="/w"
    ).argv
    assert argv[argv.index("--max-budget-usd") + 1] == "2.5"
    codex = adapters.start_plan(
        config, "codex", session_id="S-1", agent_id="implementer-1", run_id="RUN-1", working_directory="/w"
    ).argv
    assert "--max-budget-usd" not in codex  # only Claude Code has such a flag


def shell_plan(name: str, workspace: str = "") -> adapters.Plan:
    """A `sessions.tools: shell` session of `name`, gateway configured."""
    config = mcp_sessions()
    config = config.model_copy(update={"sessions": config.sessions.model_copy(update={"tools": "shell"})})
    return adapters.start_plan(
        config,
        name,
        session_id="S",
        agent_id="reviewer-1" if not workspace else "implementer-1",
        run_id="R",
        working_directory=workspace or "/home-of-session",
        role="reviewer" if not workspace else "implementer",
        task_id="T",
        socket_path="/tmp/rt-x/s.sock",
        workspace=workspace,
        sandboxed=True,
        gateway_url="http://127.0.0.1:4780",
    )


@pytest.mark.parametrize("workspace", ["", "/ws"])
def test_a_shell_session_of_claude_has_no_mcp_server_its_shell_and_rt(codex_home: Path, workspace: str) -> None:
    made = shell_plan("claude", workspace)
    argv = made.argv
    assert "--mcp-config" not in argv and not any("mcp__" in word for word in argv)
    assert made.files == {}  # no .mcp.json either
    tools = argv[argv.index("--tools") + 1].split()
    allowed = argv[argv.index("--allowedTools") + 1].split()
    assert "Bash" in tools and "Bash" in allowed
    assert (set(allowed) == {"Bash"}) is (not workspace)  # outside a workspace, its shell alone
    assert made.commands["rt"].startswith("#!/bin/sh\nexec ") and made.commands["rt"].endswith(' agent "$@"\n')
    assert "`rt` lists the ones you may call" in made.prompt
    if workspace:
        # The session's task is its capability's: `rt workspace_propose T` would be refused
        # ("too many values"), the session's schema has no required task_id.
        assert "call `rt workspace_propose --title TITLE --summary-md SUMMARY`" in made.prompt
        assert "rt workspace_propose T" not in made.prompt


def test_a_shell_session_of_codex_configures_its_provider_but_no_mcp_server(codex_home: Path) -> None:
    made = shell_plan("codex")
    [(path, text)] = made.files.items()
    doc = tomllib.loads(text)
    assert path.endswith("config.toml") and "mcp_servers" not in doc
    assert doc["model_provider"] == adapters.CODEX_PROVIDER  # the gateway stays its model API
    assert "--dangerously-bypass-approvals-and-sandbox" in made.argv  # its shell inside ours
    assert made.commands.keys() == {"rt"}


def test_other_harnesses_keep_mcp_in_a_shell_configuration(codex_home: Path) -> None:
    made = shell_plan("gemini")
    assert made.commands == {} and ".gemini/settings.json" in made.files
