"""Adapters: how to start or resume each agent CLI, and the MCP configuration it needs (§8.3).

A plan is an argv list (never a shell string), the session draft to record and the files to
write into the session-private home so the harness finds Roundtable's MCP server. Every
harness configuration points at `roundtable mcp stdio --socket <session socket>`; the bridge
reads the capability token from `ROUNDTABLE_MCP_TOKEN` in its environment, so no token is ever
written to a file or put on a command line.

`connect_files` renders the project-local configuration that `roundtable connect` writes for a
harness the user runs by hand (no socket, the shared loopback endpoint).

Besides the configured adapters there is one built-in, `scripted`: the SDK-based scripted agent
shipped with roundtable (`python -m roundtable.agents.scripted`), used by the demo and tests.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roundtable.config import AdapterConfig, Config
from roundtable.errors import ValidationError

SCRIPTED = "scripted"
SCRIPTED_ADAPTER = AdapterConfig(
    command=f"{sys.executable} -m roundtable.agents.scripted",
    supports_resume=False,
    resume_pattern="",
    supports_mcp=True,
    supports_readonly_workspace=True,
    captures_session_id=False,
)


@dataclass(frozen=True)
class Capabilities:
    supports_resume: bool
    supports_mcp: bool
    supports_readonly_workspace: bool
    captures_session_id: bool


@dataclass(frozen=True)
class Plan:
    """What to run for one session: argv (no shell), status, metadata and files to write."""

    adapter: str
    argv: list[str]
    status: str
    resume_command: str
    metadata: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)  # path relative to the private home → text
    env: dict[str, str] = field(default_factory=dict)  # extra non-secret variables (HOME-relative dirs)


def registry(config: Config) -> dict[str, AdapterConfig]:
    """Every adapter by name: the configured ones plus `scripted`."""
    adapters = dict(config.adapters)
    adapters.setdefault(SCRIPTED, SCRIPTED_ADAPTER)
    return dict(sorted(adapters.items()))


def get(config: Config, name: str) -> AdapterConfig:
    adapter = registry(config).get(name)
    if adapter is None:
        raise ValidationError(f"unknown adapter {name}")
    return adapter


def capabilities(adapter: AdapterConfig) -> Capabilities:
    return Capabilities(
        adapter.supports_resume, adapter.supports_mcp, adapter.supports_readonly_workspace, adapter.captures_session_id
    )


def roundtable_executable() -> list[str]:
    """The argv prefix that runs this roundtable: the console script when installed beside
    the interpreter, else `python -m roundtable`."""
    script = Path(sys.executable).with_name("roundtable")
    if script.exists():
        return [str(script)]
    found = shutil.which("roundtable")
    return [found] if found else [sys.executable, "-m", "roundtable"]


def bridge_argv(socket_path: str, root: str = "") -> list[str]:
    """`roundtable mcp stdio [--root R] --socket S`: the token comes from the environment."""
    root_args = ["--root", root] if root else []
    return [*roundtable_executable(), "mcp", "stdio", *root_args, "--socket", socket_path]


def _check_required(session_id: str, agent_id: str, run_id: str, cwd: str) -> None:
    if not all(v.strip() for v in (session_id, agent_id, run_id, cwd)):
        raise ValidationError("session_id, agent_id, run_id, and working_directory are required")


def prompt_for(agent_id: str, role: str, run_id: str, task_id: str, proposal_id: str) -> str:
    """The standing instruction given to a launched harness (no secrets in it)."""
    target = f"task {task_id}" + (f", proposal {proposal_id}" if proposal_id else "")
    return (
        f"You are {agent_id}, the {role} of Roundtable run {run_id}, working on {target}. "
        "Use only the roundtable MCP tools. Request a turn with agent_turn_request, wait for "
        "agent.turn_scheduled with table_watch (wait_ms), call agent_turn_start, claim what you "
        "read, do your role's work, then agent_turn_complete."
    )


def _harness_argv(name: str, command: str, model: str, prompt: str) -> list[str]:
    """Adapter-specific non-interactive invocation."""
    base = shlex.split(command) or [name]
    model_args = ["--model", model] if model and model != "default" else []
    if name == "codex":
        return [*base, "exec", "--skip-git-repo-check", *model_args, prompt]
    if name == "claude":
        return [*base, "-p", prompt, "--mcp-config", ".mcp.json", "--strict-mcp-config", *model_args]
    if name == "gemini":
        return [*base, *model_args, "-p", prompt]
    if name == "opencode":
        return [*base, "run", *model_args, prompt]
    if name == SCRIPTED:
        return base
    # generic: the configured command as is (the spec's argv rule: --model/--prompt only for
    # non-generic adapters).
    if name == "generic":
        return base
    return [*base, *model_args, "--prompt", prompt]


def harness_files(name: str, socket_path: str, root: str = "") -> tuple[dict[str, str], dict[str, str]]:
    """(files relative to the private home, env pointing the harness at them) for `name`."""
    argv = bridge_argv(socket_path, root)
    forwarded = ["ROUNDTABLE_MCP_TOKEN", "ROUNDTABLE_MCP_SOCKET"]
    if name == "codex":
        text = _codex_toml(argv[0], argv[1:], env_vars=forwarded)
        return {".codex/config.toml": text}, {"CODEX_HOME": ".codex"}
    if name == "claude":
        servers = {"mcpServers": {"roundtable": {"type": "stdio", "command": argv[0], "args": argv[1:]}}}
        return {".mcp.json": json.dumps(servers, indent=2) + "\n"}, {}
    if name == "gemini":
        servers = {"mcpServers": {"roundtable": {"command": argv[0], "args": argv[1:]}}}
        return {".gemini/settings.json": json.dumps(servers, indent=2) + "\n"}, {}
    if name == "opencode":
        conf = {
            "$schema": "https://opencode.ai/config.json",
            "mcp": {"roundtable": {"type": "local", "command": argv, "enabled": True}},
        }
        return {".config/opencode/opencode.json": json.dumps(conf, indent=2) + "\n"}, {"XDG_CONFIG_HOME": ".config"}
    return {}, {}


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _codex_toml(command: str, args: list[str], env_vars: list[str] | None = None) -> str:
    lines = [
        "# Written by roundtable. No secret here: the bridge reads its credential from .roundtable/credentials/"
        " (a supervised session's from its environment).",
        "[mcp_servers.roundtable]",
        f"command = {_toml_str(command)}",
        "args = [" + ", ".join(_toml_str(a) for a in args) + "]",
    ]
    if env_vars:
        lines.append("env_vars = [" + ", ".join(_toml_str(v) for v in env_vars) + "]")
    return "\n".join(lines) + "\n"


def start_plan(
    config: Config,
    name: str,
    *,
    session_id: str,
    agent_id: str,
    run_id: str,
    working_directory: str,
    role: str = "",
    task_id: str = "",
    proposal_id: str = "",
    model: str = "",
    socket_path: str = "",
    external_session_id: str = "",
) -> Plan:
    """The plan to start a fresh session of adapter `name`."""
    _check_required(session_id, agent_id, run_id, working_directory)
    adapter = get(config, name)
    prompt = prompt_for(agent_id, role, run_id, task_id, proposal_id)
    argv = _harness_argv(name, adapter.command or name, model, prompt)
    files, env = harness_files(name, socket_path, working_directory) if socket_path else ({}, {})
    from roundtable.services.sessions import resume_command

    return Plan(
        adapter=name,
        argv=argv,
        status="starting",
        resume_command=resume_command(adapter.resume_pattern, external_session_id),
        metadata={"mode": "start", "role": role, "task_id": task_id},
        files=files,
        env=env,
    )


def resume_plan(
    config: Config,
    name: str,
    *,
    session_id: str,
    agent_id: str,
    run_id: str,
    working_directory: str,
    external_session_id: str,
    briefing_md: str = "",
    role: str = "",
    task_id: str = "",
) -> Plan:
    """The plan to resume an earlier external session of adapter `name`."""
    adapter = get(config, name)
    if not adapter.supports_resume:
        raise ValidationError(f"adapter {name} does not support resume")
    if not external_session_id.strip():
        raise ValidationError("external_session_id is required for resume")
    _check_required(session_id, agent_id, run_id, working_directory)
    from roundtable.services.sessions import resume_command

    command = resume_command(adapter.resume_pattern, external_session_id)
    argv = command.split() if command else [adapter.command or name]
    return Plan(
        adapter=name,
        argv=argv,
        status="resuming",
        resume_command=command,
        metadata={"mode": "resume", "role": role, "task_id": task_id, "briefing_md": briefing_md},
    )


# --- `roundtable connect` ------------------------------------------------------------------------

CONNECT_TARGETS = ("codex", "claude", "cursor")


def connect_files(harness: str, root: Path, agent_id: str = "") -> dict[str, str]:
    """Project-local files (relative to root) that point `harness` at this project's bridge
    (bound to `agent_id` when given: the bridge then presents that agent's credential file)."""
    root = root.resolve()
    argv = [*roundtable_executable(), "mcp", "stdio", "--root", str(root), *(["--agent", agent_id] if agent_id else [])]
    if harness == "codex":
        return {".codex/config.toml": _codex_toml(argv[0], argv[1:])}
    if harness == "claude":
        doc = {"mcpServers": {"roundtable": {"type": "stdio", "command": argv[0], "args": argv[1:]}}}
        return {".mcp.json": json.dumps(doc, indent=2) + "\n"}
    if harness == "cursor":
        doc = {"mcpServers": {"roundtable": {"command": argv[0], "args": argv[1:]}}}
        return {".cursor/mcp.json": json.dumps(doc, indent=2) + "\n"}
    raise ValidationError(f"unknown harness {harness} (choose one of: {', '.join(CONNECT_TARGETS)})")


def configured_root(harness: str, root: Path) -> str | None:
    """The `--root` a harness's project-local config points at, or None when absent/unreadable."""
    rel = next(iter(connect_files(harness, root)))
    path = root / rel
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    args: list[str] = []
    try:
        if rel.endswith(".toml"):
            import tomllib

            entry = tomllib.loads(text).get("mcp_servers", {}).get("roundtable", {})
        else:
            entry = json.loads(text).get("mcpServers", {}).get("roundtable", {})
        args = [str(a) for a in entry.get("args", [])]
    except (ValueError, AttributeError):
        return ""
    if "--root" in args and args.index("--root") + 1 < len(args):
        return args[args.index("--root") + 1]
    return ""
