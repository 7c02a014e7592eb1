"""`.roundtable/config.yaml` → frozen pydantic models, with validation that names the key and line.

The file is full YAML read with `yaml.safe_load` semantics (`located_yaml` keeps every key's line).
Parsing starts from the built-in defaults and overlays what the file sets; the models forbid
unknown keys, and wrong types and invalid values are `ConfigError`s such as
`config.yaml:12: mcp.tool_names: must be one of underscore, dotted (got 'camel')`.
`default_config_yaml` writes the starter file (`yaml.safe_dump` of the defaults, with comments
placed before the keys that need one).
"""

from __future__ import annotations

import logging
import posixpath
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    AllowInfNan,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from roundtable.endpoint import CONFIG_RELATIVE_PATH, DEFAULT_HTTP_ADDRESS, address_problem, http_url
from roundtable.errors import ConfigError, ConfigMissing
from roundtable.located_yaml import Located, load_yaml, overlay, validation_error

CONFIG_LABEL = "config.yaml"
MAX_POOL_COUNT = 1000
SUPPORTED_VERSION = 1
AUTOPILOT_MODES = ("manual", "auto")
# Keys older files may hold that nothing reads any more: accepted with a warning naming the line.
DEPRECATED_KEYS = {
    ("storage", "wal"): "no longer read: the database always runs in WAL mode; delete the line",
}

log = logging.getLogger("roundtable.config")

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


def format_duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    if seconds >= 1 and float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


STATE_DIR_PREFIX = ".roundtable/"


def sqlite_path_problem(value: str) -> str:
    """Why `storage.sqlite_path` is refused ('' when accepted).

    The database must stay inside the project's private `.roundtable/` directory, given relative
    to the project root: it holds the hashes the credential proof is keyed by (a copy readable by
    others lets a program pose as this project's owner to its bridges), `.roundtable/` is created
    0700 and kept out of git, and a relative path keeps the project movable. An absolute path
    used to be silently re-rooted (`/etc/passwd` became `<root>/etc/passwd`); now it is an error."""
    text = value.strip()
    if not text:
        return "must not be empty"
    if text.startswith("/") or "\\" in text:
        return f"must be a relative path inside {STATE_DIR_PREFIX}, e.g. .roundtable/roundtable.db"
    normal = posixpath.normpath(text)
    if not normal.startswith(STATE_DIR_PREFIX) or ".." in normal.split("/"):
        return f"must stay inside {STATE_DIR_PREFIX} (the project's private state directory)"
    return ""


# --- value types: each check's message is the problem as the user reads it -----------------------


def _check(test: Callable[[Any], str]) -> AfterValidator:
    """A validator from a function returning why a value is refused ('' when it is accepted)."""

    def validate(value: Any) -> Any:
        problem = test(value)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(validate)


def _positive(value: int) -> str:
    return f"must be a positive integer (got {value})" if value <= 0 else ""


def _not_negative(value: float) -> str:
    return f"must not be negative (got {value})" if value < 0 else ""


def _absolute(value: str) -> str:
    return "" if value.startswith("/") else f"must be an absolute path (got {value!r})"


def _pool_count(value: int) -> str:
    return f"must be from 0 to {MAX_POOL_COUNT} (got {value})" if not 0 <= value <= MAX_POOL_COUNT else ""


def _address(value: str) -> str:
    problem = address_problem(value)
    return f"{problem} (got {value!r})" if problem else ""


def _sqlite_path(value: str) -> str:
    problem = sqlite_path_problem(value)
    return f"{problem} (got {value!r})" if problem else ""


def _version(value: int) -> str:
    if value != SUPPORTED_VERSION:
        return f"this roundtable reads version {SUPPORTED_VERSION} only (got {value})"
    return ""


def _key_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a key name such as ctrl+a")
    return value.strip()


# An integer or a decimal number: never a string, a boolean, .inf or .nan.
Number = Annotated[float, Strict(), AllowInfNan(False)]
PositiveInt = Annotated[StrictInt, _check(_positive)]
NonNegativeInt = Annotated[StrictInt, _check(_not_negative)]
NonNegativeNumber = Annotated[Number, _check(_not_negative)]
PoolCount = Annotated[StrictInt, _check(_pool_count)]
# Seconds, written as a number or with a unit (`500ms`, `2s`, `1m`); the starter file uses units.
Duration = Annotated[float, BeforeValidator(parse_duration), PlainSerializer(format_duration, when_used="json")]
KeyName = Annotated[str, BeforeValidator(_key_name)]


class Section(BaseModel):
    """A mapping in the file: unknown keys are errors; an empty section (`storage:`) is no change."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_defaults(cls, data: Any) -> Any:
        return {} if data is None else data


class StorageConfig(Section):
    sqlite_path: Annotated[StrictStr, _check(_sqlite_path)] = ".roundtable/roundtable.db"


class McpConfig(Section):
    transport: StrictStr = "unix"
    socket_path: StrictStr = ".roundtable/mcp/roundtable.sock"
    http_address: Annotated[StrictStr, _check(_address)] = DEFAULT_HTTP_ADDRESS
    tls_cert_file: StrictStr = ""
    tls_key_file: StrictStr = ""
    tool_names: Literal["underscore", "dotted"] = "underscore"
    # `token` (default): every HTTP request needs a bearer credential, loopback included.
    # `none`: the explicit opt-out — requests without one are served as anonymous (read-only tools).
    auth: Literal["token", "none"] = "token"
    # Accepted for older configs; per-principal tokens are now the default behaviour.
    require_tokens: StrictBool = False
    socket_max_request_bytes: PositiveInt = 1024 * 1024
    socket_read_timeout: Duration = 10.0
    socket_max_connections: PositiveInt = 256
    http_max_body_bytes: PositiveInt = 4 * 1024 * 1024


class ChairConfig(Section):
    tick_interval: Duration = 1.0
    turn_start_timeout: Duration = 120.0
    turn_timeout: Duration = 600.0


class LimitsConfig(Section):
    """What stops a runaway agent without the operator (each reached limit is an event)."""

    # Per supervised session: tool calls in all, and refused calls in a row. Past either, the
    # session's capability is revoked, its process stopped and its task blocked with the reason.
    session_tool_calls: PositiveInt = 400
    session_refused_in_a_row: PositiveInt = 12
    # Tasks and proposals one agent may create in one run, and all agents together in one run.
    tasks_per_agent: PositiveInt = 40
    proposals_per_agent: PositiveInt = 20
    tasks_per_run: PositiveInt = 200
    proposals_per_run: PositiveInt = 100
    # The harness's own spending cap per session in US dollars where it has one (Claude Code
    # `--max-budget-usd`); 0 passes none.
    max_budget_usd: NonNegativeNumber = 0.0


class RepoConfig(Section):
    max_read_bytes: PositiveInt = 1024 * 1024
    max_search_matches: PositiveInt = 1000
    # A new proposal revision may change at most this many files (larger ones are refused).
    max_patch_files: PositiveInt = 1000


class AutopilotConfig(Section):
    """How the dispatcher launches agents for the work. `manual` never launches."""

    mode: Literal["manual", "auto"] = "manual"
    # Concurrent supervised sessions overall, and per role.
    max_sessions: PositiveInt = 4
    max_sessions_per_role: PositiveInt = 2
    # Launches per task or review before the task is blocked with the reason.
    max_attempts: PositiveInt = 3
    # The first retry waits this long; each further attempt doubles it.
    retry_backoff_seconds: NonNegativeNumber = 5.0
    # The autopilot stops after this many failed sessions in a row.
    max_consecutive_failures: PositiveInt = 5
    # Dispatches per run; 0 means unlimited.
    max_iterations: NonNegativeInt = 60
    # Launches per minute over all runs; past it the dispatcher waits (0 means unlimited).
    launches_per_minute: NonNegativeInt = 20
    # The agent that turns a goal into tasks; '' = the first enabled agent with role architect.
    planner_agent: StrictStr = ""


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"expected host:port, such as pypi.org:443 (got {value!r})"
    if any(c.isspace() or c in "/@" for c in host):
        return f"a host name or address without a scheme or path (got {value!r})"
    return ""


class NetworkConfig(Section):
    """The gateway's forward proxy: the only hosts a session may connect to (its model API aside)."""

    # host:port entries (`pypi.org:443`, `files.pythonhosted.org:443`); default none.
    allow: tuple[Annotated[StrictStr, _check(_host_port)], ...] = ()


class SessionsConfig(Section):
    """Where supervised sessions run: always in a default-deny sandbox unless the operator opts out."""

    # auto: bubblewrap when it works, else the Landlock launcher; bwrap / landlock: only that one.
    sandbox: Literal["auto", "bwrap", "landlock"] = "auto"
    # Where no sandbox works, launches are refused unless this is true (agents then run unconfined).
    allow_unsandboxed: StrictBool = False
    # More read-only paths inside a session's sandbox (a harness's install directory, a toolchain).
    read_paths: tuple[Annotated[StrictStr, _check(_absolute)], ...] = ()
    # Processes (threads included) a session may run at once; 0: no limit.
    max_processes: NonNegativeInt = 1024
    # What a session may reach besides its model API, through the owner's gateway.
    network: NetworkConfig = NetworkConfig()
    # How a session reaches roundtable's tools: `shell`, the `rt` command in its own shell
    # (`roundtable agent`; no MCP server configured, nothing listed until it runs `rt`: a fifth of
    # an MCP listing's bytes, `bench/agent_task.py`), for Claude Code and Codex, whose shell tool
    # it switches on (other harnesses keep MCP); `mcp`, its harness's MCP client.
    tools: Literal["mcp", "shell"] = "shell"


class RoleConfig(Section):
    role: StrictStr
    adapter: StrictStr
    model: StrictStr = "default"


class PoolConfig(Section):
    count: PoolCount
    adapter: StrictStr
    model: StrictStr = "default"


class AgentsConfig(Section):
    chair: RoleConfig = RoleConfig(role="Chair", adapter="claude")
    architect: RoleConfig = RoleConfig(role="Architect", adapter="claude")
    implementers: PoolConfig = PoolConfig(count=2, adapter="codex")
    reviewers: PoolConfig = PoolConfig(count=1, adapter="claude")
    tester: RoleConfig = RoleConfig(role="Tester", adapter="codex")
    security: RoleConfig = RoleConfig(role="Security", adapter="claude")
    memory_oracle: RoleConfig = RoleConfig(role="MemoryOracle", adapter="claude")


class AdapterConfig(Section):
    """How an agent program is started. A custom adapter starts from these (empty) values."""

    command: StrictStr = ""
    supports_resume: StrictBool = False
    resume_pattern: StrictStr = ""
    supports_mcp: StrictBool = False
    supports_readonly_workspace: StrictBool = False
    captures_session_id: StrictBool = False
    # The model API the gateway forwards this adapter's requests to ('' = the vendor's own:
    # claude https://api.anthropic.com, codex https://api.openai.com).
    upstream: StrictStr = ""


def _adapter(command: str, resume: str, mcp: bool, readonly: bool, capture: bool) -> AdapterConfig:
    return AdapterConfig(
        command=command,
        supports_resume=bool(resume),
        resume_pattern=resume,
        supports_mcp=mcp,
        supports_readonly_workspace=readonly,
        captures_session_id=capture,
    )


BUILTIN_ADAPTERS: dict[str, AdapterConfig] = {
    "codex": _adapter("codex", "codex resume {{external_session_id}}", True, True, True),
    "claude": _adapter("claude", "claude --resume {{external_session_id}}", True, True, True),
    "gemini": _adapter("gemini", "gemini resume {{external_session_id}}", True, True, True),
    "opencode": _adapter("opencode", "", True, True, False),
    "generic": _adapter("sh", "", False, True, False),
}


class WorkspacesConfig(Section):
    """Where agents' workspaces (git worktrees) live: never inside the project."""

    # '' = $XDG_STATE_HOME/roundtable/workspaces (~/.local/state/roundtable/workspaces).
    dir: StrictStr = ""
    # Bounds checked from the file system before git reads a workspace (git-ignored files do not
    # count): files new or changed in size against its base, their total size, and any one file.
    max_files: PositiveInt = 1000
    max_bytes: PositiveInt = 64 * 1024 * 1024
    max_file_bytes: PositiveInt = 16 * 1024 * 1024


class PriceConfig(Section):
    """What one model costs, in USD per million tokens (`cached_input`: cache reads; default the
    input price)."""

    input: NonNegativeNumber = 0.0
    output: NonNegativeNumber = 0.0
    cached_input: NonNegativeNumber | None = None


class UsageConfig(Section):
    """Pricing for harnesses that report tokens but no cost: model name → price (`*` = any
    other model). A harness that reports its cost (Claude Code) is never re-priced."""

    prices: dict[str, PriceConfig] = Field(default_factory=dict)


class LimitConfig(Section):
    """A spending limit: tokens and/or USD; 0 means no limit."""

    tokens: NonNegativeInt = 0
    usd: NonNegativeNumber = 0.0

    @property
    def limited(self) -> bool:
        return bool(self.tokens or self.usd)


class BudgetsConfig(Section):
    """Spending limits the owner enforces: per task (every session for it), per run, per UTC day."""

    task: LimitConfig = LimitConfig()
    run: LimitConfig = LimitConfig()
    day: LimitConfig = LimitConfig()


# What the operator can be notified of (`notify.events`, a webhook's `events`).
NotifyEvent = Literal[
    "approval_requested",
    "task_blocked",
    "autopilot_stopped",
    "apply_failed",
    "transaction_attention",
    "budget_exceeded",
    "session_needs_you",
]
NOTIFY_EVENTS: tuple[NotifyEvent, ...] = typing.get_args(NotifyEvent)


def _webhook_url(value: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL (got {value!r})"
    return ""


class WebhookConfig(Section):
    """One webhook: JSON POSTed to `url` for each of `events`, in `format` (`plain`, `ntfy`,
    `slack` — the body Slack-compatible incoming webhooks accept)."""

    url: Annotated[StrictStr, _check(_webhook_url)]
    events: list[NotifyEvent] = Field(default_factory=lambda: list(NOTIFY_EVENTS))
    format: Literal["plain", "ntfy", "slack"] = "plain"
    timeout: Duration = 5.0


class NotifyConfig(Section):
    """Telling the operator, outside the console, that something needs them."""

    events: list[NotifyEvent] = Field(default_factory=lambda: list(NOTIFY_EVENTS))
    # The console: bell, a desktop-notification escape (OSC 9 / OSC 777), the count in the title.
    terminal: StrictBool = True
    # `notify-send` when it is installed and a desktop session is there.
    desktop: StrictBool = True
    webhooks: list[WebhookConfig] = Field(default_factory=list)
    # Attempts after the first failed POST, with doubling backoff from `retry_backoff`.
    retries: NonNegativeInt = 3
    retry_backoff: Duration = 1.0


LANDING_MODES = ("working-tree", "commit", "branch", "pull-request")
_IDENTITY_RE = re.compile(r"^[^<>\n]+ <[^<>\s]+@[^<>\s]+>$")
_REF_PART_RE = re.compile(r"^[A-Za-z0-9._/-]*$")


def _identity(value: str) -> str:
    return "" if _IDENTITY_RE.match(value) else f"must read 'Name <email>' (got {value!r})"


def _branch_prefix(value: str) -> str:
    if not _REF_PART_RE.match(value) or ".." in value or value.startswith(("/", "-", ".")):
        return f"must be letters, digits, '.', '_', '-' and '/' that git accepts in a branch name (got {value!r})"
    return ""


def _api_url(value: str) -> str:
    return _webhook_url(value)


def _env_name(value: str) -> str:
    return "" if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", value) else f"must be an environment variable name (got {value!r})"


def _owner_repo(value: str) -> str:
    if value and not re.match(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", value):
        return f"must read owner/name (got {value!r})"
    return ""


class ForgeConfig(Section):
    """The forge that hosts the pull requests. The token is read from the environment variable
    `token_env` names when it is needed; it is never written to a file and never enters a sandbox."""

    kind: Literal["github"] = "github"
    # https://api.github.com, or GitHub Enterprise Server's https://HOST/api/v3.
    api_url: Annotated[StrictStr, _check(_api_url)] = "https://api.github.com"
    # owner/name on the forge.
    repository: Annotated[StrictStr, _check(_owner_repo)] = ""
    token_env: Annotated[StrictStr, _check(_env_name)] = "GITHUB_TOKEN"
    timeout: Duration = 15.0


class PullRequestConfig(Section):
    """`pull-request` mode: when the pull request opens, into which branch, how it merges."""

    # operator: when the proposal reaches the operator (every other gate passed); first_revision: at once.
    open_at: Literal["operator", "first_revision"] = "operator"
    # The branch the pull request merges into; '' = the branch checked out when roundtable builds.
    base: StrictStr = ""
    merge_method: Literal["merge", "squash", "rebase"] = "squash"
    draft: StrictBool = False


class LandingConfig(Section):
    """How an approved proposal lands: `working-tree` (the default: `git apply`, uncommitted),
    `commit` (one commit on the current branch), `branch` (a commit on a branch of its own) or
    `pull-request` (that branch pushed, and a pull request on the forge)."""

    mode: Literal["working-tree", "commit", "branch", "pull-request"] = "working-tree"
    branch_prefix: Annotated[StrictStr, _check(_branch_prefix)] = "roundtable/"
    # The git remote branches are pushed to ('' = none; `pull-request` mode needs one).
    remote: StrictStr = ""
    push: StrictBool = False
    # Commit authors: agent id -> 'Name <email>'; an agent not listed is '<id> <<id>@author_domain>'.
    authors: dict[str, Annotated[StrictStr, _check(_identity)]] = Field(default_factory=dict)
    author_domain: StrictStr = "roundtable.invalid"
    # A red required check sends the author a revision request this many times, then asks you.
    ci_attempts: PositiveInt = 3
    # The tail of a failed job's log quoted to the author (bytes).
    log_tail_bytes: PositiveInt = 4000
    # How often a running owner syncs branch and pull-request landings (builds, pushes, reads CI).
    poll_interval: Duration = 30.0
    pull_request: PullRequestConfig = PullRequestConfig()
    forge: ForgeConfig = ForgeConfig()

    def author(self, agent_id: str) -> tuple[str, str]:
        """(name, email) of the commit author for an agent."""
        given = self.authors.get(agent_id, "")
        if given:
            name, _, rest = given.partition(" <")
            return name.strip(), rest.rstrip(">")
        return agent_id, f"{agent_id}@{self.author_domain}"


class TuiConfig(Section):
    """Key overrides for the console: binding id → key (e.g. `approve: ctrl+a`)."""

    bindings: dict[str, KeyName] = Field(default_factory=dict)


class Config(Section):
    version: Annotated[StrictInt, _check(_version)] = SUPPORTED_VERSION
    project_name: StrictStr = "Roundtable"
    storage: StorageConfig = StorageConfig()
    mcp: McpConfig = McpConfig()
    chair: ChairConfig = ChairConfig()
    limits: LimitsConfig = LimitsConfig()
    repo: RepoConfig = RepoConfig()
    autopilot: AutopilotConfig = AutopilotConfig()
    sessions: SessionsConfig = SessionsConfig()
    agents: AgentsConfig = AgentsConfig()
    adapters: dict[str, AdapterConfig] = Field(default_factory=lambda: dict(BUILTIN_ADAPTERS))
    workspaces: WorkspacesConfig = WorkspacesConfig()
    tui: TuiConfig = TuiConfig()
    usage: UsageConfig = UsageConfig()
    budgets: BudgetsConfig = BudgetsConfig()
    notify: NotifyConfig = NotifyConfig()
    landing: LandingConfig = LandingConfig()

    def sqlite_path(self, root: Path) -> Path:
        """`<root>/<storage.sqlite_path>`; loading has checked that it stays inside `.roundtable/`."""
        return Path(root) / self.storage.sqlite_path

    def socket_path(self, root: Path) -> Path:
        p = Path(self.mcp.socket_path)
        return p if p.is_absolute() else Path(root) / p

    def http_url(self) -> str:
        return http_url(self.mcp.http_address, self.mcp.tls_cert_file, self.mcp.tls_key_file)


_AGENT_ORDER = ("chair", "architect", "implementers", "reviewers", "tester", "security", "memory_oracle")


# --- loading -------------------------------------------------------------------------------------


def parse_config(text: str) -> Config:
    """Parse config text over the built-in defaults; raise `ConfigError` naming key and line."""
    located = load_yaml(text, CONFIG_LABEL)
    if located.data is None:
        return Config()
    if not isinstance(located.data, dict):
        raise ConfigError(f"{located.where(())}: the top level must be a mapping")
    _drop_deprecated(located)
    try:
        config = Config.model_validate(overlay(Config().model_dump(), located.data))
    except ValidationError as exc:
        raise validation_error(exc, located, Config) from None
    _check_references(config, located)
    return config


_warned: set[str] = set()


def _drop_deprecated(located: Located) -> None:
    """Remove the keys nothing reads any more, with one warning per key and process."""
    for path, advice in DEPRECATED_KEYS.items():
        parent = located.data
        for part in path[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict) and path[-1] in parent:
            del parent[path[-1]]
            message = located.error(path, advice).message
            if message not in _warned:
                _warned.add(message)
                log.warning("%s", message)


def _check_references(config: Config, located: Located) -> None:
    """Every role names a configured adapter whose command is not blank."""
    for section in _AGENT_ORDER:
        entry = getattr(config.agents, section)
        adapter = config.adapters.get(entry.adapter)
        if adapter is None:
            where = located.where(("agents", section, "adapter"))
            known = ", ".join(sorted(config.adapters))
            raise ConfigError(
                f'{where}: agents.{section}.adapter references unknown adapter "{entry.adapter}" (configured: {known})'
            )
        if not adapter.command.strip():
            where = located.where(("adapters", entry.adapter, "command"))
            raise ConfigError(
                f"{where}: adapters.{entry.adapter}.command must not be empty (referenced by agents.{section})"
            )


def load_config(root: Path | str) -> Config:
    """Load `<root>/.roundtable/config.yaml`; a missing file tells the user to run init."""
    path = Path(root) / CONFIG_RELATIVE_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigMissing(f"read config: {path} does not exist; run `roundtable init --root {root}` first") from None
    except OSError as exc:
        raise ConfigError(f"read config: {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"read config: {path} is not UTF-8 text") from None
    return parse_config(text)


# --- the starter file ----------------------------------------------------------------------------

STARTER_HEADER = """\
# roundtable's project configuration. Every key is shown with its default; delete a key to
# keep the default. Unknown keys are errors. Reference: docs/configuration.md in roundtable.
"""
# Comments written before a key of the starter file (safe_dump writes none of its own).
STARTER_COMMENTS: dict[tuple[str, ...], str] = {
    ("storage", "sqlite_path"): "Relative to the project root, inside .roundtable/ (private state).",
    ("mcp", "tool_names"): "underscore (task_create) suits most MCP clients; dotted (task.create) is canonical.",
    ("mcp", "auth"): "token: every HTTP request needs a credential (loopback too); none: anonymous read-only access.",
    ("mcp", "socket_read_timeout"): "Durations are seconds or a number with a unit: 500ms, 2s, 1m, 1m30s.",
    ("autopilot",): "The autopilot launches agents for the work. manual (the default) never launches one;\n"
    "auto launches the planner, implementers, reviewers, security and the tester as the work needs.",
    ("autopilot", "max_sessions"): "Concurrent supervised sessions overall, and per role.",
    ("autopilot", "max_attempts"): "Launches per task or review before the task is blocked with the reason.",
    ("autopilot", "retry_backoff_seconds"): "Seconds before the first retry; doubled for each further attempt.",
    ("autopilot", "max_consecutive_failures"): "The autopilot stops after this many failed sessions in a row.",
    ("autopilot", "max_iterations"): "Dispatches per run; 0 means unlimited.",
    ("autopilot", "launches_per_minute"): "Launches per minute over all runs; 0 means unlimited.",
    ("limits",): "What stops a runaway agent without you. Per supervised session: tool calls, and refused\n"
    "calls in a row (then its capability is revoked, the process stopped, the task blocked).\n"
    "Per run: tasks and proposals one agent, and all agents, may create. max_budget_usd: the\n"
    "harness's own spending cap per session where it has one (Claude Code); 0 passes none.",
    ("autopilot", "planner_agent"): "The agent that turns a goal into tasks; empty: the first enabled architect.",
    ("sessions",): "Supervised sessions run in a default-deny sandbox (bubblewrap, else Landlock + namespaces).",
    (
        "sessions",
        "allow_unsandboxed",
    ): "true lets agents run unconfined where no sandbox works (otherwise a launch is refused).",
    (
        "sessions",
        "read_paths",
    ): "Absolute paths a session may read besides the system, its interpreter and its harness.",
    (
        "sessions",
        "network",
        "allow",
    ): "host:port a session may reach through the gateway's proxy (e.g. pypi.org:443); default none.",
    ("agents",): "Who sits at the table: single roles, and pools of implementers and reviewers (0 to 1000).",
    ("adapters",): "How each agent program is started; a new name starts from empty values.",
    ("workspaces", "dir"): "Agents' git worktrees, outside the project; empty: ~/.local/state/roundtable/workspaces.",
    ("tui", "bindings"): "Console key overrides: command id: key, e.g. approve: ctrl+a",
    ("usage", "prices"): "USD per million tokens for harnesses that report no cost (Codex), by model; * = any\n"
    "other, e.g. {gpt-5: {input: 1.25, output: 10, cached_input: 0.125}}",
    ("budgets",): "Spending limits per task, run and UTC day: tokens and/or usd; 0 = no limit.",
    ("notify", "events"): "What reaches you outside the console (the console's bell, notify-send, webhooks).",
    ("landing",): "How an approved proposal lands: working-tree (git apply, uncommitted), commit (one commit\n"
    "on the current branch), branch (a branch of its own) or pull-request (pushed, with a pull request).\n"
    "See docs/landing.md.",
    ("landing", "forge", "token_env"): "The environment variable holding the forge token (never put the token here).",
    ("notify", "webhooks"): "e.g. [{url: https://ntfy.sh/my-topic, format: ntfy, events: [approval_requested]}]",
}
_KEY_LINE = re.compile(r"^( *)([A-Za-z_][\w-]*):(?: |$)")


def default_config_yaml(config: Config | None = None) -> str:
    """The starter `config.yaml` written by `roundtable init`: every key with its default."""
    data = (config or Config()).model_dump(mode="json")
    data["mcp"].pop("require_tokens", None)  # read for older files; not offered to new ones
    body = yaml.dump(
        data, Dumper=_StarterDumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000
    )
    return STARTER_HEADER + _with_comments(body)


class _StarterDumper(yaml.SafeDumper):
    """`yaml.safe_dump`, with host:port values and empty strings in double quotes: YAML 1.1 reads
    an unquoted `1:20` as a base-60 number, and `""` reads as "empty" at a glance."""


def _quoted_where_it_helps(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if not value or ":" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_StarterDumper.add_representer(str, _quoted_where_it_helps)


def _with_comments(body: str) -> str:
    out: list[str] = []
    path: list[str] = []
    for line in body.splitlines():
        match = _KEY_LINE.match(line)
        if match:
            depth = len(match.group(1)) // 2
            path[depth:] = [match.group(2)]
            comment = STARTER_COMMENTS.get(tuple(path))
            if comment:
                out.extend(f"{match.group(1)}# {text}" for text in comment.split("\n"))
        out.append(line)
    return "\n".join(out) + "\n"
