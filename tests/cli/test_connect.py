"""`roundtable connect`: only its own entry is added or replaced (structural TOML/JSON edits, the
user's servers, settings and comments kept), the remaining step per harness is printed, and
`--trust` / `--approve` take it — the user's global Codex file only when asked."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from roundtable.cli import cli


@pytest.fixture(autouse=True)
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME and Codex home: the user's own settings are never read or written."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def connect(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["connect", *args, "--root", str(project)])


USER_TOML = """# my Codex settings
model = "o3"

[mcp_servers.other]
command = "other-server" # keep this comment
args = ["--flag"]
"""


def test_codex_entry_is_added_beside_the_users_servers_and_comments(project: Path, codex_home: Path) -> None:
    path = project / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(USER_TOML)
    out = connect(project, "codex", "--agent", "implementer-1")
    assert out.exit_code == 0, out.output
    text = path.read_text()
    assert text.startswith(USER_TOML)  # nothing of the user's changed, comments included
    doc = tomllib.loads(text)
    assert doc["mcp_servers"]["other"] == {"command": "other-server", "args": ["--flag"]}
    entry = doc["mcp_servers"]["roundtable"]
    assert entry["args"][-4:] == ["--root", str(project.resolve()), "--agent", "implementer-1"]
    assert entry["env_vars"] == ["ROUNDTABLE_MCP_TOKEN"]  # Codex forwards nothing unless listed
    assert "rttok_" not in text
    assert f"added the roundtable server to {path}" in out.output
    # The remaining step is printed, and the user's global Codex config is not touched.
    assert "Codex ignores .codex/config.toml until it trusts the project" in out.output
    assert f'[projects."{project.resolve()}"]' in out.output and 'trust_level = "trusted"' in out.output
    assert not codex_home.exists()
    again = connect(project, "codex", "--agent", "implementer-1")
    assert again.exit_code == 0 and "already has this roundtable entry; nothing changed" in again.output
    assert path.read_text() == text


def test_replacing_another_binding_needs_force_and_keeps_the_users_keys(project: Path, codex_home: Path) -> None:
    assert connect(project, "codex", "--agent", "implementer-1").exit_code == 0
    path = project / ".codex" / "config.toml"
    path.write_text(path.read_text() + "startup_timeout_sec = 40\n")
    before = path.read_text()
    refused = connect(project, "codex", "--agent", "reviewer-1")
    assert refused.exit_code == 1
    assert "already has a roundtable entry (project" in refused.output and "agent implementer-1" in refused.output
    assert path.read_text() == before
    forced = connect(project, "codex", "--agent", "reviewer-1", "--force")
    assert forced.exit_code == 0, forced.output
    assert "replaced the roundtable entry" in forced.output and "was: project" in forced.output
    entry = tomllib.loads(path.read_text())["mcp_servers"]["roundtable"]
    assert entry["args"][-1] == "reviewer-1" and entry["startup_timeout_sec"] == 40


def test_trust_edits_only_the_project_entry_of_the_global_codex_config(project: Path, codex_home: Path) -> None:
    codex_home.mkdir()
    user = codex_home / "config.toml"
    user.write_text('# mine\nmodel = "gpt-5"\n\n[projects."/elsewhere"]\ntrust_level = "untrusted"\n')
    user.chmod(0o600)
    out = connect(project, "codex", "--trust")
    assert out.exit_code == 0, out.output
    assert f"marked {project.resolve()} trusted in {user}" in out.output
    assert "Codex ignores" not in out.output
    text = user.read_text()
    assert text.startswith('# mine\nmodel = "gpt-5"\n')
    doc = tomllib.loads(text)
    assert doc["projects"]["/elsewhere"] == {"trust_level": "untrusted"}
    assert doc["projects"][str(project.resolve())] == {"trust_level": "trusted"}
    assert user.stat().st_mode & 0o777 == 0o600
    again = connect(project, "codex", "--trust")
    assert "already marked" in again.output and user.read_text() == text


def test_claude_entry_and_approval_keep_other_keys(project: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db-mcp"}}, "x": [1]}))
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}, "disabledMcpjsonServers": ["roundtable"]}))
    plain = connect(project, "claude", "--agent", "implementer-1")
    assert plain.exit_code == 0, plain.output
    assert "Claude Code keeps a project server pending until it is approved: rerun with --approve" in plain.output
    doc = json.loads((project / ".mcp.json").read_text())
    assert doc["x"] == [1] and doc["mcpServers"]["db"] == {"command": "db-mcp"}
    assert doc["mcpServers"]["roundtable"]["type"] == "stdio"
    approved = connect(project, "claude", "--agent", "implementer-1", "--approve")
    assert approved.exit_code == 0 and f"approved the roundtable server in {settings.resolve()}" in approved.output
    assert json.loads(settings.read_text()) == {
        "permissions": {"allow": ["Bash(ls)"]},
        "disabledMcpjsonServers": [],
        "enabledMcpjsonServers": ["roundtable"],
    }


@pytest.mark.parametrize(
    ("harness", "rel", "text", "message"),
    [
        ("codex", ".codex/config.toml", "[mcp_servers\nbroken", "is not valid TOML"),
        ("claude", ".mcp.json", "{not json", "is not valid JSON (Expecting property name"),
        ("cursor", ".cursor/mcp.json", "[1, 2]", "does not hold a JSON object"),
        ("claude", ".mcp.json", '{"mcpServers": []}', "mcpServers is not an object"),
    ],
)
def test_a_file_connect_cannot_parse_is_never_overwritten(
    project: Path, harness: str, rel: str, text: str, message: str
) -> None:
    path = project / rel
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    out = connect(project, harness, "--force")
    assert out.exit_code == 1 and message in out.output and "fix it, then run connect again" in out.output
    assert path.read_text() == text


def test_flags_belong_to_their_harness(project: Path) -> None:
    assert connect(project, "claude", "--trust").exit_code == 2
    assert connect(project, "codex", "--approve").exit_code == 2
    assert not (project / ".mcp.json").exists() and not (project / ".codex").exists()


def test_cursor_prints_its_remaining_step(project: Path) -> None:
    out = connect(project, "cursor", "--agent", "implementer-1")
    assert out.exit_code == 0, out.output
    assert "created" in out.output and "Settings → MCP" in out.output
    assert f"roundtable start --root {project.resolve()}" in out.output


def test_a_malformed_global_file_refuses_before_anything_is_written(project: Path, codex_home: Path) -> None:
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("[projects\n")
    out = connect(project, "codex", "--agent", "implementer-1", "--trust")
    assert out.exit_code == 1 and "is not valid TOML" in out.output
    assert not (project / ".codex").exists()
    assert (codex_home / "config.toml").read_text() == "[projects\n"
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{oops")
    refused = connect(project, "claude", "--approve")
    assert refused.exit_code == 1 and "is not valid JSON" in refused.output
    assert not (project / ".mcp.json").exists() and settings.read_text() == "{oops"


def test_codex_trusts_the_repository_holding_a_subdirectory_project(tmp_path: Path, codex_home: Path) -> None:
    import subprocess

    from roundtable.scaffold import init_project

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    init_project(sub)
    out = connect(sub, "codex", "--trust")
    assert out.exit_code == 0 and f"marked {repo.resolve()} trusted" in out.output
    doc = tomllib.loads((codex_home / "config.toml").read_text())
    assert doc["projects"] == {str(repo.resolve()): {"trust_level": "trusted"}}
    assert "Codex already trusts" in connect(sub, "codex").output


def test_connect_keeps_its_files_out_of_git_and_knows_a_running_owner(project: Path) -> None:
    """The files connect writes name this machine's paths: they go to .git/info/exclude (not the
    shared .gitignore), so `git status` stays clean; and with the owner running the next steps
    do not say to start it."""
    import os
    import subprocess

    subprocess.run(["git", "init", "-q", str(project)], check=True)
    gitignore = (project / ".gitignore").read_text(encoding="utf-8") if (project / ".gitignore").exists() else ""
    first = connect(project, "codex", "--agent", "implementer-1")
    second = connect(project, "claude", "--agent", "implementer-1", "--approve")
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "start the owner" in first.output  # none is running yet
    exclude = (project / ".git" / "info" / "exclude").read_text(encoding="utf-8").splitlines()
    assert [p for p in ("/.codex/", "/.mcp.json", "/.claude/") if p in exclude] == [
        "/.codex/",
        "/.mcp.json",
        "/.claude/",
    ]
    status = subprocess.run(["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True)
    assert not [
        line for line in status.stdout.splitlines() if ".codex" in line or ".mcp.json" in line or ".claude" in line
    ]
    assert (
        (project / ".gitignore").read_text(encoding="utf-8") if (project / ".gitignore").exists() else ""
    ) == gitignore
    again = connect(project, "codex", "--agent", "implementer-1", "--force")
    assert "kept out of git" not in again.output  # already excluded: nothing added twice
    assert (project / ".git" / "info" / "exclude").read_text(encoding="utf-8").splitlines().count("/.codex/") == 1
    # An owner holds the project (its lock names a live process: this one).
    (project / ".roundtable" / "owner.lock").write_text(str(os.getpid()), encoding="ascii")
    running = connect(project, "codex", "--agent", "implementer-1", "--force")
    assert "start the owner" not in running.output and f"the owner is running (pid {os.getpid()})" in running.output
