"""The policy engine: `POLICIES.ROUNDTABLE.md`, path profiles, high-risk paths and consensus.

The policy file is Markdown; only fenced blocks opened by a line that is exactly ```` ```yaml ````
are read, each with `yaml.safe_load` semantics, and deep-merged in order (maps merge, later
scalars and lists replace). A missing file means the built-in defaults (which equal the YAML of
the scaffolded file). A profile named in the file overrides only the fields it sets; the others
keep the built-in value (the reference reset them to 0/false, which silently weakened a policy
when one key was edited). A value of the wrong type, an unknown profile field, or a list entry
that is not a non-empty string is a `ConfigError` naming the key and its line.

`Policy.evaluate` turns (risk, touched paths, current votes) into a `PolicyResult`: counts,
whether the votes alone make the proposal approvable, whether a human must approve, and which
further gates (tests, rollback plan, security review) the detected profiles demand.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import pathspec
import yaml

from roundtable.errors import ConfigError

POLICY_FILE = "POLICIES.ROUNDTABLE.md"

APPROVING_VOTES = ("approve", "approve_with_notes")
BLOCKING_VOTES = ("revise", "reject")
VOTE_VOCABULARY = ("approve", "approve_with_notes", "revise", "reject", "veto", "abstain")
HIGH_RISK_LEVELS = ("high", "critical")
DEPENDENCY_FILES = ("go.mod", "go.sum", "package.json", "package-lock.json", "pnpm-lock.yaml", "yarn.lock")


@dataclass(frozen=True)
class Profile:
    """One consensus profile (`consensus.<name>` in the policy file)."""

    name: str
    approvals_required: int = 0
    blockers_allowed: int = 0
    required_roles: tuple[str, ...] = ()
    tests_required: bool = False
    security_veto_blocks: bool = False
    human_approval_required: bool = False
    security_approval_required: bool = False
    rollback_plan_required: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["required_roles"] = list(self.required_roles)
        return out


BUILTIN_PROFILES: dict[str, Profile] = {
    "default": Profile("default", approvals_required=2, tests_required=True),
    "architecture": Profile("architecture", approvals_required=2, required_roles=("Architect", "Reviewer")),
    "security": Profile(
        "security", required_roles=("Security",), security_veto_blocks=True, human_approval_required=True
    ),
    "dependency_change": Profile(
        "dependency_change", required_roles=("Security", "Tester"), human_approval_required=True
    ),
    "destructive_command": Profile(
        "destructive_command", human_approval_required=True, security_approval_required=True
    ),
    "migration": Profile(
        "migration",
        required_roles=("Architect", "Security", "Tester"),
        human_approval_required=True,
        rollback_plan_required=True,
    ),
}
BUILTIN_HIGH_PATHS: tuple[str, ...] = (
    ".env*",
    "**/.env*",
    "auth/**",
    "security/**",
    "infra/**",
    "migrations/**",
    "package.json",
    "package-lock.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "go.mod",
    "go.sum",
    "Dockerfile",
    "docker-compose*.yml",
    ".github/workflows/**",
    # Governance: the rules themselves and roundtable's own state.
    "POLICIES.ROUNDTABLE.md",
    "AGENTS.ROUNDTABLE.md",
    ".roundtable/**",
    # CI configuration: it runs with the project's secrets.
    ".github/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".circleci/**",
    ".buildkite/**",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".pre-commit-config.yaml",
    # git itself: attributes choose filters and line endings, modules fetch code.
    ".gitattributes",
    ".gitmodules",
    # Build files and lock files: they run code at build or install time.
    "Makefile",
    "GNUmakefile",
    "*.mk",
    "Dockerfile.*",
    "Containerfile",
    "compose*.yml",
    "compose*.yaml",
    "docker-compose*.yaml",
    "npm-shrinkwrap.json",
    ".npmrc",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements*.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "tox.ini",
    "noxfile.py",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "Gemfile",
    "Gemfile.lock",
    "*.gemspec",
    "Rakefile",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gradlew",
    "CMakeLists.txt",
    "meson.build",
    "BUILD",
    "BUILD.bazel",
    "WORKSPACE",
    "justfile",
    "Taskfile.yml",
)
BUILTIN_DANGEROUS: tuple[str, ...] = (
    "rm",
    "chmod",
    "chown",
    "mv",
    "git reset",
    "git clean",
    "git push",
    "docker system prune",
    "kubectl",
    "terraform apply",
    "npm install",
    "pnpm add",
    "yarn add",
    "go get",
    "pip install",
)


class VoteLike(Protocol):
    @property
    def agent_id(self) -> str: ...

    @property
    def vote(self) -> str: ...


@dataclass(frozen=True)
class PolicyResult:
    """What the policy says about one proposal revision (§3.7.4, plus the gates we enforce)."""

    approvals: int
    blockers: int
    vetoes: int
    approvable: bool
    needs_human: bool
    summary: str
    approval_votes: tuple[str, ...]
    blocking_votes: tuple[str, ...]
    high_risk_paths: tuple[str, ...]
    profiles: tuple[str, ...]
    approvals_required: int
    blockers_allowed: int
    tests_required: bool
    rollback_plan_required: bool
    security_review_required: bool
    required_roles: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class Policy:
    """The effective policy: profiles by name, high-risk path patterns, dangerous commands."""

    profiles: dict[str, Profile] = field(default_factory=lambda: dict(BUILTIN_PROFILES))
    high_paths: tuple[str, ...] = BUILTIN_HIGH_PATHS
    dangerous_commands: tuple[str, ...] = BUILTIN_DANGEROUS
    tests: TestsPolicy = field(default_factory=lambda: TestsPolicy())
    # `patches:` — what a patch may do beyond changing regular files (each allowed one is high-risk).
    allow_symlinks: bool = False
    allow_submodules: bool = False
    allow_mode_changes: bool = False
    source: str = "built-in"
    version: str = "built-in"

    def profile(self, name: str) -> Profile:
        return self.profiles.get(name) or Profile(name)

    def is_high_risk(self, rel_path: str) -> bool:
        return any(match_pattern(p, rel_path) for p in self.high_paths)

    def detect_profiles(self, paths: Iterable[str]) -> list[str]:
        """Profiles implied by the touched paths (§3.7.3), sorted."""
        found: set[str] = set()
        for path in paths:
            if path.startswith("migrations/"):
                found.add("migration")
            if posixpath.basename(path) in DEPENDENCY_FILES:
                found.add("dependency_change")
        return sorted(found)

    def evaluate(
        self, risk: str, paths: Sequence[str], votes: Sequence[VoteLike], *, extra_high_paths: Sequence[str] = ()
    ) -> PolicyResult:
        """Evaluate one revision. `votes` must already be the current-revision votes, one per agent;
        `extra_high_paths` are high-risk whatever their name (an allowed symlink, say)."""
        approvals = blockers = vetoes = 0
        approval_votes: list[str] = []
        blocking_votes: list[str] = []
        for vote in votes:
            label = f"{vote.agent_id}:{vote.vote}"
            if vote.vote in APPROVING_VOTES:
                approvals += 1
                approval_votes.append(label)
            elif vote.vote in BLOCKING_VOTES:
                blockers += 1
                blocking_votes.append(label)
            elif vote.vote == "veto":
                vetoes += 1
                blockers += 1
                blocking_votes.append(label)
        profiles = self.detect_profiles(paths)
        high = sorted({p for p in paths if self.is_high_risk(p)} | set(extra_high_paths))
        default = self.profile("default")
        security = self.profile("security")
        applicable = [default, *(self.profile(name) for name in profiles)]
        # Every applicable profile's thresholds count (the reference enforced only default's).
        required = max(1, *(p.approvals_required for p in applicable))
        allowed = min(p.blockers_allowed for p in applicable)
        high_risk = risk in HIGH_RISK_LEVELS
        human_profiles = [name for name in profiles if self.profile(name).human_approval_required]
        veto_blocks = vetoes > 0 and security.security_veto_blocks
        needs_human = (
            high_risk or (bool(high) and security.human_approval_required) or veto_blocks or bool(human_profiles)
        )
        approvable = approvals >= required and blockers <= allowed and not needs_human
        if veto_blocks:
            summary = "security veto blocks proposal"
        elif high and security.human_approval_required:
            summary = "human approval required for high-risk paths"
        elif high_risk:
            summary = "human approval required for high-risk proposal"
        elif human_profiles:
            summary = f"human approval required by profile {', '.join(human_profiles)}"
        elif approvals < required:
            summary = f"insufficient approvals: need {required}"
        elif blockers > allowed:
            summary = "blocking votes present"
        else:
            summary = "proposal satisfies policy consensus"
        roles: set[str] = {"Reviewer"}
        for p in applicable:
            roles.update(r for r in p.required_roles if r.strip())
        security_required = (
            high_risk
            or bool(high)
            or bool({"dependency_change", "migration"} & set(profiles))
            or any(p.security_approval_required for p in applicable)
        )
        if security_required:
            roles.add("Security")
            roles.update(r for r in security.required_roles if r.strip())
        return PolicyResult(
            approvals=approvals,
            blockers=blockers,
            vetoes=vetoes,
            approvable=approvable,
            needs_human=needs_human,
            summary=summary,
            approval_votes=tuple(approval_votes),
            blocking_votes=tuple(blocking_votes),
            high_risk_paths=tuple(high),
            profiles=tuple(profiles),
            approvals_required=required,
            blockers_allowed=allowed,
            tests_required=any(p.tests_required for p in applicable),
            rollback_plan_required=any(p.rollback_plan_required for p in applicable),
            security_review_required=security_required,
            required_roles=tuple(sorted(roles)),
        )


# --- tests: the commands `test.run` may run and its sandbox (DESIGN §4.24) ----------------

SANDBOX_MODES = ("auto", "bwrap", "landlock")
MAX_TEST_TIMEOUT_S = 24 * 3600


@dataclass(frozen=True)
class TestsPolicy:
    """`tests:` in the policy file. `commands` maps a name to an exact argv (empty: the commands
    implied by the repository's markers); agents choose among them, never free text."""

    __test__ = False  # not a pytest test class

    commands: tuple[tuple[str, tuple[str, ...]], ...] = ()
    sandbox: str = "auto"
    timeout_seconds: float = 600.0
    memory_mb: int = 2048
    max_processes: int = 512
    read_paths: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["commands"] = {name: list(argv) for name, argv in self.commands}
        out["read_paths"] = list(self.read_paths)
        return out


_TESTS_KEYS = ("commands", "sandbox", "timeout_seconds", "memory_mb", "max_processes", "read_paths")


def _positive_int(value: _Loc, key: str, label: str, minimum: int) -> int:
    raw = value.value
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < minimum:
        raise ConfigError(f"{label}:{value.line}: {key}: expected an integer of at least {minimum}, got {raw!r}")
    return raw


def _tests_section(loc: _Loc, label: str) -> TestsPolicy:
    changes: dict[str, Any] = {}
    for name, (kline, value) in _mapping(loc, "tests", label).items():
        key = f"tests.{name}"
        raw = value.value
        if name == "commands":
            commands: list[tuple[str, tuple[str, ...]]] = []
            for cname, (cline, argv) in _mapping(value, key, label).items():
                if not cname.strip() or cname != cname.strip() or any(c in cname for c in "\n\r\t"):
                    raise ConfigError(f"{label}:{cline}: {key}: command names must be non-empty, without spaces around")
                parts = _strings(argv, f"{key}.{cname}", label)
                if not parts:
                    raise ConfigError(f"{label}:{argv.line}: {key}.{cname}: expected a non-empty list of arguments")
                commands.append((cname, parts))
            changes["commands"] = tuple(commands)
        elif name == "sandbox":
            if raw not in SANDBOX_MODES:
                raise ConfigError(f"{label}:{value.line}: {key}: expected one of {', '.join(SANDBOX_MODES)}, got {raw!r}")
            changes["sandbox"] = raw
        elif name == "timeout_seconds":
            if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw <= MAX_TEST_TIMEOUT_S:
                raise ConfigError(f"{label}:{value.line}: {key}: expected seconds in (0, {MAX_TEST_TIMEOUT_S}], got {raw!r}")
            changes["timeout_seconds"] = float(raw)
        elif name == "memory_mb":
            changes["memory_mb"] = _positive_int(value, key, label, 16)
        elif name == "max_processes":
            changes["max_processes"] = _positive_int(value, key, label, 1)
        elif name == "read_paths":
            paths = _strings(value, key, label)
            for path in paths:
                if not path.startswith("/"):
                    raise ConfigError(f"{label}:{value.line}: {key}: {path!r} is not an absolute path")
            changes["read_paths"] = paths
        else:
            raise ConfigError(f"{label}:{kline}: {key}: unknown key (allowed: {', '.join(_TESTS_KEYS)})")
    return TestsPolicy(**changes)


# --- high-risk pattern matching ------------------------------------------------------------


@lru_cache(maxsize=512)
def _spec(pattern: str) -> pathspec.PathSpec | None:
    """One pattern with `.gitignore` semantics (pathspec); None when it cannot match anything."""
    if pattern.startswith("!"):
        return None  # a negation means nothing on its own
    try:
        return pathspec.GitIgnoreSpec.from_lines([pattern])
    except Exception:  # a malformed pattern never matches
        return None


def match_pattern(pattern: str, path: str) -> bool:
    """Does a high-risk pattern match a repository-relative path? Patterns read as in
    `.gitignore`: one without `/` matches at any depth (`Dockerfile`, `.env*`), `dir/` or
    `dir/**` everything below `dir`, `*` stays within a segment and `**` crosses segments."""
    pattern = pattern.strip()
    if not pattern:
        return False
    spec = _spec(pattern)
    if spec is None:
        return False
    if spec.match_file(path):
        return True
    return pattern.endswith("/**") and path == pattern[:-3].strip("/")  # the directory itself


# --- loading -------------------------------------------------------------------------------


class _Loc:
    """A value from a YAML block with the file line it came from."""

    __slots__ = ("line", "value")

    def __init__(self, value: Any, line: int) -> None:
        self.value = value
        self.line = line


def _located(node: yaml.Node, offset: int, constructor: yaml.constructor.SafeConstructor, label: str) -> _Loc:
    line = offset + node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping: dict[str, tuple[int, _Loc]] = {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise ConfigError(f"{label}:{offset + key_node.start_mark.line + 1}: keys must be strings")
            mapping[key] = (offset + key_node.start_mark.line + 1, _located(value_node, offset, constructor, label))
        return _Loc(mapping, line)
    if isinstance(node, yaml.SequenceNode):
        return _Loc([_located(item, offset, constructor, label) for item in node.value], line)
    return _Loc(constructor.construct_object(node, deep=True), line)


def _merge(base: _Loc | None, extra: _Loc) -> _Loc:
    if base is not None and isinstance(base.value, dict) and isinstance(extra.value, dict):
        merged = dict(base.value)
        for key, (kline, loc) in extra.value.items():
            old = merged.get(key)
            merged[key] = (kline, _merge(old[1] if old else None, loc))
        return _Loc(merged, base.line)
    return extra


def _yaml_blocks(text: str, label: str) -> list[tuple[int, str]]:
    """The fenced yaml blocks as (line offset of the first content line - 1, text)."""
    blocks: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```yaml":
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if j >= len(lines):
                raise ConfigError(f"{label}:{i + 1}: unterminated yaml fence")
            blocks.append((start, "\n".join(lines[start:j])))
            i = j + 1
        else:
            i += 1
    return blocks


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    return names.get(type(value), type(value).__name__)


def _strings(loc: _Loc, key: str, label: str) -> tuple[str, ...]:
    if loc.value is None:
        return ()
    if not isinstance(loc.value, list):
        raise ConfigError(f"{label}:{loc.line}: {key}: expected a list of strings, got {_type_name(loc.value)}")
    out: list[str] = []
    for item in loc.value:
        if not isinstance(item.value, str) or not item.value.strip():
            raise ConfigError(f"{label}:{item.line}: {key}: list entries must be non-empty strings")
        out.append(item.value.strip())
    return tuple(out)


def _mapping(loc: _Loc, key: str, label: str) -> dict[str, tuple[int, _Loc]]:
    if loc.value is None:
        return {}
    if not isinstance(loc.value, dict):
        raise ConfigError(f"{label}:{loc.line}: {key} must be a map")
    return loc.value  # type: ignore[no-any-return]


_PROFILE_TYPES = {f.name: str(f.type) for f in fields(Profile) if f.name != "name"}


def _profile(base: Profile, loc: _Loc, key: str, label: str) -> Profile:
    changes: dict[str, Any] = {}
    for name, (kline, value) in _mapping(loc, key, label).items():
        fkey = f"{key}.{name}"
        kind = _PROFILE_TYPES.get(name)
        if kind is None:
            allowed = ", ".join(sorted(_PROFILE_TYPES))
            raise ConfigError(f"{label}:{kline}: {fkey}: unknown key (allowed: {allowed})")
        raw = value.value
        if kind == "int":
            if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
                raise ConfigError(f"{label}:{value.line}: {fkey}: expected a nonnegative integer, got {raw!r}")
            changes[name] = raw
        elif kind == "bool":
            if not isinstance(raw, bool):
                raise ConfigError(f"{label}:{value.line}: {fkey}: expected true or false, got {raw!r}")
            changes[name] = raw
        else:
            changes[name] = _strings(value, fkey, label)
    return replace(base, **changes)


def parse_policy(text: str, label: str = POLICY_FILE) -> Policy:
    """Parse policy Markdown over the built-in defaults; `ConfigError` names the line and key."""
    tree: _Loc | None = None
    constructor = yaml.constructor.SafeConstructor()
    for offset, block in _yaml_blocks(text, label):
        try:
            node = yaml.compose(block, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{label}:{offset + mark.line + 1}" if mark is not None else label
            raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
        if node is None:
            continue
        try:
            loc = _located(node, offset, constructor, label)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{label}:{offset + 1}: invalid YAML: {exc}") from None
        if not isinstance(loc.value, dict):
            raise ConfigError(f"{label}:{loc.line}: a yaml block must be a map")
        tree = _merge(tree, loc)
    policy = Policy(source=label, version=hashlib.sha256(text.encode()).hexdigest())
    if tree is None:
        return policy
    profiles = dict(BUILTIN_PROFILES)
    high_paths, dangerous = policy.high_paths, policy.dangerous_commands
    tests = policy.tests
    allow: dict[str, bool] = {}
    for section, (sline, loc) in tree.value.items():
        if section == "consensus":
            for name, (_pline, ploc) in _mapping(loc, "consensus", label).items():
                key = f"consensus.{name}"
                if not isinstance(ploc.value, dict) and ploc.value is not None:
                    raise ConfigError(f"{label}:{ploc.line}: {key} must be a map")
                profiles[name] = _profile(profiles.get(name, Profile(name)), ploc, key, label)
        elif section == "risk":
            for name, (kline, value) in _mapping(loc, "risk", label).items():
                if name != "high_paths":
                    raise ConfigError(f"{label}:{kline}: risk.{name}: unknown key (allowed: high_paths)")
                high_paths = _strings(value, "risk.high_paths", label) or high_paths
        elif section == "commands":
            for name, (_kline, value) in _mapping(loc, "commands", label).items():
                # Other `commands.*` keys belong to other services (e.g. test allowlists).
                if name == "dangerous":
                    dangerous = _strings(value, "commands.dangerous", label) or dangerous
        elif section == "tests":
            tests = _tests_section(loc, label)
        elif section == "patches":
            for name, (kline, value) in _mapping(loc, "patches", label).items():
                if name not in _PATCH_KEYS:
                    allowed = ", ".join(_PATCH_KEYS)
                    raise ConfigError(f"{label}:{kline}: patches.{name}: unknown key (allowed: {allowed})")
                if not isinstance(value.value, bool):
                    got = value.value
                    raise ConfigError(f"{label}:{value.line}: patches.{name}: expected true or false, got {got!r}")
                allow[name] = value.value
        # Unknown top-level sections are left to the services that read them.
        del sline
    return replace(
        policy,
        profiles=profiles,
        high_paths=high_paths,
        dangerous_commands=dangerous,
        tests=tests,
        allow_symlinks=allow.get("allow_symlinks", False),
        allow_submodules=allow.get("allow_submodules", False),
        allow_mode_changes=allow.get("allow_mode_changes", False),
    )


_PATCH_KEYS = ("allow_symlinks", "allow_submodules", "allow_mode_changes")


def ensure_policy(value: object) -> Policy:
    """The runtime's policy, or the error the spec names when it is unavailable."""
    if not isinstance(value, Policy):
        raise ConfigError("policy evaluation unavailable")
    return value


_CURRENT: dict[str, tuple[tuple[int, int, int], Policy]] = {}


def current_policy(root: Path) -> Policy:
    """The policy file's policy for services that are not handed the runtime's (cached by the
    file's identity and mtime); an unreadable or invalid file gives the built-in defaults, which
    allow the least."""
    path = Path(root) / POLICY_FILE
    try:
        st = path.stat()
    except OSError:
        return Policy()
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _CURRENT.get(str(path))
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        policy = load_policy(root)
    except ConfigError:
        policy = Policy()
    _CURRENT[str(path)] = (key, policy)
    return policy


def load_policy(root: Path) -> Policy:
    """The policy of a project root: its POLICIES.ROUNDTABLE.md, or the built-in defaults."""
    path = Path(root) / POLICY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Policy()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"read policy file {path}: {exc}") from None
    return parse_policy(text, POLICY_FILE)
