"""Commands that used to print nothing say what they found, and tool names are
the ones clients see: `mcp inspect` prints the advertised names, an unknown tool has the same
words in the CLI and over MCP."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable.cli import cli
from roundtable.owner import Owner
from roundtable.tools.registry import get_registry

from ..helpers import auth_headers, sdk_http


def rt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roundtable", *args], capture_output=True, text=True, timeout=60)


def test_empty_lists_say_so(project: Path) -> None:
    runner = CliRunner()
    claims = runner.invoke(cli, ["claims", "list", "--root", str(project)])
    assert claims.exit_code == 0 and claims.output.strip() == "no claims"
    mine = runner.invoke(cli, ["claims", "list", "--root", str(project), "--agent", "tester-1"])
    assert mine.output.strip() == "no claims matching agent tester-1"
    sessions = runner.invoke(cli, ["sessions", "list", "--root", str(project)])
    assert sessions.exit_code == 0 and sessions.output.startswith("no sessions")
    tokens = runner.invoke(cli, ["tokens", "list", "--root", str(project)])
    assert tokens.exit_code == 0 and tokens.output.startswith("no tokens")
    as_json = runner.invoke(cli, ["claims", "list", "--root", str(project), "--json"])
    assert '"claims": []' in as_json.output  # JSON stays machine-readable


def test_symbols_says_unsupported_or_none(tmp_path: Path) -> None:
    runner = CliRunner()
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    out = runner.invoke(cli, ["symbols", "--path", str(notes)])
    assert out.exit_code == 1
    assert f"no symbols: {notes} is not in a supported language (supported extensions: .cjs, .go" in out.output
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    none = runner.invoke(cli, ["symbols", "--path", str(empty)])
    assert none.exit_code == 0 and none.output.strip() == f"no symbols in {empty}"


def test_watch_refuses_an_unknown_run_and_names_the_run(project: Path) -> None:
    out = rt("watch", "--root", str(project), "--run", "RUN-nope")
    assert out.returncode == 1 and out.stderr.strip() == "get run RUN-nope: not found"
    assert rt("run", "--headless", "--root", str(project), "--run", "RUN-here").returncode == 0
    header = rt("watch", "--root", str(project), "--run", "RUN-here").stdout.splitlines()[0]
    assert header.startswith("WATCH run=RUN-here active_agents=")
    everything = rt("watch", "--root", str(project)).stdout.splitlines()[0]
    assert everything.startswith("WATCH run=(all) active_agents=")


def test_mcp_inspect_prints_what_clients_are_given(project: Path) -> None:
    out = rt("mcp", "inspect", "--root", str(project))
    names = out.stdout.split()
    assert "agent_turn_request" in names and "agent.turn_request" not in names
    assert names == sorted(spec.mcp_name for spec in get_registry().exposed())
    cfg = project / ".roundtable" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("tool_names: underscore", "tool_names: dotted"))
    assert "agent.turn_request" in rt("mcp", "inspect", "--root", str(project)).stdout.split()


@pytest.mark.anyio
async def test_an_unknown_tool_has_the_same_words_in_the_cli_and_over_mcp(project: Path) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    cli_out = rt("mcp", "call", "--root", str(project), "--tool", "no_such_tool")
    assert cli_out.returncode == 1
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        headers = await auth_headers(owner.runtime, agent_id="implementer-1")
        async with Client(sdk_http(owner.http_url, headers), mode="legacy") as client:
            with pytest.raises(MCPError) as info:
                await client.session.call_tool("no_such_tool", {})
    assert cli_out.stderr.strip() == str(info.value) == "unknown tool: no_such_tool"
