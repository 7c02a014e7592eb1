"""The format of `POLICIES.ROUNDTABLE.md`: pydantic models of its YAML, the built-in defaults,
and reading the fenced blocks.

Only fenced blocks opened by a line that is exactly ```` ```yaml ```` are read, each with
`yaml.safe_load` semantics, and deep-merged in order (maps merge, later scalars and lists
replace). The result is laid over the built-in defaults, so a profile named in the file
overrides only the fields it sets (the reference reset the others to 0/false, which silently
weakened a policy when one key was edited), and validated by models that forbid unknown keys: a
typo such as `consensus.default.approval_required` is an error, never a silently ignored rule.
An empty `risk.high_paths` or `commands.dangerous` keeps the built-in list. Errors name the file,
the line and the key (`located_yaml`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    ValidationError,
    model_validator,
)

from roundtable.errors import ConfigError
from roundtable.located_yaml import Located, load_yaml, merge, overlay, validation_error

POLICY_FILE = "POLICIES.ROUNDTABLE.md"
SANDBOX_MODES = ("auto", "bwrap", "landlock")
MAX_TEST_TIMEOUT_S = 24 * 3600


# --- value types ---------------------------------------------------------------------------------


def _entry(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"list entries must be non-empty strings (got {value!r})")
    return value.strip()


def _none_is_empty(value: object) -> object:
    return () if value is None else value


def _at_least(minimum: int) -> AfterValidator:
    def check(value: int) -> int:
        if value < minimum:
            raise ValueError(f"must be at least {minimum} (got {value})")
        return value

    return AfterValidator(check)


def _absolute(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute path")
    return path


def _command_name(name: str) -> str:
    if not name.strip() or name != name.strip() or any(c in name for c in "\n\r\t"):
        raise ValueError("command names must be non-empty, without spaces around")
    return name


def _arguments(argv: tuple[str, ...]) -> tuple[str, ...]:
    if not argv:
        raise ValueError("expected a non-empty list of arguments")
    return argv


def _timeout(seconds: float) -> float:
    if not 0 < seconds <= MAX_TEST_TIMEOUT_S:
        raise ValueError(f"expected seconds in (0, {MAX_TEST_TIMEOUT_S}], got {seconds!r}")
    return float(seconds)


Count = Annotated[StrictInt, _at_least(0)]
Entry = Annotated[str, BeforeValidator(_entry)]
Entries = Annotated[tuple[Entry, ...], BeforeValidator(_none_is_empty)]
AbsolutePath = Annotated[Entry, AfterValidator(_absolute)]
CommandName = Annotated[str, AfterValidator(_command_name)]
Arguments = Annotated[tuple[Entry, ...], BeforeValidator(_none_is_empty), AfterValidator(_arguments)]


class Rules(BaseModel):
    """A mapping of the policy file: unknown keys are errors; an empty one (`patches:`) is no change."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _empty_is_defaults(cls, data: Any) -> Any:
        return {} if data is None else data


# --- the sections --------------------------------------------------------------------------------


class ProfileRules(Rules):
    """One consensus profile as the file writes it (`consensus.<name>`)."""

    approvals_required: Count = 0
    blockers_allowed: Count = 0
    required_roles: Entries = ()
    tests_required: StrictBool = False
    security_veto_blocks: StrictBool = False
    human_approval_required: StrictBool = False
    security_approval_required: StrictBool = False
    rollback_plan_required: StrictBool = False


class Profile(ProfileRules):
    """One consensus profile with its name, as the policy engine uses it."""

    name: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, **self.model_dump(exclude={"name"})}
        out["required_roles"] = list(self.required_roles)
        return out


class TestsPolicy(Rules):
    """`tests:` in the policy file. `commands` maps a name to an exact argv (empty: the commands
    implied by the repository's markers); agents choose among them, never free text."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    commands: Annotated[dict[CommandName, Arguments], BeforeValidator(lambda v: {} if v is None else v)] = Field(
        default_factory=dict
    )
    sandbox: Literal["auto", "bwrap", "landlock"] = "auto"
    timeout_seconds: Annotated[float, Strict(), AfterValidator(_timeout)] = 600.0
    memory_mb: Annotated[StrictInt, _at_least(16)] = 2048
    max_processes: Annotated[StrictInt, _at_least(1)] = 512
    read_paths: Annotated[tuple[AbsolutePath, ...], BeforeValidator(_none_is_empty)] = ()

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump()
        out["commands"] = {name: list(argv) for name, argv in self.commands.items()}
        out["read_paths"] = list(self.read_paths)
        return out


BUILTIN_PROFILES: dict[str, Profile] = {
    "default": Profile(name="default", approvals_required=2, tests_required=True),
    "architecture": Profile(name="architecture", approvals_required=2, required_roles=("Architect", "Reviewer")),
    "security": Profile(
        name="security", required_roles=("Security",), security_veto_blocks=True, human_approval_required=True
    ),
    "dependency_change": Profile(
        name="dependency_change", required_roles=("Security", "Tester"), human_approval_required=True
    ),
    "destructive_command": Profile(
        name="destructive_command", human_approval_required=True, security_approval_required=True
    ),
    "migration": Profile(
        name="migration",
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
# High-risk whatever `risk.high_paths` says: that list adds paths, it never removes these. The
# rules themselves, and every file that changes what a configured test command does — a proposal
# that edits one can turn the tests gate green without fixing anything (a lowercase `makefile`
# that GNU make reads before `Makefile`, a `conftest.py` that skips every test, a `.pth` file
# that runs at interpreter start-up). Patterns match case-insensitively, like every high path.
GOVERNANCE_PATHS: tuple[str, ...] = (
    "POLICIES.ROUNDTABLE.md",
    "AGENTS.ROUNDTABLE.md",
    "PROJECT.ROUNDTABLE.md",
    ".roundtable/**",
)
TEST_CONFIG_PATHS: tuple[str, ...] = (
    # make (GNUmakefile, makefile, Makefile: one pattern each, matched case-insensitively)
    "GNUmakefile",
    "makefile",
    "*.mk",
    "justfile",
    "Taskfile.yml",
    "Taskfile.yaml",
    # Python: pytest, tox, nox, setuptools, coverage, and what the interpreter runs at start-up
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "setup.py",
    "pyproject.toml",
    "noxfile.py",
    ".coveragerc",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    # JavaScript: package scripts, package-manager settings, test runners and the transforms they load
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "deno.json",
    "deno.jsonc",
    "bunfig.toml",
    "jest.config.*",
    "vitest.config.*",
    "vitest.workspace.*",
    "vite.config.*",
    ".mocharc*",
    "karma.conf.*",
    "ava.config.*",
    "playwright.config.*",
    "cypress.config.*",
    "babel.config.*",
    ".babelrc*",
    # PHP, Ruby, Rust, Go, the JVM, C and C++
    "phpunit.xml*",
    "composer.json",
    "Rakefile",
    "Gemfile",
    ".rspec*",
    "Cargo.toml",
    "build.rs",
    ".cargo/**",
    "go.mod",
    "go.work",
    "pom.xml",
    "build.gradle*",
    "settings.gradle*",
    "gradlew",
    "CMakeLists.txt",
    "*.cmake",
    "meson.build",
)
ALWAYS_HIGH_PATHS: tuple[str, ...] = GOVERNANCE_PATHS + TEST_CONFIG_PATHS
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


class RiskRules(Rules):
    high_paths: Entries = BUILTIN_HIGH_PATHS


class CommandRules(Rules):
    dangerous: Entries = BUILTIN_DANGEROUS


class PatchRules(Rules):
    """What a patch may do beyond changing regular files (each allowed one is high-risk)."""

    allow_symlinks: StrictBool = False
    allow_submodules: StrictBool = False
    allow_mode_changes: StrictBool = False


class ClaimRules(Rules):
    """How claims are taken beyond `resource_claim`."""

    # `workspace_propose` claims (write) the touched paths nobody else holds on the author's behalf.
    auto_on_propose: StrictBool = True


class WorkspaceRules(Rules):
    """How long a workspace outlives its task (0: removed once the task completes or is cancelled)."""

    keep_days: Count = 0


class ForgeCiRules(Rules):
    """`forge_ci:` — the forge's checks that must have succeeded on the commit roundtable built
    from the current revision (check-run or commit-status names, or shell-style patterns such as
    `test (*)`). Empty (the default): the gate is off."""

    required: Entries = ()


class PolicyFile(Rules):
    """Everything the fenced blocks may say, over the built-in defaults."""

    consensus: dict[str, ProfileRules] = Field(
        default_factory=lambda: {n: ProfileRules(**p.model_dump(exclude={"name"})) for n, p in BUILTIN_PROFILES.items()}
    )
    risk: RiskRules = RiskRules()
    commands: CommandRules = CommandRules()
    tests: TestsPolicy = Field(default_factory=TestsPolicy)
    patches: PatchRules = PatchRules()
    claims: ClaimRules = ClaimRules()
    workspaces: WorkspaceRules = WorkspaceRules()
    forge_ci: ForgeCiRules = ForgeCiRules()

    def profiles(self) -> dict[str, Profile]:
        return {name: Profile(name=name, **rules.model_dump()) for name, rules in self.consensus.items()}


# --- reading -------------------------------------------------------------------------------------


def yaml_blocks(text: str, label: str) -> list[tuple[int, str]]:
    """The fenced yaml blocks as (file line of the block's first content line, text)."""
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
            blocks.append((start + 1, "\n".join(lines[start:j])))
            i = j + 1
        else:
            i += 1
    return blocks


def read_policy_file(text: str, label: str = POLICY_FILE) -> PolicyFile:
    """The policy Markdown's blocks, merged over the built-in defaults and validated;
    `ConfigError` names the line and key of every problem."""
    tree: Located | None = None
    for first_line, block in yaml_blocks(text, label):
        located = load_yaml(block, label, first_line=first_line)
        if located.data is None:
            continue
        if not isinstance(located.data, dict):
            raise ConfigError(f"{located.where(())}: a yaml block must be a map")
        tree = merge(tree, located)
    if tree is None:
        return PolicyFile()
    try:
        return PolicyFile.model_validate(overlay(PolicyFile().model_dump(), tree.data))
    except ValidationError as exc:
        raise validation_error(exc, tree, PolicyFile) from None
