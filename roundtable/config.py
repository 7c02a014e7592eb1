"""`.roundtable/config.yaml` → frozen dataclasses, with validation that names the key and line.

The file is full YAML read with `yaml.safe_load` semantics (through `yaml.compose`, so every key
keeps its line number). Parsing starts from the built-in defaults and overlays what the file
sets; unknown keys, wrong types and invalid values are `ConfigError`s such as
`config.yaml:12: mcp.tool_names: must be one of underscore, dotted (got 'camel')`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from roundtable.errors import ConfigError

CONFIG_RELATIVE_PATH = Path(".roundtable") / "config.yaml"
MAX_POOL_COUNT = 1000

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|m|h)?\s*$")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    None: 1.0,
}


def parse_duration(value: object) -> float:
    """Seconds from a number or a string with a unit (`500ms`, `2s`, `1m`, `1m30s`)."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 2s or 500ms")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("must not be negative")
        return float(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a duration such as 2s or 500ms")
    total = 0.0
    for part in re.findall(r"\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s|m|h)?", value.strip()):
        match = _DURATION_RE.match(part)
        if not match:
            raise ValueError(f"invalid duration {value!r}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if "".join(re.findall(r"\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s|m|h)?", value.strip())).replace(
        " ", ""
    ) != value.strip().replace(" ", ""):
        raise ValueError(f"invalid duration {value!r}")
    return total


@dataclass(frozen=True)
class StorageConfig:
    sqlite_path: str = ".roundtable/roundtable.db"
    wal: bool = True


@dataclass(frozen=True)
class McpConfig:
    transport: str = "unix"
    socket_path: str = ".roundtable/mcp/roundtable.sock"
    http_address: str = "127.0.0.1:7117"
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tool_names: str = "underscore"
    # `token` (default): every HTTP request needs a bearer credential, loopback included.
    # `none`: the explicit opt-out — requests without one are served as anonymous (read-only tools).
    auth: str = "token"
    # Accepted for older configs; per-principal tokens are now the default behaviour.
    require_tokens: bool = False
    socket_max_request_bytes: int = 1024 * 1024
    socket_read_timeout: float = 10.0
    socket_max_connections: int = 256
    http_max_body_bytes: int = 4 * 1024 * 1024


@dataclass(frozen=True)
class ChairConfig:
    tick_interval: float = 1.0
    turn_start_timeout: float = 120.0
    turn_timeout: float = 1800.0


@dataclass(frozen=True)
class RepoConfig:
    max_read_bytes: int = 1024 * 1024
    max_search_matches: int = 1000


@dataclass(frozen=True)
class RoleConfig:
    role: str
    adapter: str
    model: str = "default"


@dataclass(frozen=True)
class PoolConfig:
    count: int
    adapter: str
    model: str = "default"


@dataclass(frozen=True)
class AgentsConfig:
    chair: RoleConfig = RoleConfig("Chair", "claude")
    architect: RoleConfig = RoleConfig("Architect", "claude")
    implementers: PoolConfig = PoolConfig(2, "codex")
    reviewers: PoolConfig = PoolConfig(1, "gemini")
    tester: RoleConfig = RoleConfig("Tester", "codex")
    security: RoleConfig = RoleConfig("Security", "claude")
    memory_oracle: RoleConfig = RoleConfig("MemoryOracle", "claude")


@dataclass(frozen=True)
class AdapterConfig:
    command: str = ""
    supports_resume: bool = False
    resume_pattern: str = ""
    supports_mcp: bool = False
    supports_readonly_workspace: bool = False
    captures_session_id: bool = False


BUILTIN_ADAPTERS: dict[str, AdapterConfig] = {
    "codex": AdapterConfig("codex", True, "codex resume {{external_session_id}}", True, True, True),
    "claude": AdapterConfig("claude", True, "claude --resume {{external_session_id}}", True, True, True),
    "gemini": AdapterConfig("gemini", True, "gemini resume {{external_session_id}}", True, True, True),
    "opencode": AdapterConfig("opencode", False, "", True, True, False),
    "generic": AdapterConfig("sh", False, "", False, True, False),
}


AUTOPILOT_MODES = ("manual", "auto")


@dataclass(frozen=True)
class AutopilotConfig:
    """How the dispatcher launches agents for the work (issue 15). `manual` never launches."""

    mode: str = "manual"
    # Concurrent supervised sessions overall, and per role.
    max_sessions: int = 4
    max_sessions_per_role: int = 2
    # Launches per task or review before the task is blocked with the reason.
    max_attempts: int = 3
    # The first retry waits this long; each further attempt doubles it.
    retry_backoff_seconds: float = 5.0
    # The autopilot stops after this many failed sessions in a row.
    max_consecutive_failures: int = 5
    # Dispatches per run; 0 means unlimited.
    max_iterations: int = 0
    # The agent that turns a goal into tasks; '' = the first enabled agent with role architect.
    planner_agent: str = ""


@dataclass(frozen=True)
class TuiConfig:
    """Key overrides for the console: binding id → key (e.g. `approve: ctrl+a`)."""

    bindings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Config:
    version: int = 1
    project_name: str = "Roundtable"
    storage: StorageConfig = StorageConfig()
    mcp: McpConfig = McpConfig()
    chair: ChairConfig = ChairConfig()
    repo: RepoConfig = RepoConfig()
    agents: AgentsConfig = AgentsConfig()
    adapters: dict[str, AdapterConfig] = field(default_factory=lambda: dict(BUILTIN_ADAPTERS))
    tui: TuiConfig = TuiConfig()
    autopilot: AutopilotConfig = AutopilotConfig()

    def sqlite_path(self, root: Path) -> Path:
        """`<root>/<storage.sqlite_path>`; loading has checked that it stays inside `.roundtable/`."""
        return Path(root) / self.storage.sqlite_path

    def socket_path(self, root: Path) -> Path:
        p = Path(self.mcp.socket_path)
        return p if p.is_absolute() else Path(root) / p

    def http_url(self) -> str:
        scheme = "https" if self.mcp.tls_cert_file and self.mcp.tls_key_file else "http"
        return f"{scheme}://{self.mcp.http_address}/mcp"


# --- loading -------------------------------------------------------------------------------

_SECTION_TYPES: dict[str, type] = {
    "storage": StorageConfig,
    "mcp": McpConfig,
    "chair": ChairConfig,
    "repo": RepoConfig,
    "autopilot": AutopilotConfig,
}
_DURATION_KEYS = {
    ("chair", "tick_interval"),
    ("chair", "turn_start_timeout"),
    ("chair", "turn_timeout"),
    ("mcp", "socket_read_timeout"),
}
_CHOICES = {
    ("mcp", "tool_names"): ("underscore", "dotted"),
    ("mcp", "auth"): ("token", "none"),
    ("autopilot", "mode"): AUTOPILOT_MODES,
}
_POSITIVE_INT_KEYS = {
    ("mcp", "socket_max_request_bytes"),
    ("mcp", "socket_max_connections"),
    ("mcp", "http_max_body_bytes"),
    ("repo", "max_read_bytes"),
    ("repo", "max_search_matches"),
    ("autopilot", "max_sessions"),
    ("autopilot", "max_sessions_per_role"),
    ("autopilot", "max_attempts"),
    ("autopilot", "max_consecutive_failures"),
}
_NON_NEGATIVE_KEYS = {("autopilot", "max_iterations"), ("autopilot", "retry_backoff_seconds")}
# Pool sizes: (section, key) → inclusive upper bound.
_COUNT_KEYS = {("implementers", "count"): MAX_POOL_COUNT, ("reviewers", "count"): MAX_POOL_COUNT}
SUPPORTED_VERSION = 1
_ROLE_SECTIONS = ("chair", "architect", "tester", "security", "memory_oracle")
_POOL_SECTIONS = ("implementers", "reviewers")
_AGENT_ORDER = ("chair", "architect", "implementers", "reviewers", "tester", "security", "memory_oracle")


def address_problem(address: str) -> str:
    """Why `address` is not `host:port`, `[v6]:port` or `:port` with a port from 0 to 65535
    ('' when it is). The same syntax the HTTP listener accepts; checked at load so the error
    names the file and the line instead of surfacing at `start`."""
    text = address.strip()
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or not text[end + 1 :].startswith(":"):
            return "expected [host]:port"
        port_text = text[end + 2 :]
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep or ":" in host:
            return "expected host:port, e.g. 127.0.0.1:7117"
        if any(c.isspace() for c in host):
            return "the host must not contain spaces"
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        return "the port must be a number from 0 to 65535"
    return ""


STATE_DIR_PREFIX = ".roundtable/"


def sqlite_path_problem(value: str) -> str:
    """Why `storage.sqlite_path` is refused ('' when accepted).

    The database must stay inside the project's private `.roundtable/` directory, given relative
    to the project root: it holds the hashes the credential proof is keyed by (a copy readable by
    others lets a program pose as this project's owner to its bridges), `.roundtable/` is created
    0700 and kept out of git, and a relative path keeps the project movable. An absolute path
    used to be silently re-rooted (`/etc/passwd` became `<root>/etc/passwd`); now it is an error."""
    import posixpath

    text = value.strip()
    if not text:
        return "must not be empty"
    if text.startswith("/") or "\\" in text:
        return f"must be a relative path inside {STATE_DIR_PREFIX}, e.g. .roundtable/roundtable.db"
    normal = posixpath.normpath(text)
    if not normal.startswith(STATE_DIR_PREFIX) or ".." in normal.split("/"):
        return f"must stay inside {STATE_DIR_PREFIX} (the project's private state directory)"
    return ""


_VALUE_CHECKS = {("mcp", "http_address"): address_problem, ("storage", "sqlite_path"): sqlite_path_problem}


class _Located:
    """A scalar or container from the YAML tree, with its line (1-based)."""

    __slots__ = ("line", "value")

    def __init__(self, value: Any, line: int) -> None:
        self.value = value
        self.line = line


def _to_located(node: yaml.Node, constructor: yaml.constructor.SafeConstructor) -> _Located:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping: dict[str, tuple[int, _Located]] = {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise ConfigError(f"config.yaml:{key_node.start_mark.line + 1}: keys must be strings")
            mapping[key] = (key_node.start_mark.line + 1, _to_located(value_node, constructor))
        return _Located(mapping, line)
    if isinstance(node, yaml.SequenceNode):
        return _Located([_to_located(item, constructor) for item in node.value], line)
    return _Located(constructor.construct_object(node, deep=True), line)


def _err(line: int, key: str, problem: str) -> ConfigError:
    return ConfigError(f"config.yaml:{line}: {key}: {problem}")


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )


def _coerce(expected: type, value: object, line: int, key: str) -> Any:
    if expected is bool:
        if isinstance(value, bool):
            return value
        raise _err(line, key, f"expected a boolean, got {_type_name(value)}")
    if expected is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _err(line, key, f"expected an integer, got {_type_name(value)}")
    if expected is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _err(line, key, f"expected a number, got {_type_name(value)}")
    if expected is str:
        if isinstance(value, str):
            return value
        raise _err(line, key, f"expected a string, got {_type_name(value)}")
    raise AssertionError(expected)


def _field_types(cls: type) -> dict[str, type]:
    mapping = {"bool": bool, "int": int, "float": float, "str": str}
    return {f.name: mapping[str(f.type)] for f in fields(cls) if str(f.type) in mapping}


def _mapping(loc: _Located, key: str) -> dict[str, tuple[int, _Located]]:
    if loc.value is None:
        return {}
    if not isinstance(loc.value, dict):
        raise _err(loc.line, key, f"expected a mapping, got {_type_name(loc.value)}")
    return loc.value


def _unknown(line: int, key: str, allowed: list[str]) -> ConfigError:
    return _err(line, key, f"unknown key (allowed: {', '.join(sorted(allowed))})")


def _apply_section(cls: type, base: Any, loc: _Located, prefix: str) -> Any:
    types = _field_types(cls)
    changes: dict[str, Any] = {}
    for name, (kline, value) in _mapping(loc, prefix).items():
        key = f"{prefix}.{name}"
        if name not in types:
            raise _unknown(kline, key, list(types))
        section = prefix.split(".")[-1]
        raw = value.value
        if (section, name) in _DURATION_KEYS:
            try:
                changes[name] = parse_duration(raw)
            except ValueError as exc:
                raise _err(value.line, key, str(exc)) from None
            continue
        coerced = _coerce(types[name], raw, value.line, key)
        choices = _CHOICES.get((section, name))
        if choices and coerced not in choices:
            raise _err(value.line, key, f"must be one of {', '.join(choices)} (got {coerced!r})")
        if (section, name) in _POSITIVE_INT_KEYS and coerced <= 0:
            raise _err(value.line, key, f"must be a positive integer (got {coerced})")
        if (section, name) in _NON_NEGATIVE_KEYS and coerced < 0:
            raise _err(value.line, key, f"must not be negative (got {coerced})")
        bound = _COUNT_KEYS.get((section, name))
        if bound is not None and not 0 <= coerced <= bound:
            raise _err(value.line, key, f"must be from 0 to {bound} (got {coerced})")
        check = _VALUE_CHECKS.get((section, name))
        if check is not None:
            problem = check(coerced)
            if problem:
                raise _err(value.line, key, f"{problem} (got {coerced!r})")
        changes[name] = coerced
    return replace(base, **changes)


def _apply_agents(base: AgentsConfig, loc: _Located) -> tuple[AgentsConfig, dict[str, int]]:
    changes: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for name, (kline, value) in _mapping(loc, "agents").items():
        key = f"agents.{name}"
        lines[name] = kline
        if name in _ROLE_SECTIONS:
            changes[name] = _apply_section(RoleConfig, getattr(base, name), value, key)
        elif name in _POOL_SECTIONS:
            changes[name] = _apply_section(PoolConfig, getattr(base, name), value, key)
        else:
            raise _unknown(kline, key, list(_AGENT_ORDER))
    return replace(base, **changes), lines


def _apply_adapters(loc: _Located) -> tuple[dict[str, AdapterConfig], dict[str, int]]:
    adapters = dict(BUILTIN_ADAPTERS)
    lines: dict[str, int] = {}
    for name, (kline, value) in _mapping(loc, "adapters").items():
        lines[name] = kline
        base = adapters.get(name, AdapterConfig())
        adapters[name] = _apply_section(AdapterConfig, base, value, f"adapters.{name}")
    return adapters, lines


def _apply_tui(loc: _Located) -> TuiConfig:
    bindings: list[tuple[str, str]] = []
    for name, (kline, value) in _mapping(loc, "tui").items():
        if name != "bindings":
            raise _unknown(kline, f"tui.{name}", ["bindings"])
        for binding_id, (bline, key_loc) in _mapping(value, "tui.bindings").items():
            if not isinstance(key_loc.value, str) or not key_loc.value.strip():
                raise _err(bline, f"tui.bindings.{binding_id}", "expected a key name such as ctrl+a")
            bindings.append((binding_id, key_loc.value.strip()))
    return TuiConfig(tuple(bindings))


def parse_config(text: str) -> Config:
    """Parse config text over the built-in defaults; raise `ConfigError` naming key and line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"config.yaml:{mark.line + 1}" if mark is not None else "config.yaml"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    config = Config()
    if node is None:
        return config
    constructor = yaml.constructor.SafeConstructor()
    try:
        root = _to_located(node, constructor)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config.yaml: invalid YAML: {exc}") from None
    if not isinstance(root.value, dict):
        raise ConfigError(f"config.yaml:{root.line}: the top level must be a mapping")
    changes: dict[str, Any] = {}
    agent_lines: dict[str, int] = {}
    adapter_lines: dict[str, int] = {}
    allowed = ["version", "project_name", *_SECTION_TYPES, "agents", "adapters", "tui"]
    for name, (kline, value) in root.value.items():
        if name == "version":
            changes["version"] = _coerce(int, value.value, value.line, name)
            if changes["version"] != SUPPORTED_VERSION:
                raise _err(
                    value.line,
                    name,
                    f"this roundtable reads version {SUPPORTED_VERSION} only (got {changes['version']})",
                )
        elif name == "project_name":
            changes["project_name"] = _coerce(str, value.value, value.line, name)
        elif name in _SECTION_TYPES:
            changes[name] = _apply_section(_SECTION_TYPES[name], getattr(config, name), value, name)
        elif name == "agents":
            changes["agents"], agent_lines = _apply_agents(config.agents, value)
        elif name == "adapters":
            changes["adapters"], adapter_lines = _apply_adapters(value)
        elif name == "tui":
            changes["tui"] = _apply_tui(value)
        else:
            raise _unknown(kline, name, allowed)
    config = replace(config, **changes)
    _validate_references(config, agent_lines, adapter_lines)
    return config


def _validate_references(config: Config, agent_lines: dict[str, int], adapter_lines: dict[str, int]) -> None:
    for section in _AGENT_ORDER:
        entry = getattr(config.agents, section)
        line = agent_lines.get(section, 0)
        where = f"config.yaml:{line}: " if line else "config.yaml: "
        adapter = config.adapters.get(entry.adapter)
        if adapter is None:
            raise ConfigError(f'{where}agents.{section}.adapter references unknown adapter "{entry.adapter}"')
        if not adapter.command.strip():
            aline = adapter_lines.get(entry.adapter, line)
            raise ConfigError(
                f"config.yaml:{aline}: adapters.{entry.adapter}.command must not be empty "
                f"(referenced by agents.{section})"
            )


def load_config(root: Path | str) -> Config:
    """Load `<root>/.roundtable/config.yaml`; a missing file tells the user to run init."""
    path = Path(root) / CONFIG_RELATIVE_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"read config: {path} does not exist; run `roundtable init --root {root}` first") from None
    except OSError as exc:
        raise ConfigError(f"read config: {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"read config: {path} is not UTF-8 text") from None
    return parse_config(text)


def format_duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def default_config_yaml(config: Config | None = None) -> str:
    """The starter `config.yaml` written by `roundtable init`: every key with its default."""
    c = config or Config()
    a = c.agents
    lines = [
        f"version: {c.version}",
        f"project_name: {c.project_name}",
        "storage:",
        f"  sqlite_path: {c.storage.sqlite_path}",
        f"  wal: {str(c.storage.wal).lower()}",
        "mcp:",
        f"  transport: {c.mcp.transport}",
        f"  socket_path: {c.mcp.socket_path}",
        f'  http_address: "{c.mcp.http_address}"',
        f'  tls_cert_file: "{c.mcp.tls_cert_file}"',
        f'  tls_key_file: "{c.mcp.tls_key_file}"',
        "  # underscore (task_create) suits most MCP clients; dotted (task.create) is canonical.",
        f"  tool_names: {c.mcp.tool_names}",
        "  # token: every HTTP request needs a credential (loopback too); none: anonymous read-only access.",
        f"  auth: {c.mcp.auth}",
        f"  socket_max_request_bytes: {c.mcp.socket_max_request_bytes}",
        f"  socket_read_timeout: {format_duration(c.mcp.socket_read_timeout)}",
        f"  socket_max_connections: {c.mcp.socket_max_connections}",
        f"  http_max_body_bytes: {c.mcp.http_max_body_bytes}",
        "chair:",
        f"  tick_interval: {format_duration(c.chair.tick_interval)}",
        f"  turn_start_timeout: {format_duration(c.chair.turn_start_timeout)}",
        f"  turn_timeout: {format_duration(c.chair.turn_timeout)}",
        "repo:",
        f"  max_read_bytes: {c.repo.max_read_bytes}",
        f"  max_search_matches: {c.repo.max_search_matches}",
        "# The autopilot launches agents for the work: manual (the default) never launches;",
        "# auto launches the planner, implementers, reviewers, security and the tester as needed.",
        "autopilot:",
        f"  mode: {c.autopilot.mode}",
        "  # Concurrent supervised sessions overall, and per role.",
        f"  max_sessions: {c.autopilot.max_sessions}",
        f"  max_sessions_per_role: {c.autopilot.max_sessions_per_role}",
        "  # Launches per task or review before the task is blocked with the reason.",
        f"  max_attempts: {c.autopilot.max_attempts}",
        "  # Seconds before the first retry; doubled for each further attempt.",
        f"  retry_backoff_seconds: {c.autopilot.retry_backoff_seconds}",
        "  # The autopilot stops after this many failed sessions in a row.",
        f"  max_consecutive_failures: {c.autopilot.max_consecutive_failures}",
        "  # Dispatches per run; 0 means unlimited.",
        f"  max_iterations: {c.autopilot.max_iterations}",
        "  # The agent that turns a goal into tasks; empty = the first enabled agent with role architect.",
        f'  planner_agent: "{c.autopilot.planner_agent}"',
        "agents:",
    ]
    for name in _AGENT_ORDER:
        entry = getattr(a, name)
        lines.append(f"  {name}:")
        if isinstance(entry, PoolConfig):
            lines.append(f"    count: {entry.count}")
        else:
            lines.append(f"    role: {entry.role}")
        lines.append(f"    adapter: {entry.adapter}")
        lines.append(f"    model: {entry.model}")
    lines.append("adapters:")
    for name, ad in c.adapters.items():
        lines.append(f"  {name}:")
        lines.append(f"    command: {ad.command}")
        lines.append(f"    supports_resume: {str(ad.supports_resume).lower()}")
        if ad.resume_pattern:
            lines.append(f'    resume_pattern: "{ad.resume_pattern}"')
        lines.append(f"    supports_mcp: {str(ad.supports_mcp).lower()}")
        lines.append(f"    supports_readonly_workspace: {str(ad.supports_readonly_workspace).lower()}")
        lines.append(f"    captures_session_id: {str(ad.captures_session_id).lower()}")
    return "\n".join(lines) + "\n"
