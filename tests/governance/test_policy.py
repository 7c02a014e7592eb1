"""The policy engine: file format, built-in defaults, matching and evaluation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from roundtable.errors import ConfigError
from roundtable.services.policy.engine import Policy, load_policy, match_pattern, parse_policy

SCAFFOLD = Path(__file__).resolve().parents[2] / "roundtable" / "scaffold" / "POLICIES.ROUNDTABLE.md"


@dataclass(frozen=True)
class V:
    agent_id: str
    vote: str


def test_scaffold_equals_builtin_defaults() -> None:
    parsed = parse_policy(SCAFFOLD.read_text())
    builtin = Policy()
    assert parsed.profiles == builtin.profiles
    assert parsed.high_paths == builtin.high_paths
    assert parsed.dangerous_commands == builtin.dangerous_commands
    assert (parsed.allow_symlinks, parsed.allow_submodules, parsed.allow_mode_changes) == (False, False, False)
    assert (builtin.allow_symlinks, builtin.allow_submodules, builtin.allow_mode_changes) == (False, False, False)


@pytest.mark.parametrize(
    "path",
    [
        "POLICIES.ROUNDTABLE.md",
        "AGENTS.ROUNDTABLE.md",
        ".roundtable/config.yaml",
        ".github/workflows/ci.yml",
        ".github/actions/setup/action.yml",
        ".gitlab-ci.yml",
        ".circleci/config.yml",
        "Jenkinsfile",
        ".gitattributes",
        ".gitmodules",
        "Makefile",
        "tools/Makefile",
        "rules.mk",
        "Dockerfile",
        "Dockerfile.dev",
        "package.json",
        "pyproject.toml",
        "setup.py",
        "requirements-dev.txt",
        "poetry.lock",
        "uv.lock",
        "Cargo.lock",
        "go.sum",
        "Gemfile.lock",
        "build.gradle.kts",
        "CMakeLists.txt",
    ],
)
def test_governance_ci_and_build_files_are_high_risk_by_default(path: str) -> None:
    assert Policy().is_high_risk(path)
    assert parse_policy(SCAFFOLD.read_text()).is_high_risk(path)


@pytest.mark.parametrize("path", ["src/app.py", "README.md", "docs/build.md", "src/setup_helpers.py"])
def test_ordinary_files_are_not_high_risk(path: str) -> None:
    assert not Policy().is_high_risk(path)


def test_patches_section() -> None:
    policy = parse_policy("```yaml\npatches:\n  allow_symlinks: true\n  allow_mode_changes: true\n```\n")
    assert (policy.allow_symlinks, policy.allow_submodules, policy.allow_mode_changes) == (True, False, True)
    with pytest.raises(ConfigError, match=r":3: patches\.allow_links: unknown key"):
        parse_policy("```yaml\npatches:\n  allow_links: true\n```\n")
    with pytest.raises(ConfigError, match=r":3: patches\.allow_symlinks: expected true or false"):
        parse_policy("```yaml\npatches:\n  allow_symlinks: yes please\n```\n")
    # An allowed special path is high-risk whatever its name.
    result = Policy().evaluate("normal", ["src/link"], [], extra_high_paths=["src/link"])
    assert result.high_risk_paths == ("src/link",) and result.needs_human


def test_missing_file_is_builtin(tmp_path: Path) -> None:
    assert load_policy(tmp_path) == Policy()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "```yaml\nconsensus:\n  default:\n    approvals_required: two\n```\n",
            r":4: consensus\.default\.approvals_required",
        ),
        ("```yaml\nconsensus:\n  default:\n    tests_required: 1\n```\n", "expected true or false"),
        ("```yaml\nconsensus:\n  default:\n    approval_required: 1\n```\n", "unknown key"),
        ("```yaml\nrisk:\n  high_paths:\n    - ok\n    - 3\n```\n", r":5: risk\.high_paths: list entries"),
        ("```yaml\nconsensus: [1]\n```\n", r":2: consensus: expected a mapping, got list"),
        ("intro\n```yaml\nconsensus:\n  default: {\n```\n", ":3|:4|:5"),
        ("```yaml\nconsensus:\n", "unterminated yaml fence"),
    ],
)
def test_malformed_policy_names_key_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy(text)


def test_profile_override_keeps_unset_fields() -> None:
    policy = parse_policy("# x\n```yaml\nconsensus:\n  default:\n    approvals_required: 1\n```\n")
    assert policy.profiles["default"].approvals_required == 1
    assert policy.profiles["default"].tests_required is True
    assert policy.profiles["migration"].rollback_plan_required is True


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("**/.env*", "a/b/.env.local", True),
        (".env*", "x/.envrc", True),
        ("auth/**", "auth", True),
        ("auth/**", "auth/x/y.py", True),
        ("auth/**", "lib/auth/x.py", False),
        ("docker-compose*.yml", "docker-compose.dev.yml", True),
        ("Dockerfile", "svc/Dockerfile", True),
        ("src/*.py", "src/a/b.py", False),
        ("src/**/*.py", "src/a/b.py", True),
        ("[ab", "a", False),
        ("", "a", False),
        # .gitignore semantics (pathspec): a directory pattern covers what is inside it
        ("docs", "docs/guide/a.md", True),
        (".github/", ".github/workflows/ci.yml", True),
        (".github/", "src/.github/x.yml", True),
        ("/Makefile", "sub/Makefile", False),
        ("/Makefile", "Makefile", True),
        ("*.lock", "a/b/poetry.lock", True),
        ("!secret", "secret", False),
        # a slash inside anchors the pattern at the root; without one it matches at any depth
        ("a/b.txt", "a/b.txt", True),
        ("a/b.txt", "x/a/b.txt", False),
        ("auth/**", "src/auth/x", False),
        ("infra/**", "infrastructure/x", False),
        ("docs/*.md", "docs/a.md", True),
        ("docs/*.md", "docs/x/a.md", False),
        ("*", "a/b", True),
        # ** spans zero or more directories
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("**/foo", "foo", True),
        ("**/foo", "x/y/foo", True),
        ("**", "anything/here", True),
        # character classes, one-character wildcards, escapes, case
        ("file[0-9].txt", "file7.txt", True),
        ("file[0-9].txt", "filex.txt", False),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("\\*star", "*star", True),
        ("\\*star", "xstar", False),
        ("*.PY", "a.py", True),  # case does not count (makefile is Makefile to make)
        ("Makefile", "sub/makefile", True),
        # a trailing slash names a directory: what is inside, never a file of that name
        ("build/", "build/x", True),
        ("build/", "build", False),
        # surrounding spaces are ignored; a leading # is a comment in .gitignore (escape it)
        ("  Makefile  ", "Makefile", True),
        ("#notes", "#notes", False),
        ("\\#notes", "#notes", True),
    ],
)
def test_match_pattern(pattern: str, path: str, hit: bool) -> None:
    assert match_pattern(pattern, path) is hit


def test_evaluate() -> None:
    policy = Policy()
    r = policy.evaluate("normal", ["src/a.py"], [V("r1", "approve"), V("r2", "approve_with_notes")])
    assert r.approvable and r.summary == "proposal satisfies policy consensus" and r.tests_required
    r = policy.evaluate("normal", ["src/a.py"], [V("r1", "approve")])
    assert not r.approvable and r.summary == "insufficient approvals: need 2"
    r = policy.evaluate("normal", ["src/a.py"], [V("r1", "approve"), V("r2", "approve"), V("r3", "veto")])
    assert r.needs_human and r.vetoes == 1 and r.summary == "security veto blocks proposal"
    r = policy.evaluate("normal", ["go.mod"], [V("r1", "approve"), V("r2", "approve")])
    assert r.profiles == ("dependency_change",) and r.needs_human and r.security_review_required
    assert r.high_risk_paths == ("go.mod",)
    r = policy.evaluate("normal", ["migrations/1.sql"], [])
    assert r.rollback_plan_required and "Architect" in r.required_roles
    r = policy.evaluate("critical", ["src/a.py"], [V("r1", "approve"), V("r2", "approve")])
    assert r.summary == "human approval required for high-risk proposal" and not r.approvable


@pytest.mark.parametrize(
    ("path", "hit"),
    [
        (".env", True),
        ("services/api/.env.local", True),
        ("auth/login.py", True),
        ("infra/main.tf", True),
        ("migrations/0001.sql", True),
        ("web/package.json", True),
        ("svc/go.mod", True),
        (".github/CODEOWNERS", True),
        (".roundtable/config.yaml", True),
        ("deploy/docker-compose.prod.yml", True),
        ("ci/azure-pipelines.yml", True),
        ("gems/x.gemspec", True),
        ("src/auth.py", False),
        ("docs/infra.md", False),
        ("src/environment.py", False),
        ("lib/Makefile.py", False),
        ("notes/requirements.md", False),
    ],
)
def test_builtin_high_paths(path: str, hit: bool) -> None:
    assert Policy().is_high_risk(path) is hit


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # the line counts from the top of the Markdown file, through every block
        (
            "# P\n\ntext\n```yaml\nrisk:\n  high_path: []\n```\n",
            r"^POLICIES\.ROUNDTABLE\.md:6: risk\.high_path: unknown key \(allowed: high_paths\)$",
        ),
        (
            "```yaml\nrisk: {}\n```\n\n```yaml\nconsensus:\n  default:\n    blockers_allowed: -1\n```\n",
            r"^POLICIES\.ROUNDTABLE\.md:8: consensus\.default\.blockers_allowed: must be at least 0 \(got -1\)$",
        ),
        (
            "```yaml\nconcensus: {}\n```\n",
            r":2: concensus: unknown key \(allowed: claims, commands, consensus, forge_ci, patches, risk, tests, workspaces\)",
        ),
        ("```yaml\ncommands:\n  allowed: [ls]\n```\n", r":3: commands\.allowed: unknown key \(allowed: dangerous\)"),
        (
            "```yaml\ntests:\n  sandbox: docker\n```\n",
            r":3: tests\.sandbox: must be one of auto, bwrap, landlock \(got 'docker'\)",
        ),
        (
            "```yaml\ntests:\n  timeout_seconds: 0\n```\n",
            r":3: tests\.timeout_seconds: expected seconds in \(0, 86400\], got 0",
        ),
        ("```yaml\ntests:\n  memory_mb: 8\n```\n", r":3: tests\.memory_mb: must be at least 16 \(got 8\)"),
        (
            "```yaml\ntests:\n  read_paths:\n    - /opt\n    - lib\n```\n",
            r":5: tests\.read_paths: 'lib' is not an absolute path",
        ),
        (
            "```yaml\ntests:\n  commands:\n    ' unit': [pytest]\n```\n",
            r":4: tests\.commands\[' unit'\]: command names must be non-empty",
        ),
        (
            "```yaml\ntests:\n  commands:\n    unit: []\n```\n",
            r":4: tests\.commands\.unit: expected a non-empty list of arguments",
        ),
        (
            "```yaml\ntests:\n  commands:\n    unit: pytest\n```\n",
            r":4: tests\.commands\.unit: expected a list, got string",
        ),
        ("```yaml\n- a\n```\n", r":2: a yaml block must be a map"),
    ],
)
def test_policy_errors_name_file_line_key_and_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_policy(text)


def test_later_blocks_override_earlier_ones_and_empty_lists_keep_the_defaults() -> None:
    policy = parse_policy(
        "```yaml\nconsensus:\n  default:\n    approvals_required: 3\nrisk:\n  high_paths: [a/**]\n```\n"
        "```yaml\nconsensus:\n  default:\n    blockers_allowed: 1\n  custom:\n    tests_required: true\n"
        "commands:\n  dangerous: []\n```\n"
    )
    default = policy.profiles["default"]
    assert (default.approvals_required, default.blockers_allowed, default.tests_required) == (3, 1, True)
    assert policy.profiles["custom"].tests_required and policy.profiles["custom"].approvals_required == 0
    assert policy.high_paths == ("a/**",)
    assert policy.dangerous_commands == Policy().dangerous_commands
    tests = parse_policy("```yaml\ntests:\n  commands:\n    unit: [python3, -m, pytest]\n```\n").tests
    assert tests.commands == {"unit": ("python3", "-m", "pytest")}
    assert tests.to_dict()["commands"] == {"unit": ["python3", "-m", "pytest"]}
