"""Session records, the resume briefing, adapter plans and connect/doctor."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable.cli import cli
from roundtable.errors import NotFound, ValidationError
from roundtable.runtime import Runtime
from roundtable.services.sessions import adapters, briefing
from roundtable.services.sessions import records as sessions
from tests.sessions.helpers import make_task
from tests.support.configs import mcp_sessions

pytestmark = pytest.mark.anyio


def draft(**kw: str) -> sessions.SessionDraft:
    base = {"id": "S-1", "agent_id": "implementer-1", "run_id": "R", "adapter": "codex", "working_directory": "/w"}
    base.update(kw)
    return sessions.SessionDraft(**base)  # type: ignore[arg-type]


async def test_register_heartbeat_end_and_lookup(runtime: Runtime) -> None:
    async with runtime.db.write() as tx:
        first = await sessions.register(tx, draft(model="m", external_session_id="x"))
        again = await sessions.register(tx, draft(status="paused"))
    assert again.started_at == first.started_at
    assert again.model == "" and again.external_session_id == "" and again.status == "paused"
    async with runtime.db.write() as tx:
        beat = await sessions.heartbeat(tx, sessions.HeartbeatArgs(session_id="S-1", external_session_id="ext"))
        assert beat.status == "paused" and beat.external_session_id == "ext"
        ended = await sessions.end(tx, "S-1")
        assert ended.status == "ended" and ended.ended_at
        await sessions.register(tx, draft(id="S-2", status="active"))
        with pytest.raises(NotFound):
            await sessions.heartbeat(tx, sessions.HeartbeatArgs(session_id="S-404"))
        with pytest.raises(ValidationError, match="id, agent, run, adapter, and cwd are required"):
            await sessions.register(tx, draft(adapter=" "))
    async with runtime.db.read() as r:
        current = await sessions.for_agent(r, "implementer-1")
        events = await sessions.session_events(r, "S-1")
    assert current is not None and current.id == "S-2"
    assert [e["event_type"] for e in events] == ["registered", "registered", "heartbeat", "ended"]


async def test_briefing_layout(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    async with runtime.db.write() as tx:
        session = await sessions.register(tx, draft(run_id=run_id, external_session_id="ext-1"))
    async with runtime.db.read() as r:
        text = (await briefing.build(r, session)).markdown()
    lines = text.splitlines()
    assert lines[0] == "# Roundtable Resume Briefing"
    assert "You are resuming as implementer-1." in lines
    assert f"Run: {run_id}" in lines and "External session: ext-1" in lines
    assert lines[lines.index(f"{task_id}, titled:") + 3] == "Add mul"  # quoted, inside a fence
    assert lines[lines.index("Your active claims:") + 1] == "- none"
    assert lines[-1] == f"Resume task {task_id} (its title is quoted above)."


def test_start_and_resume_plans() -> None:
    config = mcp_sessions()
    plan = adapters.start_plan(
        config,
        "codex",
        session_id="S",
        agent_id="implementer-1",
        run_id="R",
        working_directory="/w",
        role="implementer",
        task_id="T",
        socket_path="/tmp/rt-x/s.sock",
    )
    assert plan.argv[:3] == ["codex", "exec", "--skip-git-repo-check"] and plan.status == "starting"
    assert plan.metadata == {"mode": "start", "role": "implementer", "task_id": "T"}
    toml = tomllib.loads(plan.files[".codex-home/config.toml"])
    entry = toml["mcp_servers"]["roundtable"]
    assert entry["args"][-4:] == ["--root", "/w", "--socket", "/tmp/rt-x/s.sock"]
    assert plan.env == {"CODEX_HOME": ".codex-home"}
    claude = adapters.start_plan(
        config, "claude", session_id="S", agent_id="a", run_id="R", working_directory="/w", socket_path="/s"
    )
    assert json.loads(claude.files[".mcp.json"])["mcpServers"]["roundtable"]["args"][-2:] == ["--socket", "/s"]
    generic = adapters.start_plan(
        config, "generic", session_id="S", agent_id="a", run_id="R", working_directory="/w", model="m"
    )
    assert generic.argv == ["sh"]
    with pytest.raises(ValidationError, match="session_id, agent_id, run_id, and working_directory are required"):
        adapters.start_plan(config, "codex", session_id="", agent_id="a", run_id="R", working_directory="/w")
    for name in ("codex", "claude", "gemini", "opencode"):
        files, _env = adapters.harness_files(name, "/s")
        assert files and not any("rtcap_" in text for text in files.values())
    assert adapters.capabilities(adapters.get(config, "scripted")).supports_mcp


def test_connect_writes_once_and_doctor_checks(project: Path) -> None:
    runner = CliRunner()
    root = str(project)
    out = runner.invoke(cli, ["connect", "claude", "--root", root])
    assert out.exit_code == 0, out.output
    doc = json.loads((project / ".mcp.json").read_text())
    args = doc["mcpServers"]["roundtable"]["args"]
    assert args == ["mcp", "stdio", "--root", str(project.resolve())]
    assert Path(doc["mcpServers"]["roundtable"]["command"]).is_absolute()
    (project / ".mcp.json").write_text(
        '{"mcpServers": {"roundtable": {"command": "x", "args": ["--root", "/elsewhere"]}}}'
    )
    refused = runner.invoke(cli, ["connect", "claude", "--root", root])
    assert refused.exit_code == 1 and "--force" in refused.output
    assert "/elsewhere" in (project / ".mcp.json").read_text()
    doctor = runner.invoke(cli, ["doctor", "--root", root])
    assert doctor.exit_code == 1
    assert "claude: .mcp.json points at /elsewhere" in doctor.output
    assert "fix: run `roundtable connect claude --force" in doctor.output
    forced = runner.invoke(cli, ["connect", "claude", "--force", "--root", root])
    assert forced.exit_code == 0
    for harness, rel in (("codex", ".codex/config.toml"), ("cursor", ".cursor/mcp.json")):
        assert runner.invoke(cli, ["connect", harness, "--root", root]).exit_code == 0
        assert (project / rel).is_file()
    doctor = runner.invoke(cli, ["doctor", "--root", root])
    assert "claude: .mcp.json points at this project" in doctor.output
    assert "codex: .codex/config.toml points at this project" in doctor.output


def test_sessions_cli(project: Path) -> None:
    runner = CliRunner()
    root = ["--root", str(project)]
    out = runner.invoke(
        cli,
        [
            "sessions",
            "register",
            "--id",
            "S-9",
            "--agent",
            "reviewer-1",
            "--run",
            "R",
            "--adapter",
            "claude",
            "--cwd",
            "/w",
            "--external-session-id",
            "e1",
            *root,
        ],
    )
    assert out.exit_code == 0, out.output
    assert out.output.strip() == "S-9 reviewer-1 active claude --resume e1"
    missing = runner.invoke(cli, ["sessions", "register", "--id", "S-8", *root])
    assert missing.exit_code == 1 and "id, agent, run, adapter, and cwd are required" in missing.output
    listed = runner.invoke(cli, ["sessions", *root])
    assert listed.output.strip() == "S-9 reviewer-1 active claude claude --resume e1"
    assert runner.invoke(cli, ["sessions", "list", *root]).output == listed.output
    ended = runner.invoke(cli, ["sessions", "end", "--session", "S-9", *root])
    assert ended.output.startswith("S-9 ended ")
    shown = runner.invoke(cli, ["sessions", "show", "S-9", "--json", *root])
    assert json.loads(shown.output)["session"]["status"] == "ended"
    brief = runner.invoke(cli, ["resume", "--agent", "reviewer-1", *root])
    assert brief.output.startswith("# Roundtable Resume Briefing\n")
    none = runner.invoke(cli, ["resume", "--agent", "tester-1", *root])
    assert none.exit_code == 1 and "no agent session found for tester-1" in none.output
    launch = runner.invoke(cli, ["sessions", "launch", "--agent", "implementer-1", "--task", "T", *root])
    assert launch.exit_code == 1 and "no owner is running" in launch.output
