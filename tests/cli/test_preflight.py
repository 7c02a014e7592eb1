"""Preflight: `doctor`, the owner and every launch say which agent cannot run and why — its
harness's program missing, or no model credential in the owner's environment — and a harness's
own "not logged in" is reported as that missing credential. Real config, supervisor, processes."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from roundtable.cli import cli
from roundtable.config import load_config
from roundtable.errors import ValidationError
from roundtable.runtime import Runtime
from roundtable.services.sessions import preflight
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio
PYTHON = shlex.quote(sys.executable)


@pytest.fixture(autouse=True)
def private_homes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "codex").mkdir()
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CODEX_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _config(project: Path, change: object) -> None:
    path = project / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)  # type: ignore[operator]
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def _installed(data: dict) -> None:  # type: ignore[type-arg]
    """claude and codex 'installed' (this interpreter); the reviewer on gemini, whose model API the
    gateway does not serve."""
    data["adapters"]["claude"]["command"] = f"{PYTHON} -c pass"
    data["adapters"]["codex"]["command"] = f"{PYTHON} -c pass"
    data["agents"]["reviewers"]["adapter"] = "gemini"


def test_which_agent_cannot_run_and_why(project: Path, tmp_path: Path) -> None:
    _config(project, _installed)
    found = {u.adapter: u for u in preflight.unready_agents(load_config(project), environ={})}
    assert found["gemini"].problem.startswith("adapter gemini is not supported under roundtable's gateway: ")
    assert "would reach no model" in found["gemini"].problem and found["gemini"].agents == ("reviewer-1",)
    assert "adapter claude or codex" in found["gemini"].fix
    assert found["claude"].problem.startswith("no model credential in the owner's environment")
    assert "ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN" in found["claude"].problem
    assert set(found["claude"].agents) == {"architect-1", "security-1"}  # never chair-1 or the oracle
    assert "CODEX_API_KEY" in found["codex"].problem
    ready = preflight.unready_agents(load_config(project), environ={"ANTHROPIC_AUTH_TOKEN": "t", "CODEX_API_KEY": "k"})
    assert [u.adapter for u in ready] == ["gemini"]
    # The owner's gateway holds the credential: OpenAI's own variable serves Codex as well.
    assert "CODEX_API_KEY or OPENAI_API_KEY" in found["codex"].problem
    assert "its gateway adds it to the session's model requests" in found["codex"].problem
    ready = preflight.unready_agents(load_config(project), environ={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "k"})
    assert [u.adapter for u in ready] == ["gemini"]
    # A provider of the operator's own Codex configuration: the gateway takes its key from the
    # variable its env_key names (in the owner's environment), and from that one only.
    (tmp_path / "codex" / "config.toml").write_text(
        'model_provider = "mine"\n[model_providers.mine]\nbase_url = "http://x"\nenv_key = "MINE_KEY"\n'
    )
    assert [u.adapter for u in preflight.unready_agents(load_config(project), environ={"MINE_KEY": "k"})] == [
        "claude",
        "gemini",
    ]
    unready = {u.adapter: u for u in preflight.unready_agents(load_config(project), environ={"CODEX_API_KEY": "k"})}
    assert "(set MINE_KEY for the owner" in unready["codex"].problem
    (tmp_path / "codex" / "config.toml").write_text('model_provider = "nowhere"\n')
    unready = {u.adapter: u for u in preflight.unready_agents(load_config(project), environ={"CODEX_API_KEY": "k"})}
    assert "model_provider 'nowhere'" in unready["codex"].problem and "is not defined" in unready["codex"].problem


def test_doctor_names_them_a_problem_when_the_autopilot_launches(project: Path) -> None:
    runner = CliRunner()
    _config(project, _installed)
    manual = runner.invoke(cli, ["doctor", "--root", str(project)])
    assert "note     reviewer-1 cannot run (adapter gemini): adapter gemini is not supported under" in manual.output
    _config(project, lambda data: data["autopilot"].update(mode="auto"))
    auto = runner.invoke(cli, ["doctor", "--root", str(project)])
    assert auto.exit_code == 1
    assert "PROBLEM  architect-1, security-1 cannot run (adapter claude): no model credential" in auto.output


@pytest.mark.parametrize("harness", ["gemini", "opencode"])
async def test_a_harness_the_gateway_serves_no_model_api_for_is_refused_at_launch(project: Path, harness: str) -> None:
    """Installed and with the owner's Google key set, gemini would still reach no model: a
    session has no network but the gateway. The launch is refused with why, and recorded."""

    def installed(data: dict) -> None:  # type: ignore[type-arg]
        data["adapters"][harness]["command"] = f"{PYTHON} -c pass"

    _config(project, installed)
    runtime = await Runtime.open(project)
    try:
        _run_id, task_id = await make_task(runtime)
        sup = await start_supervisor(runtime, base_dir=project.parent)
        try:
            with pytest.raises(ValidationError, match=f"adapter {harness} is not supported under roundtable's gateway"):
                await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter=harness))
        finally:
            await sup.close()
        async with runtime.db.read() as r:
            reason = await r.scalar(
                "SELECT json_extract(payload_json, '$.reason') FROM events WHERE type = 'session.launch_refused'"
            )
            launched = await r.scalar("SELECT COUNT(*) FROM agent_sessions")
    finally:
        await runtime.close()
    assert "adapter claude or codex" in str(reason) and launched == 0


async def test_a_launch_without_a_credential_is_refused_and_not_logged_in_is_named(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    says = "import sys; print('Not logged in · Please run /login', flush=True); sys.exit(1)"

    def harness(data: dict) -> None:  # type: ignore[type-arg]
        data["adapters"]["claude"]["command"] = f"{PYTHON} -c {shlex.quote(says)}"
        data["agents"]["implementers"]["adapter"] = "claude"

    _config(project, harness)
    runtime = await Runtime.open(project)
    try:
        _run_id, task_id = await make_task(runtime)
        sup = await start_supervisor(runtime, base_dir=project.parent)
        try:
            with pytest.raises(
                ValidationError, match="implementer-1 cannot run \\(adapter claude\\): no model credential"
            ):
                await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id))
            monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-not-a-real-key")
            launched = await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id))
            await sup.wait(launched["session"]["id"], 30)
        finally:
            await sup.close()
        async with runtime.db.read() as r:
            reason = await r.scalar(
                "SELECT json_extract(payload_json, '$.reason') FROM events WHERE type = 'capability.revoked'"
            )
    finally:
        await runtime.close()
    assert reason == "no model credential in the owner's environment"
