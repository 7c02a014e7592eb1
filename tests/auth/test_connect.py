"""`roundtable connect --agent ID`: the harness is bound to one agent through a credential file the
bridge reads; no secret is ever written into a harness configuration."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from click.testing import CliRunner

from roundtable import credentials
from roundtable.cli import cli


def test_connect_binds_an_agent_without_a_secret_in_the_harness_file(project: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["connect", "claude", "--root", str(project), "--agent", "implementer-1"])
    assert out.exit_code == 0, out.output
    doc = json.loads((project / ".mcp.json").read_text())
    args = doc["mcpServers"]["roundtable"]["args"]
    assert args[-4:] == ["--root", str(project.resolve()), "--agent", "implementer-1"]
    token = credentials.read_credential(project, agent_id="implementer-1")
    assert token and token not in (project / ".mcp.json").read_text()
    path = credentials.credential_path(project, agent_id="implementer-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "acts as implementer-1" in out.output
    # Again (with --force): the live credential is kept, not rotated.
    again = runner.invoke(cli, ["connect", "claude", "--root", str(project), "--agent", "implementer-1", "--force"])
    assert again.exit_code == 0 and credentials.read_credential(project, agent_id="implementer-1") == token
    # Codex gets the same binding; its file says where the credential comes from, not what it is.
    codex = runner.invoke(cli, ["connect", "codex", "--root", str(project), "--agent", "reviewer-1"])
    text = (project / ".codex" / "config.toml").read_text()
    assert codex.exit_code == 0 and '"--agent", "reviewer-1"' in text and "rttok_" not in text


def test_connect_without_agent_says_read_only_and_refuses_unknown_agents(project: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["connect", "cursor", "--root", str(project)])
    assert out.exit_code == 0 and "read-only tools only" in out.output and "--agent" in out.output
    assert "--agent" not in (project / ".cursor" / "mcp.json").read_text()
    bad = runner.invoke(cli, ["connect", "claude", "--root", str(project), "--agent", "ghost-9"])
    assert bad.exit_code == 1 and "agent ghost-9 is not configured" in bad.output
    assert not (project / ".mcp.json").exists()
    assert credentials.read_credential(project, agent_id="ghost-9") is None
