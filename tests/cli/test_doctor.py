"""`roundtable doctor`: every failing state is a PROBLEM with a fix; a working setup
without an owner exits 0 ("start one with …"); with an owner it starts each configured bridge
the way its harness would and lists the tools through it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable import credentials
from roundtable.cli import cli
from roundtable.owner import Owner
from tests.support.owners import free_port, set_http_address


@pytest.fixture(autouse=True)
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private HOME and Codex home: the user's own settings are never read or written."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def doctor(project: Path) -> tuple[int, str]:
    """`roundtable doctor` on `project`; a project still at the default address is moved to a free
    port first, so an owner listening on 127.0.0.1:7117 on this machine cannot change the answer."""
    config = project / ".roundtable" / "config.yaml"
    if config.is_file() and 'http_address: "127.0.0.1:7117"' in config.read_text(encoding="utf-8"):
        set_http_address(project, free_port())
    out = CliRunner().invoke(cli, ["doctor", "--root", str(project)])
    return out.exit_code, out.output


def connected(project: Path) -> Path:
    """A project connected the recommended way: codex trusted, claude approved, both as implementer-1."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    runner = CliRunner()
    for args in (["codex", "--trust"], ["claude", "--approve"]):
        out = runner.invoke(cli, ["connect", *args, "--agent", "implementer-1", "--root", str(project)])
        assert out.exit_code == 0, out.output
    set_http_address(project, free_port())
    return project


def test_a_working_setup_without_an_owner_is_not_a_problem(project: Path) -> None:
    code, text = doctor(connected(project))
    assert code == 0, text
    assert f"note     no owner is running; start one with `roundtable start --root {project.resolve()}`" in text
    assert "codex: bridge round trip not tried" in text
    assert "ok       codex: " in text and "trusts this project" in text
    assert "ok       claude: the roundtable server is approved" in text
    assert "PROBLEM" not in text and text.rstrip().endswith("no problems found")
    assert re.search(r"ok       agent sessions run in (bwrap|landlock) \(.*default-deny", text), text
    assert re.search(r"ok       test runs run in (bwrap|landlock) \(", text), text


def test_codex_untrusted_and_claude_pending_are_problems(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    runner = CliRunner()
    for harness in ("codex", "claude"):
        runner.invoke(cli, ["connect", harness, "--agent", "implementer-1", "--root", str(project)])
    code, text = doctor(project)
    assert code == 1
    assert f"PROBLEM  codex: Codex does not trust {project.resolve()}, so it ignores .codex/config.toml" in text
    # The fixes keep the agent binding: following them as given keeps implementer-1.
    assert "fix: run `roundtable connect codex --agent implementer-1 --trust" in text
    assert "PROBLEM  claude: Claude Code keeps the roundtable server pending until it is approved" in text
    assert "fix: run `roundtable connect claude --agent implementer-1 --approve" in text
    assert "2 problem(s) found" in text
    for line in text.splitlines():
        if line.strip().startswith("fix: run `roundtable connect"):
            command = line.split("`")[1].split()[1:]
            done = runner.invoke(cli, command)
            assert done.exit_code == 0, done.output
    code, text = doctor(project)
    assert code == 0, text
    assert "codex: .codex/config.toml points at this project as implementer-1" in text
    assert "claude: .mcp.json points at this project as implementer-1" in text


def test_an_approval_claude_code_keeps_elsewhere_counts(project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    CliRunner().invoke(cli, ["connect", "claude", "--agent", "implementer-1", "--root", str(project)])
    legacy = {"projects": {str(project.resolve()): {"enabledMcpjsonServers": ["roundtable"]}}}
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / ".claude.json").write_text(json.dumps(legacy))
    code, text = doctor(project)
    assert code == 0 and "ok       claude: the roundtable server is approved" in text
    user = tmp_path / "home" / ".claude" / "settings.json"
    user.parent.mkdir()
    user.write_text(json.dumps({"disabledMcpjsonServers": ["roundtable"]}))
    code, text = doctor(project)
    assert code == 1 and "PROBLEM  claude: the roundtable server is disabled" in text


def test_a_missing_executable_is_a_problem(project: Path) -> None:
    connected(project)
    path = project / ".mcp.json"
    doc = json.loads(path.read_text())
    doc["mcpServers"]["roundtable"]["command"] = str(project / "gone" / "roundtable")
    path.write_text(json.dumps(doc))
    code, text = doctor(project)
    assert code == 1
    assert (
        f"PROBLEM  claude: .mcp.json starts a missing program: {project / 'gone' / 'roundtable'} does not exist" in text
    )
    assert "roundtable connect claude --agent implementer-1 --force" in text


def test_credentials_missing_or_empty(project: Path) -> None:
    connected(project)
    cred = credentials.credential_path(project, agent_id="implementer-1")
    cred.write_text("")
    code, text = doctor(project)
    assert code == 1 and "agent implementer-1's credential" in text and "is unreadable or empty" in text
    cred.unlink()
    code, text = doctor(project)  # the owner writes it on start: not a problem while none runs
    assert code == 0 and "is written when the owner starts" in text
    codex = project / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace('"implementer-1"', '"ghost-7"'))
    code, text = doctor(project)
    assert code == 1 and "the entry binds agent ghost-7, which is not configured" in text


def test_a_malformed_policy_is_a_problem(project: Path) -> None:
    policy = project / "POLICIES.ROUNDTABLE.md"
    policy.write_text(policy.read_text().replace("tests_required: true", "tests_required: maybe", 1))
    code, text = doctor(project)
    assert code == 1
    assert re.search(
        r"PROBLEM  POLICIES\.ROUNDTABLE\.md is invalid, so `roundtable start` refuses to run: "
        r"POLICIES\.ROUNDTABLE\.md:\d+: consensus\.default\.tests_required",
        text,
    )


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("nonsense", "mcp.http_address: expected host:port"),
        ("127.0.0.1:99999", "mcp.http_address: the port must be a number from 0 to 65535"),
    ],
)
def test_an_invalid_http_address_is_a_problem_with_its_line(project: Path, address: str, message: str) -> None:
    cfg = project / ".roundtable" / "config.yaml"
    cfg.write_text(cfg.read_text().replace('"127.0.0.1:7117"', f'"{address}"'))
    line = next(i for i, text in enumerate(cfg.read_text().splitlines(), 1) if address in text)
    code, text = doctor(project)
    assert code == 1 and f"PROBLEM  configuration is invalid: config.yaml:{line}: {message}" in text


def test_outside_git_and_before_init(tmp_path: Path) -> None:
    code, text = doctor(tmp_path)
    assert code == 1
    assert f"PROBLEM  {tmp_path} is not a git repository" in text
    assert f"fix: run `roundtable init --root {tmp_path}`" in text


async def _doctor_child(root: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "roundtable", "doctor", "--root", str(root), stdout=-1, stderr=-1, env=dict(os.environ)
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return int(proc.returncode or 0), (out + err).decode()


@pytest.mark.anyio
async def test_with_an_owner_each_bridge_lists_the_tools(project: Path) -> None:
    await asyncio.to_thread(connected, project)  # connect runs its own event loop
    port = int(re.findall(r'127\.0\.0\.1:(\d+)"', (project / ".roundtable/config.yaml").read_text())[0])
    async with Owner(project, http_address=f"127.0.0.1:{port}", socket=False, chair=False) as owner:
        tools = await owner.runtime.call("table.get_state", {})  # the owner answers
        assert tools is not None
        code, text = await _doctor_child(project)
        assert code == 0, text
        counts = re.findall(r"ok       (codex|claude): the bridge answered: (\d+) tools", text)
        assert [h for h, _ in counts] == ["codex", "claude"] and all(int(n) >= 12 for _, n in counts)
        # A credential the owner does not know: the round trip fails with the bridge's own words.
        credentials.credential_path(project, agent_id="implementer-1").write_text("rttok_not-a-real-token\n")
        code, text = await _doctor_child(project)
    assert code == 1
    assert re.search(r"PROBLEM  claude: the bridge Claude Code would start failed: .*credential", text), text


def test_a_port_held_by_another_program_is_one_problem(project: Path) -> None:
    """Something that is not a roundtable owner answers at the project's address: one PROBLEM
    (what answers there), not that and "port … is used by another program" besides."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        set_http_address(project, port)
        _code, text = doctor(project)
    finally:
        server.shutdown()
        server.server_close()
    about_port = [line for line in text.splitlines() if f"127.0.0.1:{port}" in line and line.startswith("PROBLEM")]
    assert len(about_port) == 1, text
    assert "something that is not a roundtable owner answers" in about_port[0]
