"""Adapters: how to start or resume each agent CLI, and the MCP configuration it needs.

A plan is an argv list (never a shell string), the session draft to record and the files to
write into the session-private home so the harness finds Roundtable's MCP server. The prompt is
never an argv string (a long briefing would pass the kernel's argument limit, and argv is
visible to every local user): it is written to `PROMPT.md` in the private home, named by
`ROUNDTABLE_PROMPT_FILE`, and given on the harness's standard input; the argv carries at most a
one-line pointer to it (`PROMPT_POINTER`). Every
harness configuration points at `roundtable mcp stdio --socket <session socket>`; the bridge
reads the capability token from `ROUNDTABLE_MCP_TOKEN` in its environment, so no token is ever
written to a file or put on a command line.

`connect_edit` renders the project-local configuration that `roundtable connect` writes for a
harness the user runs by hand (no socket, the shared loopback endpoint).

Besides the configured adapters there is one built-in, `scripted`: the SDK-based scripted agent
shipped with roundtable (`python -m roundtable.demo.scripted`), used by the demo and tests.
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
from roundtable.domain import SessionStatus
from roundtable.errors import ValidationError

SCRIPTED = "scripted"
SCRIPTED_ADAPTER = AdapterConfig(
    command=f"{sys.executable} -m roundtable.demo.scripted",
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
    settings: dict[str, str] = field(default_factory=dict)  # extra non-secret variables, literal values
    # Names of the owner's environment variables the harness may take (model choices, never a key
    # or an endpoint); the supervisor copies those that are set. Values never enter the plan.
    inherit: tuple[str, ...] = ()
    # Names of the variables the supervisor sets to the session's gateway token (its only model
    # credential, revoked when the session ends).
    gateway_token: tuple[str, ...] = ()
    # The instruction for the harness: written to `PROMPT_FILE` and given on standard input.
    prompt: str = ""
    # The harness reads user messages on a standard input kept open (`input_message`): the prompt
    # first, then the operator's messages while it works; it ends once its input is closed.
    live_input: bool = False
    # Commands put on the session's PATH (`COMMANDS_DIR` in its private home): name → script.
    commands: dict[str, str] = field(default_factory=dict)


PROMPT_FILE = "PROMPT.md"
# Where a session's own commands live (`Plan.commands`), first on its PATH.
COMMANDS_DIR = "bin"
# `sessions.tools: shell`: the harnesses whose shell runs `rt` (others keep their MCP client).
SHELL_HARNESSES = ("claude", "codex")
SHELL_TOOLS = "shell"
# What a harness that wants a prompt argument is given instead of the prompt itself.
PROMPT_POINTER = (
    "Your instructions are on standard input and in the file named by the ROUNDTABLE_PROMPT_FILE "
    "environment variable (PROMPT.md in your home directory). Read them and follow them."
)


def input_message(text: str) -> bytes:
    """One user message on the standard input of a harness with `live_input` (Claude Code's
    `--input-format stream-json`), a JSON line."""
    line = json.dumps({"type": "user", "message": {"role": "user", "content": text}}, ensure_ascii=False)
    return (line + "\n").encode("utf-8")


def input_answer(
    request_id: str, *, allow: bool, updated_input: dict[str, Any] | None = None, message: str = ""
) -> bytes:
    """The answer to a harness's `control_request` can_use_tool (Claude Code's stream-json
    input): allowed (with the tool's input as it is to run: a question tool's input with its
    `answers`), or refused with `message`, which the model reads as the tool's error."""
    decision: dict[str, Any] = (
        {"behavior": "allow", "updatedInput": updated_input or {}}
        if allow
        else {"behavior": "deny", "message": message}
    )
    line = json.dumps(
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id, "response": decision},
        },
        ensure_ascii=False,
    )
    return (line + "\n").encode("utf-8")


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


def rt_script() -> str:
    """`rt`: `roundtable agent` under a short name, for a session whose tools are shell commands."""
    return "#!/bin/sh\nexec " + " ".join(shlex.quote(word) for word in roundtable_executable()) + ' agent "$@"\n'


def _check_required(session_id: str, agent_id: str, run_id: str, cwd: str) -> None:
    if not all(v.strip() for v in (session_id, agent_id, run_id, cwd)):
        raise ValidationError("session_id, agent_id, run_id, and working_directory are required")


# How a `shell` session is told where its tools are (the listing is `rt`'s, read when it runs it).
SHELL_TOOLS_NOTE = (
    "Roundtable's tools are commands in your shell: `rt` lists the ones you may call, `rt TOOL --help` "
    "explains one, `rt TOOL VALUE... [--NAME VALUE]` calls it (start with `rt table_watch`)."
)


def prompt_for(
    agent_id: str,
    role: str,
    run_id: str,
    task_id: str,
    proposal_id: str,
    briefing: str = "",
    workspace: str = "",
    shell: bool = False,
) -> str:
    """The standing instruction given to a launched harness (no secrets in it), with the
    briefing — why it was launched (the autopilot's reason) — when there is one. `shell`: its
    tools are `rt` commands, not MCP tools."""
    target = f"task {task_id}" + (f", proposal {proposal_id}" if proposal_id else "")
    who = f"You are {agent_id}, the {role} of Roundtable run {run_id}, working on {target}. "
    if workspace:
        # In a shell the session's own task is the default (its capability names it, so the
        # session's schema does not require task_id and `rt` takes no positional value for it:
        # `rt workspace_propose T-1` is refused as "too many values").
        propose = (
            "`rt workspace_propose --title TITLE --summary-md SUMMARY` (your session's task is the default; "
            "the title and summary are for a new proposal)"
            if shell
            else f"workspace_propose with task_id {task_id} (and a title and summary_md for a new proposal)"
        )
        prompt = (
            f"{who}Your working directory {workspace} is your own git worktree of the project: edit "
            "files there with your own tools (you may run the project's tests there too), then "
            f"call {propose} to submit the diff for review; only workspace_propose reaches the table. "
            "If the project moved under you, workspace_sync merges it in."
        ) + (f" {SHELL_TOOLS_NOTE}" if shell else "")
    elif shell:
        prompt = f"{who}{SHELL_TOOLS_NOTE} Work only through them."
    else:
        # The workflow is stated once, in the MCP server's instructions (read at `initialize`) and
        # the rulebook resource; the prompt says only who the agent is and where to look.
        prompt = (
            f"{who}Work only through the roundtable MCP tools; the server's instructions give the workflow "
            "(the rulebook is roundtable://doc/AGENTS.ROUNDTABLE.md)."
        )
    return f"{prompt}\n\n{briefing.strip()}" if briefing.strip() else prompt


# The owner's variables a harness may still take as they are: model choices, never a key or an
# endpoint (a session reaches its model only through roundtable's gateway, which adds the
# operator's credential itself: see `gateway_settings`).
HARNESS_ENV: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL"),
    "codex": (),
}
# The operator's model credentials, read by the owner's gateway (never by a session), by adapter.
OPERATOR_CREDENTIALS: dict[str, tuple[str, ...]] = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
}
# Harnesses that reach their model through an API the gateway does not serve (Gemini's; opencode's
# providers): a supervised session of one is refused (`preflight.adapter_problem`).
WITHOUT_GATEWAY_ROUTE = ("gemini", "opencode")
# The variable holding the session's gateway token, for Codex's model provider (`env_key`).
GATEWAY_TOKEN_ENV = "ROUNDTABLE_GATEWAY_TOKEN"
# Codex's model provider in a supervised session's private CODEX_HOME: the gateway.
CODEX_PROVIDER = "roundtable"


def gateway_settings(name: str, gateway_url: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """(literal variables pointing harness `name` at the gateway `gateway_url`, names of the
    variables that get the session's gateway token). Claude Code: `ANTHROPIC_BASE_URL` and the
    token as `ANTHROPIC_API_KEY`; Codex: its model provider (`_codex_toml`) reads the token from
    `GATEWAY_TOKEN_ENV`. Other harnesses reach no model API through the gateway."""
    if not gateway_url:
        return {}, ()
    if name == "claude":
        return {"ANTHROPIC_BASE_URL": f"{gateway_url}/anthropic"}, ("ANTHROPIC_API_KEY",)
    if name == "codex":
        return {}, (GATEWAY_TOKEN_ENV,)
    return {}, ()


def _claude_mcp_config(socket_path: str, root: str) -> str:
    """The session's MCP configuration as the JSON string `--mcp-config` accepts (a relative
    file name would be read from the working directory, the repository, not the private HOME)."""
    argv = bridge_argv(socket_path, root)
    return json.dumps({"mcpServers": {SERVER_NAME: {"type": "stdio", "command": argv[0], "args": argv[1:]}}})


# The native tools a harness gets in its workspace (Claude Code's names).
CLAUDE_NATIVE_TOOLS = ("Read", "Edit", "Write", "Bash", "Glob", "Grep")
# Claude Code's tool for asking the user a question (answered through `control_response`).
CLAUDE_QUESTION_TOOL = "AskUserQuestion"


def _harness_argv(
    name: str,
    command: str,
    model: str,
    mcp_config: str = "",
    workspace: str = "",
    max_budget_usd: float = 0.0,
    sandboxed: bool = False,
    shell: bool = False,
) -> list[str]:
    """Adapter-specific non-interactive invocation; the prompt comes on standard input. With a
    `workspace` the harness gets its own file and shell tools, limited to the workspace (its
    working directory); `shell` (roundtable's tools as `rt` commands) gives it its shell tool
    wherever it works."""
    base = shlex.split(command) or [name]
    model_args = ["--model", model] if model and model != "default" else []
    if name == "codex":
        # `exec` runs one turn without a terminal; `-` reads the prompt from standard input. The
        # MCP server comes from the private CODEX_HOME's config.toml (user-level, so no project
        # trust is needed). In a workspace it edits with its own tools: in its workspace-write
        # sandbox rooted there, or — inside roundtable's sandbox, which surrounds it and where a
        # nested one may not start — with its own sandbox off (the flag meant for that case).
        own = ["--dangerously-bypass-approvals-and-sandbox"] if sandboxed else ["--sandbox", "workspace-write"]
        native = ["-C", workspace, *own] if workspace else own if shell else []
        return [*base, "exec", "--skip-git-repo-check", "--json", *native, *model_args, "-"]
    if name == "claude":
        # `-p` without a prompt argument reads it from standard input and runs one turn without a
        # terminal (and without the workspace trust dialog). In -p mode a tool that needs
        # permission is refused, so the roundtable server's tools are allowed by name; the
        # built-in tools (shell, file edits) are switched off: the session works through the
        # capability only. stream-json + --verbose puts every tool call in the session log.
        # In a workspace the file and shell tools are on, allowed without asking (`-p` cannot
        # ask), and edits are accepted: the workspace is the working directory.
        # `--max-budget-usd` is Claude Code's own spending cap for the session (`limits`).
        # `--input-format stream-json`: its input is user messages as JSON lines, read while it
        # works (measured on 2.1.197: a message that arrives during a tool call reaches the model
        # with that call's result; one after the turn's result starts another turn), until the
        # input is closed. `--permission-prompt-tool stdio`: what it would ask a user it asks on
        # that stream (`control_request` can_use_tool), and waits for the answer there — its question
        # tool (AskUserQuestion, offered only so) for the operator's answer; any other tool the
        # supervisor refuses at once, as `-p` alone would.
        # `shell` outside a workspace: its shell alone (to run `rt`), in its private home.
        native = list(CLAUDE_NATIVE_TOOLS) if workspace else ["Bash"] if shell else []
        server = [] if shell else [f"mcp__{SERVER_NAME}"]
        budget = ["--max-budget-usd", f"{max_budget_usd:g}"] if max_budget_usd > 0 else []
        return [
            *base,
            "-p",
            *budget,
            *(["--mcp-config", mcp_config, "--strict-mcp-config"] if mcp_config else []),
            "--allowedTools",
            " ".join([*server, *native]),
            "--tools",
            " ".join([*native, CLAUDE_QUESTION_TOOL]),
            "--permission-prompt-tool",
            "stdio",
            *(["--permission-mode", "acceptEdits"] if workspace else []),
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            *model_args,
        ]
    if name == "gemini":
        return [*base, *model_args, "-p", PROMPT_POINTER]  # gemini adds standard input to -p
    if name == "opencode":
        return [*base, "run", *model_args, PROMPT_POINTER]
    if name == SCRIPTED:
        return base
    # generic: the configured command as is (the spec's argv rule: --model/--prompt only for
    # non-generic adapters).
    if name == "generic":
        return base
    return [*base, *model_args, "--prompt", PROMPT_POINTER]


# Literal settings a harness needs to be given roundtable's tools. Claude Code in `-p` mode starts
# its first turn once its MCP servers have had a few seconds to connect (MCP_CONNECT_TIMEOUT_MS,
# 5 s by default), then leaves a slower one "pending" for the whole session: a bridge started on
# a loaded machine left the session with no roundtable tools at all. Waiting for the servers
# (bounded by its MCP_TIMEOUT, 30 s) is what a supervised session needs. Its non-essential traffic
# (telemetry, update checks) is switched off: a session reaches only its gateway, which would
# refuse and record each such connection.
HARNESS_SETTINGS: dict[str, dict[str, str]] = {
    "claude": {"MCP_CONNECTION_NONBLOCKING": "0", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
}
# Codex's counterpart, in its private config.toml: no update check, analytics, apps or plugins
# (each reached out to github.com or chatgpt.com at start).
CODEX_QUIET: dict[str, Any] = {
    "check_for_update_on_startup": False,
    "analytics": {"enabled": False},
    "features": {"apps": False, "plugins": False},
}

# A supervised Codex session's CODEX_HOME, in its private home. Not `.codex`: a session without a
# workspace works in that home, where Codex takes `<cwd>/.codex/config.toml` for an untrusted
# project's configuration and starts none of its MCP servers ("Untrusted project-local
# configuration is disabled"), so the planner, reviewer, tester and security had no roundtable tools.
CODEX_SESSION_HOME = ".codex-home"
# How long a supervised Codex session waits for roundtable's MCP server to start (seconds).
CODEX_SERVER_STARTUP_S = 60


def harness_files(
    name: str, socket_path: str, root: str = "", gateway_url: str = "", mcp: bool = True
) -> tuple[dict[str, str], dict[str, str]]:
    """(files relative to the private home, env pointing the harness at them) for `name`; with
    `gateway_url`, Codex's model provider is the gateway; without `mcp` (a `shell` session) no
    MCP server is configured."""
    argv = bridge_argv(socket_path, root)
    forwarded = ["ROUNDTABLE_MCP_TOKEN", "ROUNDTABLE_MCP_SOCKET"]
    if name == "codex":
        settings = codex_model_settings()
        if gateway_url:
            settings = {**settings, **CODEX_QUIET, **codex_gateway_provider(gateway_url)}
        if mcp:
            text = _codex_toml(argv[0], argv[1:], env_vars=forwarded, settings=settings, approve_tools=True)
        else:
            text = _codex_settings_toml(settings)
        return {f"{CODEX_SESSION_HOME}/config.toml": text}, {"CODEX_HOME": CODEX_SESSION_HOME}
    if not mcp:
        return {}, {}
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


def _codex_settings_toml(settings: dict[str, Any]) -> str:
    """A session's Codex configuration without an MCP server: its model and provider only."""
    import tomlkit

    return "# Written by roundtable: the model and its provider (roundtable's gateway).\n" + tomlkit.dumps(settings)


def _codex_toml(
    command: str,
    args: list[str],
    env_vars: list[str] | None = None,
    settings: dict[str, Any] | None = None,
    approve_tools: bool = False,
) -> str:
    lines = [
        "# Written by roundtable. No secret here: the bridge reads its credential from .roundtable/credentials/"
        " (a supervised session's from its environment).",
    ]
    if settings:
        import tomlkit

        lines += [
            "# The model (the operator's choice) and its provider (roundtable's gateway, when supervised):",
            tomlkit.dumps(settings).strip(),
        ]
    lines += [
        "[mcp_servers.roundtable]",
        f"command = {_toml_str(command)}",
        "args = [" + ", ".join(_toml_str(a) for a in args) + "]",
    ]
    if env_vars:
        lines.append("env_vars = [" + ", ".join(_toml_str(v) for v in env_vars) + "]")
    if approve_tools:
        # `codex exec` runs with approval policy "never", under which every MCP tool call not
        # marked approved is refused ("MCP tool call requires approval, but approval policy is
        # never"): a session outside a workspace (planner, reviewer, tester, security) could call
        # none of roundtable's write tools. The session's capability is what limits its tools, so
        # the server's tools are approved as a whole (measured with Codex 0.171: `approve` works,
        # `auto` and `prompt` are refused).
        lines.append('default_tools_approval_mode = "approve"')
        # Without `required` Codex starts its turn without a server that is slow to start (the
        # bridge on a loaded machine): the session ran with no roundtable tool at all. Required,
        # Codex waits for it (up to the timeout) and fails the session if it cannot start.
        lines += ["required = true", f"startup_timeout_sec = {CODEX_SERVER_STARTUP_S}"]
    return "\n".join(lines) + "\n"


# What in the operator's Codex configuration a supervised session takes: the model's name. Its
# providers (`model_provider`, `model_providers`, `openai_base_url`) are not taken: a session's one
# provider is the gateway (`codex_gateway_provider`); the owner's gateway follows the operator's
# provider instead (`codex_operator_upstream`).
CODEX_MODEL_KEYS = ("model",)
# The provider Codex has built in (OpenAI's API, keyed by CODEX_API_KEY / OPENAI_API_KEY).
CODEX_BUILTIN_PROVIDER = "openai"


@dataclass(frozen=True)
class CodexUpstream:
    """Where the operator's own Codex configuration sends its model requests, for the owner's
    gateway to forward a session's there: `base_url` as Codex takes it (it stands for `.../v1`;
    '' when the configuration names none) and the owner's variable holding its key — `env_key`
    None for the built-in provider's own (`OPERATOR_CREDENTIALS`), '' for a provider that names
    no key. `problem` says why the configuration cannot be followed ('' when it can)."""

    provider: str = CODEX_BUILTIN_PROVIDER
    base_url: str = ""
    env_key: str | None = None
    problem: str = ""


def codex_operator_upstream(home: Path | None = None) -> CodexUpstream:
    """The model provider the operator's `$CODEX_HOME/config.toml` selects (`model_provider`): a
    provider of its `model_providers` table with its `base_url` and `env_key`, else the built-in
    one with `openai_base_url` when set. No file, or one that cannot be parsed: the built-in."""
    import tomllib

    path = (home or codex_home()) / "config.toml"
    try:
        doc = tomllib.loads(_read_text(path) or "")
    except (ValidationError, ValueError):
        return CodexUpstream()
    name = doc.get("model_provider")
    providers = doc.get("model_providers")
    if not isinstance(name, str) or not name.strip() or name == CODEX_BUILTIN_PROVIDER:
        base = doc.get("openai_base_url")
        return CodexUpstream(base_url=base.strip() if isinstance(base, str) else "")
    entry = providers.get(name) if isinstance(providers, dict) else None
    if not isinstance(entry, dict):
        return CodexUpstream(
            name,
            problem=f"model_provider {name!r} of {path} is not defined under [model_providers.{name}] there "
            "(roundtable's gateway follows a provider defined with its base_url and env_key)",
        )
    base, key = entry.get("base_url"), entry.get("env_key")
    if not isinstance(base, str) or not base.strip():
        return CodexUpstream(name, problem=f"[model_providers.{name}] of {path} has no base_url")
    return CodexUpstream(name, base.strip(), key.strip() if isinstance(key, str) else "")


def operator_credentials(name: str, home: Path | None = None) -> tuple[str, ...]:
    """The owner's variables the gateway takes adapter `name`'s model key from, in order: Codex's
    those of the provider the operator's Codex configuration selects (its `env_key` alone, none
    when it names no key), else `OPERATOR_CREDENTIALS`."""
    if name == "codex":
        upstream = codex_operator_upstream(home)
        if upstream.env_key is not None:
            return (upstream.env_key,) if upstream.env_key else ()
    return OPERATOR_CREDENTIALS.get(name, ())


def codex_model_settings(home: Path | None = None) -> dict[str, Any]:
    """The operator's Codex model settings (`CODEX_MODEL_KEYS` of `$CODEX_HOME/config.toml`);
    empty when there is no such file or it cannot be parsed."""
    import tomllib

    try:
        text = _read_text((home or codex_home()) / "config.toml")
        doc = tomllib.loads(text or "")
    except (ValidationError, ValueError):
        return {}
    return {key: doc[key] for key in CODEX_MODEL_KEYS if isinstance(doc.get(key), str)}


def codex_gateway_provider(gateway_url: str) -> dict[str, Any]:
    """Codex's settings for a model provider that is the gateway (OpenAI's Responses API below
    `/openai/v1`), its key the session's gateway token."""
    return {
        "model_provider": CODEX_PROVIDER,
        "model_providers": {
            CODEX_PROVIDER: {
                "name": "roundtable gateway",
                "base_url": f"{gateway_url}/openai/v1",
                "wire_api": "responses",
                "env_key": GATEWAY_TOKEN_ENV,
            }
        },
    }


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
    briefing: str = "",
    workspace: str = "",
    sandboxed: bool = False,
    gateway_url: str = "",
) -> Plan:
    """The plan to start a fresh session of adapter `name`; `workspace` (the session's git
    worktree, its working directory) gives the harness its native tools there. `sandboxed`: the
    session runs inside roundtable's own sandbox (a harness's own sandbox is then switched off:
    nested, it may not start). `gateway_url` (`http://127.0.0.1:PORT`): where the session reaches
    roundtable's gateway, its model API (none without)."""
    _check_required(session_id, agent_id, run_id, working_directory)
    adapter = get(config, name)
    # `sessions.tools: shell`: roundtable's tools are `rt` in the harness's shell, no MCP server.
    shell = config.sessions.tools == SHELL_TOOLS and name in SHELL_HARNESSES and bool(socket_path)
    prompt = prompt_for(agent_id, role, run_id, task_id, proposal_id, briefing, workspace, shell=shell)
    use_mcp = bool(socket_path) and not shell
    mcp_config = _claude_mcp_config(socket_path, working_directory) if use_mcp and name == "claude" else ""
    argv = _harness_argv(
        name, adapter.command or name, model, mcp_config, workspace, config.limits.max_budget_usd, sandboxed, shell
    )
    files, env = (
        harness_files(name, socket_path, working_directory, gateway_url, mcp=not shell) if socket_path else ({}, {})
    )
    settings = dict(HARNESS_SETTINGS.get(name, {})) if socket_path else {}
    model_api, gateway_token = gateway_settings(name, gateway_url)
    settings.update(model_api)
    from roundtable.services.sessions.records import resume_command

    return Plan(
        adapter=name,
        argv=argv,
        status=SessionStatus.STARTING,
        resume_command=resume_command(adapter.resume_pattern, external_session_id),
        metadata={"mode": "start", "role": role, "task_id": task_id},
        files=files,
        env=env,
        settings=settings,
        inherit=HARNESS_ENV.get(name, ()),
        gateway_token=gateway_token,
        prompt=prompt,
        live_input=name == "claude",
        commands={"rt": rt_script()} if shell else {},
    )


# --- `roundtable connect` ------------------------------------------------------------------------

CONNECT_TARGETS = ("codex", "claude", "cursor")
# The kind of session a harness set up in its workspace names (`tools/roles.py`'s WORKSPACE).
WORKSPACE_TOOLS = "workspace"
SERVER_NAME = "roundtable"
TOKEN_ENV = "ROUNDTABLE_MCP_TOKEN"
CONNECT_PATHS = {"codex": ".codex/config.toml", "claude": ".mcp.json", "cursor": ".cursor/mcp.json"}
CLAUDE_SETTINGS = ".claude/settings.local.json"


@dataclass(frozen=True)
class ConnectEdit:
    """What `connect` does to one harness file: its new text and how the entry changed.

    `action` is `created` (no file), `added` (file without our entry), `replaced` (our entry
    differed; `previous` holds it) or `unchanged`."""

    rel: str
    text: str
    action: str
    previous: dict[str, Any] | None = None


def connect_entry(harness: str, root: Path, agent_id: str = "", tools: str = "") -> dict[str, Any]:
    """The `roundtable` server entry for `harness`: the bridge with absolute paths, bound to
    `agent_id` when given (the bridge then presents that agent's credential file), and naming the
    kind of session (`tools`: `workspace` for a harness set up in its workspace). Codex passes
    no environment to servers unless listed, so its entry forwards `ROUNDTABLE_MCP_TOKEN`."""
    if harness not in CONNECT_TARGETS:
        raise ValidationError(f"unknown harness {harness} (choose one of: {', '.join(CONNECT_TARGETS)})")
    root = root.resolve()
    argv = [*roundtable_executable(), "mcp", "stdio", "--root", str(root), *(["--agent", agent_id] if agent_id else [])]
    argv += ["--tools", tools] if tools else []
    if harness == "codex":
        return {"command": argv[0], "args": argv[1:], "env_vars": [TOKEN_ENV]}
    if harness == "claude":
        return {"type": "stdio", "command": argv[0], "args": argv[1:]}
    return {"command": argv[0], "args": argv[1:]}


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def _plain(value: Any) -> Any:
    """tomlkit items → plain Python values (for comparing and printing)."""
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _merge_toml(path: Path, text: str | None, entry: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """`text` with `[mcp_servers.roundtable]` set to `entry`; every other table, key and comment
    kept (tomlkit edits the document in place). Returns (new text, previous entry or None)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text or "")
    except TOMLKitError as exc:
        raise ValidationError(f"{path} is not valid TOML ({exc}); fix it, then run connect again") from None
    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise ValidationError(f"{path}: mcp_servers is not a table; fix it, then run connect again")
    previous = _plain(servers.get(SERVER_NAME))
    table = tomlkit.table()
    if previous is None and not text:
        table.comment("written by roundtable connect; no secret here (the bridge reads .roundtable/credentials/)")
    for key, value in entry.items():
        table[key] = value
    if isinstance(previous, dict):
        for key, value in previous.items():  # keep what the user added (timeouts, enabled, ...)
            if key not in entry:
                table[key] = value
    servers[SERVER_NAME] = table
    return tomlkit.dumps(doc), previous if isinstance(previous, dict) else None


def _merge_json(path: Path, text: str | None, entry: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """`text` with `mcpServers.roundtable` set to `entry`; other keys kept in their order."""
    try:
        doc = json.loads(text) if text and text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValidationError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); fix it, then run connect again"
        ) from None
    if not isinstance(doc, dict):
        raise ValidationError(f"{path} does not hold a JSON object; fix it, then run connect again")
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValidationError(f"{path}: mcpServers is not an object; fix it, then run connect again")
    previous = servers.get(SERVER_NAME)
    merged = dict(entry)
    if isinstance(previous, dict):
        merged.update({k: v for k, v in previous.items() if k not in entry})
    servers[SERVER_NAME] = merged
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n", previous if isinstance(previous, dict) else None


def connect_edit(
    harness: str, root: Path, agent_id: str = "", *, at: Path | None = None, tools: str = ""
) -> ConnectEdit:
    """How `roundtable connect` changes `harness`'s project file (in `at`, the agent's workspace,
    when given; else in the project; `tools` names the kind of session, `connect_entry`): only the
    `roundtable` entry is added or replaced; the user's other servers and settings stay. Raises
    `ValidationError` for a file it cannot parse (it is never overwritten)."""
    entry = connect_entry(harness, root, agent_id, tools)
    rel = CONNECT_PATHS[harness]
    path = (at or root).resolve() / rel
    text = _read_text(path)
    merge = _merge_toml if rel.endswith(".toml") else _merge_json
    new_text, previous = merge(path, text, entry)
    if text is None:
        action = "created"
    elif previous is None:
        action = "added"
    elif {k: previous.get(k) for k in entry} == entry:
        action, new_text = "unchanged", text
    else:
        action = "replaced"
    return ConnectEdit(rel, new_text, action, previous)


def configured_entry(harness: str, root: Path) -> dict[str, Any] | None:
    """The `roundtable` entry of `harness`'s project file: None when the file or the entry is
    absent; raises `ValidationError` when the file cannot be read or parsed."""
    path = root / CONNECT_PATHS[harness]
    text = _read_text(path)
    if text is None:
        return None
    try:
        if path.suffix == ".toml":
            import tomllib

            doc: Any = tomllib.loads(text)
            entry = doc.get("mcp_servers", {}).get(SERVER_NAME)
        else:
            doc = json.loads(text)
            entry = doc.get("mcpServers", {}).get(SERVER_NAME) if isinstance(doc, dict) else None
    except (ValueError, AttributeError) as exc:
        raise ValidationError(f"{path} cannot be parsed: {exc}") from None
    return entry if isinstance(entry, dict) else None


def entry_option(entry: dict[str, Any], option: str) -> str:
    """The value after `option` (e.g. `--root`) in an entry's args ('' when absent)."""
    args = [str(a) for a in entry.get("args", []) if isinstance(a, str | int)]
    if option in args and args.index(option) + 1 < len(args):
        return args[args.index(option) + 1]
    return ""


# --- trust and approval: the step each harness needs besides its project file ----------------


def codex_home() -> Path:
    """Where Codex keeps its user configuration: `$CODEX_HOME`, else `~/.codex`."""
    import os

    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def codex_project(root: Path) -> Path:
    """The path Codex keys its trust on: the git repository's top level when `root` is inside
    one (Codex trusts a repository from its root, even when started in a subdirectory), else
    `root` itself."""
    import subprocess

    root = root.resolve()
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return root
    top = done.stdout.strip()
    return Path(top).resolve() if done.returncode == 0 and top else root


def codex_trusts(root: Path) -> bool:
    """Does the user's Codex configuration mark `root` (or its repository) trusted? Codex reads a
    project's `.codex/config.toml` only then."""
    import tomllib

    text = _read_text(codex_home() / "config.toml")
    if not text:
        return False
    try:
        projects = tomllib.loads(text).get("projects", {})
    except ValueError:
        return False
    if not isinstance(projects, dict):
        return False
    for key in {str(root.resolve()), str(codex_project(root))}:
        entry = projects.get(key)
        if isinstance(entry, dict) and entry.get("trust_level") == "trusted":
            return True
    return False


def codex_trust_snippet(root: Path) -> str:
    return f'[projects.{json.dumps(str(codex_project(root)))}]\ntrust_level = "trusted"'


def trust_codex(root: Path, *, dry_run: bool = False) -> tuple[Path, bool]:
    """Mark `root` trusted in the user's Codex configuration, keeping everything else in the
    file. Returns (file, whether it changed — or would, with `dry_run`, which only checks)."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    path = codex_home() / "config.toml"
    text = _read_text(path) or ""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ValidationError(f"{path} is not valid TOML ({exc}); fix it, then run connect again") from None
    if codex_trusts(root):
        return path, False
    if dry_run:
        return path, True
    projects = doc.get("projects")
    if projects is None:
        projects = tomlkit.table(is_super_table=True)
        doc["projects"] = projects
    elif not isinstance(projects, dict):
        raise ValidationError(f"{path}: projects is not a table; fix it, then run connect again")
    key = str(codex_project(root))
    entry = projects.get(key)
    if isinstance(entry, dict):
        entry["trust_level"] = "trusted"
    else:
        table = tomlkit.table()
        table["trust_level"] = "trusted"
        projects[key] = table
    _write_keeping_mode(path, tomlkit.dumps(doc))
    return path, True


def _claude_settings(root: Path) -> tuple[Path, dict[str, Any]]:
    path = root.resolve() / CLAUDE_SETTINGS
    text = _read_text(path)
    try:
        doc = json.loads(text) if text and text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise ValidationError(f"{path} does not hold a JSON object")
    return path, doc


def claude_approval(root: Path) -> str:
    """Whether Claude Code will start the project's `roundtable` server: `approved`,
    `disabled` (listed in disabledMcpjsonServers) or `pending`. Reads where Claude Code keeps the
    choice: the project's `.claude/settings.local.json` (where its own approval dialog and
    `connect --approve` write) and `.claude/settings.json`, the user's `~/.claude/settings.json`,
    and the older per-project entry in `~/.claude.json`."""
    root = root.resolve()
    documents: list[Any] = []
    for path in (root / CLAUDE_SETTINGS, root / ".claude/settings.json", Path.home() / ".claude/settings.json"):
        try:
            text = _read_text(path)
            documents.append(json.loads(text) if text else {})
        except (ValidationError, ValueError):
            continue
    try:
        legacy = json.loads(_read_text(Path.home() / ".claude.json") or "{}")
        projects = legacy.get("projects") if isinstance(legacy, dict) else None
        if isinstance(projects, dict):
            documents.append(projects.get(str(root)))
    except (ValidationError, ValueError):
        pass
    verdict = "pending"
    for doc in documents:
        if not isinstance(doc, dict):
            continue
        if SERVER_NAME in (doc.get("disabledMcpjsonServers") or []):
            return "disabled"
        if doc.get("enableAllProjectMcpServers") is True or SERVER_NAME in (doc.get("enabledMcpjsonServers") or []):
            verdict = "approved"
    return verdict


def approve_claude(root: Path, *, dry_run: bool = False) -> tuple[Path, bool]:
    """Approve the project's `roundtable` server for Claude Code in
    `.claude/settings.local.json` (other settings kept; removed from a disabled list)."""
    path, doc = _claude_settings(root)
    enabled = doc.get("enabledMcpjsonServers")
    disabled = doc.get("disabledMcpjsonServers")
    if enabled is not None and not isinstance(enabled, list):
        raise ValidationError(f"{path}: enabledMcpjsonServers is not a list")
    changed = False
    if isinstance(disabled, list) and SERVER_NAME in disabled:
        doc["disabledMcpjsonServers"] = [s for s in disabled if s != SERVER_NAME]
        changed = True
    if SERVER_NAME not in (enabled or []):
        doc["enabledMcpjsonServers"] = [*(enabled or []), SERVER_NAME]
        changed = True
    if changed and not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_keeping_mode(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return path, changed


def _write_keeping_mode(path: Path, text: str, new_mode: int = 0o600) -> None:
    """Replace `path` atomically, keeping its permission bits (`new_mode` for a new file; 0600 by
    default: user configuration may hold the user's own secrets)."""
    import os
    import stat
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = new_mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_connect_edit(root: Path, edit: ConnectEdit) -> Path:
    """Write `edit` (nothing for `unchanged`); returns the file's path."""
    path = root.resolve() / edit.rel
    if edit.action != "unchanged":
        _write_keeping_mode(path, edit.text, new_mode=0o644)  # project files, often checked in
    return path
