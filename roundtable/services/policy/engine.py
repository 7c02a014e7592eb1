"""The policy engine: path profiles, high-risk paths and consensus over `POLICIES.ROUNDTABLE.md`.

The file's format, its models and the built-in defaults are `policy.file`'s; a missing file
means those defaults (which equal the YAML of the scaffolded file). `Policy` is the effective
policy one owner runs with.

`Policy.evaluate` turns (risk, touched paths, current votes) into a `PolicyResult`: counts,
whether the votes alone make the proposal approvable, whether a human must approve, and which
further gates (tests, rollback plan, security review) the detected profiles demand.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import pathspec
from pydantic import BaseModel, ConfigDict, Field

from roundtable.domain import Risk, Vote, approving
from roundtable.errors import ConfigError
from roundtable.services.policy.file import (
    ALWAYS_HIGH_PATHS,
    BUILTIN_DANGEROUS,
    BUILTIN_HIGH_PATHS,
    BUILTIN_PROFILES,
    POLICY_FILE,
    Profile,
    TestsPolicy,
    read_policy_file,
)

# The vote vocabulary is `domain.Vote`'s; a veto is handled on its own, so it is not "blocking" here.
APPROVING_VOTES = tuple(v.value for v in Vote if approving(v))
BLOCKING_VOTES = (Vote.REVISE.value, Vote.REJECT.value)
VOTE_VOCABULARY = tuple(v.value for v in Vote)
HIGH_RISK_LEVELS = (Risk.HIGH, Risk.CRITICAL)
DEPENDENCY_FILES = ("go.mod", "go.sum", "package.json", "package-lock.json", "pnpm-lock.yaml", "yarn.lock")


class VoteLike(Protocol):
    @property
    def agent_id(self) -> str: ...

    @property
    def vote(self) -> str: ...


@dataclass(frozen=True)
class PolicyResult:
    """What the policy says about one proposal revision (plus the gates we enforce)."""

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


class Policy(BaseModel):
    """The effective policy: profiles by name, high-risk path patterns, dangerous commands."""

    model_config = ConfigDict(frozen=True)

    profiles: dict[str, Profile] = Field(default_factory=lambda: dict(BUILTIN_PROFILES))
    high_paths: tuple[str, ...] = BUILTIN_HIGH_PATHS
    dangerous_commands: tuple[str, ...] = BUILTIN_DANGEROUS
    tests: TestsPolicy = Field(default_factory=TestsPolicy)
    # `patches:` — what a patch may do beyond changing regular files (each allowed one is high-risk).
    allow_symlinks: bool = False
    allow_submodules: bool = False
    allow_mode_changes: bool = False
    # `claims.auto_on_propose` and `workspaces.keep_days` (see `services.workspaces.worktrees`).
    auto_claim_on_propose: bool = True
    workspace_keep_days: int = 0
    # `forge_ci.required`: check names or patterns that must succeed on the landing commit.
    forge_ci_required: tuple[str, ...] = ()
    source: str = "built-in"
    version: str = "built-in"

    def profile(self, name: str) -> Profile:
        return self.profiles.get(name) or Profile(name=name)

    def is_high_risk(self, rel_path: str) -> bool:
        """Whether a change to `rel_path` needs a human: it matches `ALWAYS_HIGH_PATHS` (the rules
        and the files that decide what a test command does) or the policy's `risk.high_paths`,
        case-insensitively (`makefile` is as high-risk as `Makefile`)."""
        return any(match_pattern(p, rel_path) for p in ALWAYS_HIGH_PATHS) or any(
            match_pattern(p, rel_path) for p in self.high_paths
        )

    def detect_profiles(self, paths: Iterable[str]) -> list[str]:
        """Profiles implied by the touched paths, sorted."""
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
            elif vote.vote == Vote.VETO:
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
    `dir/**` everything below `dir`, `*` stays within a segment and `**` crosses segments.
    Case does not count: tools read `makefile` as readily as `Makefile`, and a checkout on a
    case-insensitive file system makes `policies.roundtable.md` the rules file itself."""
    pattern = pattern.strip().lower()
    path = path.lower()
    if not pattern:
        return False
    spec = _spec(pattern)
    if spec is None:
        return False
    if spec.match_file(path):
        return True
    return pattern.endswith("/**") and path == pattern[:-3].strip("/")  # the directory itself


# --- loading -------------------------------------------------------------------------------


def parse_policy(text: str, label: str = POLICY_FILE) -> Policy:
    """Parse policy Markdown over the built-in defaults; `ConfigError` names the line and key."""
    file = read_policy_file(text, label)
    return Policy(
        profiles=file.profiles(),
        high_paths=file.risk.high_paths or BUILTIN_HIGH_PATHS,
        dangerous_commands=file.commands.dangerous or BUILTIN_DANGEROUS,
        tests=file.tests,
        allow_symlinks=file.patches.allow_symlinks,
        allow_submodules=file.patches.allow_submodules,
        allow_mode_changes=file.patches.allow_mode_changes,
        auto_claim_on_propose=file.claims.auto_on_propose,
        workspace_keep_days=file.workspaces.keep_days,
        forge_ci_required=file.forge_ci.required,
        source=label,
        version=hashlib.sha256(text.encode()).hexdigest(),
    )


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
