"""Gate evaluation: may the current revision of a proposal be applied, and if not, why?

One report, one entry per gate, each pass/fail with a reason:

- `status` — the proposal is open (`pending` or `in_review`);
- `patch` — the current revision's stored file exists, matches its hash and parses;
- `claims` — the author still holds write/exclusive claims covering every touched file (file or
  directory claims, or symbol claims whose spans contain every hunk) with the same fencing
  numbers recorded when the revision was attached;
- `dry_run` — `git apply --check` accepts the patch against the tree (run by the caller, outside
  any database transaction, and passed in);
- `policy` — the current-revision votes make the proposal approvable, or a human approval is
  selected;
- `approval` — the operator's own word: their latest decision on this revision is not a denial
  (a denial blocks until a later approval); with no decision, the policy must not require one
  (an apply then records the operator's implicit approval);
- `security` — not required, or the latest review *of this revision* approves (or vetoes with
  an operator override);
- `tests` — not required, or the latest host-executed test run of this revision passed (and, if
  the proposal lists `expected_tests`, the latest run of each of those commands passed);
  agent-reported evidence (status `reported`) never counts;
- `rollback_plan` — not required, or the proposal has rollback notes;
- `forge_ci` — only when the policy's `forge_ci.required` names checks: each required check run
  or commit status succeeded on the commit roundtable built from the current revision (its
  landing row); a check on any other SHA never counts, and a new revision, which gets a new
  commit, starts with no evidence.

Evidence binds to the revision: votes, approvals, reviews and test runs whose `revision` is not
the proposal's `current_revision` are ignored. Approvals are per revision: an
approval the operator gave to an older patch does not approve new bytes. Only approvals with a
`decided_by` (which only the operator can set) count.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roundtable.domain import NARROWED, OPEN_PROPOSAL_STATUSES, ApprovalStatus, ReviewStatus, TestRunStatus
from roundtable.errors import ToolError
from roundtable.services.coordination.claims import covering_write_claims, expired_note, symbol_write_claims
from roundtable.services.governance.approvals import latest_decision
from roundtable.services.policy.engine import Policy, PolicyResult
from roundtable.services.repository.patches import ParsedPatch, allowances, parse_patch, read_patch
from roundtable.store.db import Reader, Tx
from roundtable.store.records import (
    HumanApproval,
    Landing,
    PatchRevision,
    Proposal,
    SecurityReview,
    TestRun,
    Vote,
)

OPEN_STATUSES = tuple(sorted(OPEN_PROPOSAL_STATUSES, reverse=True))  # pending, in_review (domain)
HOST_RUN_EXCLUDED = ("reported", "running", "queued")


@dataclass(frozen=True)
class Gate:
    name: str
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "reason": self.reason}


@dataclass
class ClaimCheck:
    """Which claims cover a patch: `fences` maps claim id → fencing number; `error` is `""` if
    every change is covered."""

    fences: dict[str, int] = field(default_factory=dict)
    error: str = ""


async def check_claims(q: Reader | Tx, author: str, parsed: ParsedPatch, now: str) -> ClaimCheck:
    """Coverage of every change of `parsed` by `author`'s live write/exclusive claims."""
    covering = await covering_write_claims(q, author, list(parsed.touched), now)
    out = ClaimCheck()
    for change in parsed.changes:
        uncovered = [p for p in change.paths if p not in covering]
        for p in change.paths:
            if p in covering:
                out.fences[covering[p].id] = covering[p].fence
        if not uncovered:
            continue
        if change.is_new or change.is_delete or change.is_rename or change.is_copy:
            out.error = f"patch operation requires file or directory claim coverage: {change.describe()}"
            return out
        path = uncovered[0]
        symbols = await symbol_write_claims(q, author, path, now)
        spans = [(r.start_line, r.end_line, c) for c, r in symbols if r.start_line > 0 and r.end_line >= r.start_line]
        if not spans:
            note = await expired_note(q, author, f"file:{path}", now)
            out.error = f"unclaimed affected resource: file:{path}{note}"
            return out
        for start, end in parsed.ranges.get(path, ()):
            hits = [c for s, e, c in spans if start <= e and s <= end]
            if not hits:
                out.error = f"patch touches lines outside claimed symbols in {path} at {start}-{end}"
                return out
            for claim in hits:
                out.fences[claim.id] = claim.fence
    return out


def normalise_command(command: str) -> str:
    try:
        return " ".join(shlex.split(command))
    except ValueError:
        return command.strip()


def select_approval(result: PolicyResult, approvals: list[HumanApproval]) -> HumanApproval | None:
    """The human gate over approvals of the current revision (ordered oldest first)."""
    if not result.needs_human or result.blockers > result.vetoes:
        return None
    for approval in reversed(approvals):
        if approval.status != ApprovalStatus.APPROVED or not approval.decided_by:
            continue
        if result.vetoes > 0 and not approval.override_policy:
            continue
        return approval
    return None


@dataclass
class GateReport:
    proposal: Proposal
    revision: PatchRevision | None
    parsed: ParsedPatch | None
    gates: list[Gate]
    policy: PolicyResult | None
    votes: list[Vote]
    approvals: list[HumanApproval]
    approval: HumanApproval | None
    reviews: list[SecurityReview]
    review: SecurityReview | None
    test_runs: list[TestRun]
    claim_fences: dict[str, int]

    @property
    def ok(self) -> bool:
        return all(g.passed for g in self.gates)

    def failures(self) -> list[Gate]:
        return [g for g in self.gates if not g.passed]

    def gate(self, name: str) -> Gate | None:
        return next((g for g in self.gates if g.name == name), None)

    def error(self) -> str:
        """The refusal text for the first failing gate (stable prefixes for callers)."""
        first = self.failures()[0]
        if first.name in ("policy", "approval", "security", "tests", "rollback_plan"):
            return f"proposal not approvable: {first.reason}"
        return f"proposal validation failed: {first.name}: {first.reason}"

    def summary(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "revision": self.proposal.current_revision,
            "revision_number": self.proposal.revision_number,
            "gates": [g.to_dict() for g in self.gates],
        }


# Agent roles (compared lower-case) whose votes count towards consensus: the reviewing roles the
# policy's profiles name. Implementers, the Chair and the memory oracle do not vote.
VOTING_ROLES: tuple[str, ...] = ("reviewer", "architect", "tester", "security")


async def current_votes(q: Reader | Tx, proposal: Proposal) -> list[Vote]:
    """Votes on the current revision, one per agent (the latest), oldest first. Only votes the
    policy counts: from registered, enabled agents with a voting role, never the author's."""
    roles = ", ".join("?" for _ in VOTING_ROLES)
    rows = await q.all(
        Vote,
        "SELECT v.* FROM votes v JOIN agents a ON a.id = v.agent_id"
        f" WHERE v.proposal_id = ? AND v.revision = ? AND v.agent_id != ? AND a.is_enabled = 1"
        f" AND lower(a.role) IN ({roles}) ORDER BY v.created_at, v.id",
        (proposal.id, proposal.current_revision, proposal.agent_id, *VOTING_ROLES),
    )
    latest: dict[str, Vote] = {}
    for vote in rows:
        latest.pop(vote.agent_id, None)
        latest[vote.agent_id] = vote
    return list(latest.values())


async def evaluate(
    q: Reader | Tx,
    root: Path,
    policy: Policy,
    proposal: Proposal,
    now: str,
    *,
    dry_run_error: str | None = None,
    parsed: ParsedPatch | None = None,
) -> GateReport:
    """Evaluate every gate for the proposal's current revision. File reads are small (one patch);
    `dry_run_error` is `None` when the caller did not run the dry run (the gate is then reported
    as not checked, and fails)."""
    rev_sha = proposal.current_revision
    gates: list[Gate] = [status_gate(proposal)]
    revision = await q.one(
        PatchRevision,
        "SELECT * FROM patch_revisions WHERE proposal_id = ? AND number = ?",
        (proposal.id, proposal.revision_number),
    )
    if parsed is None and revision is not None and rev_sha:
        try:
            parsed = parse_patch(read_patch(root, rev_sha), root, allowances(policy))
        except ToolError as exc:
            gates.append(Gate("patch", False, str(exc)))
    if revision is None or not rev_sha:
        gates.append(Gate("patch", False, "proposal has no patch revision"))
    elif parsed is not None:
        gates.append(Gate("patch", True, f"revision {proposal.revision_number} ({rev_sha[:12]}) parses"))

    fences: dict[str, int] = {}
    if parsed is not None and revision is not None:
        check = await check_claims(q, proposal.agent_id, parsed, now)
        fences = check.fences
        gates.append(claims_gate(check, json.loads(revision.claim_fences_json or "{}"), revision.number))
    else:
        gates.append(Gate("claims", False, "not checked: the patch is unavailable"))
    gates.append(dry_run_gate(dry_run_error))

    votes = await current_votes(q, proposal)
    touched = list(parsed.touched) if parsed is not None else []
    special = list(parsed.special) if parsed is not None else []
    result = policy.evaluate(proposal.risk, touched, votes, extra_high_paths=special)
    approvals = await q.all(
        HumanApproval,
        "SELECT * FROM human_approvals WHERE proposal_id = ? AND revision = ? ORDER BY created_at, id",
        (proposal.id, rev_sha),
    )
    approval = select_approval(result, approvals)
    gates.append(policy_gate(result, approval))
    gates.append(approval_gate(result, approvals, proposal))

    reviews = await q.all(
        SecurityReview,
        "SELECT * FROM security_reviews WHERE proposal_id = ? AND revision = ? ORDER BY created_at, id",
        (proposal.id, rev_sha),
    )
    review = reviews[-1] if reviews else None
    gates.append(security_gate(result, review, approval))

    runs = await q.all(
        TestRun,
        "SELECT * FROM test_runs WHERE proposal_id = ? AND revision = ? ORDER BY created_at, id",
        (proposal.id, rev_sha),
    )
    gates.append(tests_gate(result, proposal, runs))
    gates.append(rollback_plan_gate(result, proposal))
    if policy.forge_ci_required:
        landing = await q.one(Landing, "SELECT * FROM landings WHERE proposal_id = ?", (proposal.id,))
        gates.append(forge_ci_gate(policy.forge_ci_required, proposal, landing))

    return GateReport(
        proposal=proposal,
        revision=revision,
        parsed=parsed,
        gates=gates,
        policy=result,
        votes=votes,
        approvals=approvals,
        approval=approval,
        reviews=reviews,
        review=review,
        test_runs=runs,
        claim_fences=fences,
    )


# --- the gates, each a pure function of what `evaluate` read --------------------------------


def status_gate(proposal: Proposal) -> Gate:
    """Only an open proposal (`pending` or `in_review`) can be applied."""
    if proposal.status in OPEN_STATUSES:
        return Gate("status", True, f"proposal is {proposal.status}")
    return Gate(
        "status",
        False,
        f"proposal is {proposal.status or 'in no state'}; only pending or in_review proposals can be applied",
    )


def claims_gate(check: ClaimCheck, recorded: dict[str, int], revision_number: int) -> Gate:
    """Every change is covered (`check`), by the very claims — same fencing numbers — that were
    recorded when the revision was attached (`recorded`: claim id → fence)."""
    if check.error:
        return Gate("claims", False, check.error)
    changed = sorted(cid for cid, fence in check.fences.items() if recorded.get(cid) != fence)
    if changed:
        return Gate(
            "claims",
            False,
            f"claims changed since revision {revision_number} was attached ({', '.join(changed)}); "
            "attach the patch again",
        )
    return Gate("claims", True, f"{len(check.fences)} claim(s) cover the patch")


def dry_run_gate(dry_run_error: str | None) -> Gate:
    """`git apply --check` accepted the patch (`""`), refused it (its error), or was not run (`None`)."""
    if dry_run_error is None:
        return Gate("dry_run", False, "not checked")
    if dry_run_error:
        return Gate("dry_run", False, dry_run_error)
    return Gate("dry_run", True, "git apply --check accepts the patch")


def policy_gate(result: PolicyResult, approval: HumanApproval | None) -> Gate:
    """The votes make the proposal approvable, or a human approval (`select_approval`) stands in."""
    if result.approvable:
        return Gate("policy", True, result.summary)
    if approval is not None:
        return Gate("policy", True, f"human approval {approval.id} by {approval.decided_by}")
    return Gate("policy", False, result.summary)


def approval_gate(result: PolicyResult, approvals: list[HumanApproval], proposal: Proposal) -> Gate:
    """The operator's latest decision on the current revision is not a denial; without one, the
    policy does not require it (applying then counts as the operator's approval)."""
    number = proposal.revision_number
    latest = latest_decision(approvals, proposal.current_revision)
    if latest is not None and latest.status != ApprovalStatus.APPROVED:
        note = f": {latest.decision_md.strip().splitlines()[0][:120]}" if (latest.decision_md or "").strip() else ""
        return Gate(
            "approval",
            False,
            f"you {latest.status.replace('_', ' ')} revision {number} ({latest.id}{note}); approve it to apply",
        )
    if latest is not None:
        return Gate("approval", True, f"revision {number} approved by {latest.decided_by} ({latest.id})")
    if result.needs_human:
        asked = next((a for a in reversed(approvals) if a.status == ApprovalStatus.REQUESTED), None)
        waiting = f" (request {asked.id} is waiting)" if asked is not None else ""
        return Gate("approval", False, f"the policy requires your approval of revision {number}{waiting}")
    return Gate(
        "approval",
        True,
        f"no approval required by the policy; applying records your approval of revision {number}",
    )


def security_gate(result: PolicyResult, review: SecurityReview | None, approval: HumanApproval | None) -> Gate:
    """No review required, or the latest review of this revision approves, or its veto is
    overridden by the selected human approval."""
    if not result.security_review_required:
        return Gate("security", True, "no security review required")
    if review is None:
        return Gate("security", False, "security review required")
    if review.status == ReviewStatus.APPROVED:
        return Gate("security", True, f"security review {review.id} approved")
    if review.status == ReviewStatus.VETO and approval is not None and approval.override_policy:
        return Gate("security", True, f"security veto overridden by approval {approval.id}")
    return Gate("security", False, f"security review required (latest review {review.id} is {review.status})")


def rollback_plan_gate(result: PolicyResult, proposal: Proposal) -> Gate:
    """Rollback notes are present when a matching profile requires them."""
    if result.rollback_plan_required and not proposal.rollback_notes.strip():
        return Gate("rollback_plan", False, f"rollback notes required by profile {', '.join(result.profiles)}")
    return Gate("rollback_plan", True, "rollback notes present" if result.rollback_plan_required else "not required")


def tests_gate(result: PolicyResult, proposal: Proposal, runs: list[TestRun]) -> Gate:
    """No tests required, or the latest host-executed run of this revision passed — of each
    expected command when the proposal lists `expected_tests` (runs oldest first)."""
    if not result.tests_required:
        return Gate("tests", True, "no tests required")
    host_runs = [r for r in runs if r.status not in HOST_RUN_EXCLUDED and r.outcome != NARROWED]
    if not host_runs:
        return Gate("tests", False, "tests required: no test run of the current revision")
    expected = [normalise_command(c) for c in json.loads(proposal.expected_tests_json or "[]")]
    if not expected:
        latest = host_runs[-1]
        if latest.status == TestRunStatus.PASSED:
            return Gate("tests", True, f"test run {latest.id} passed")
        return Gate("tests", False, f"tests required: latest test run {latest.id} is {latest.status}")
    by_command: dict[str, TestRun] = {}
    for run in host_runs:
        by_command[normalise_command(run.command)] = run
    for command in expected:
        found = by_command.get(command)
        if found is None:
            return Gate("tests", False, f"tests required: expected test not run on the current revision: {command}")
        if found.status != TestRunStatus.PASSED:
            return Gate("tests", False, f"tests required: {command} is {found.status} (test run {found.id})")
    return Gate("tests", True, f"{len(expected)} expected test command(s) passed")


def forge_ci_gate(required: tuple[str, ...], proposal: Proposal, landing: Landing | None) -> Gate:
    """Every required check (name or pattern) has reported on the landing commit of the current
    revision and succeeded there; the reason lists each check with its SHA, conclusion and link."""
    number = proposal.revision_number
    if landing is None or not landing.commit_sha or landing.revision != proposal.current_revision:
        return Gate("forge_ci", False, f"no commit built from revision {number} yet (roundtable land sync)")
    sha = landing.commit_sha
    checks = [c for c in json.loads(landing.checks_json or "[]") if isinstance(c, dict) and c.get("sha") == sha]
    problems: list[str] = []
    shown: list[str] = []
    for pattern in required:
        matching = [c for c in checks if fnmatch.fnmatchcase(str(c.get("name", "")), pattern)]
        if not matching:
            problems.append(f"{pattern}: has not reported on {sha[:12]}")
            continue
        for c in matching:
            conclusion = str(c.get("conclusion", ""))
            shown.append(f"{c.get('name')}: {conclusion} on {sha[:12]} {c.get('url', '')}".rstrip())
            if conclusion != "success":
                problems.append(shown[-1])
    if problems:
        return Gate("forge_ci", False, "required checks not green: " + "; ".join(problems))
    return Gate("forge_ci", True, "; ".join(shown))
