"""What the autopilot should launch now, read from the stored state in one snapshot.

- a run with a goal and no tasks → a planning task for the planner (`PlanNeed`);
- a task assigned to an implementer (or a planning task assigned to the planner) on which its
  agent has made no proposal → launch that agent for the task (`task_assigned`, `plan_goal`);
- a review requested for a proposal's current revision → launch each reviewer, security and
  tester the policy named that has not voted on that revision yet (`review_requested`) — plus
  security when the policy requires a security review, and further enabled voters (reviewers,
  then security, then the tester) until the revision can reach the approvals the policy requires;
- a blocking vote, a blocking security review or a failed host test on the current revision →
  relaunch the author with the reason (`revision_requested`, `test_failed`); the operator's line
  comments on the current revision → relaunch the author to address them (`comments_left`); either
  way the comments on that revision are quoted into its briefing;
- a current revision under review with no host test run → run the configured tests (`TestNeed`);
- a current revision that waits only for the operator (every gate passes but the dry run and the
  human approval) → ask for the operator's approval (`ReadyNeed`), so it lands in the inbox.

Every `Job` has a key naming one piece of work (`task:T-1`, `review:P-1:<sha>:reviewer-1`, …):
attempts, backoff and the block after `max_attempts` count per key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roundtable.domain import (
    BLOCKED_TASK_STATUSES,
    BLOCKING_VOTES,
    OPEN_PROPOSAL_STATUSES,
    TERMINAL_TASK_STATUSES,
    EventType,
    ReviewStatus,
    TestRunStatus,
)
from roundtable.errors import RoundtableError
from roundtable.services.governance import comments as comments_service
from roundtable.services.governance.gates import HOST_RUN_EXCLUDED, current_votes, evaluate
from roundtable.services.repository.patches import allowances, parse_patch, read_patch
from roundtable.services.sessions import capabilities
from roundtable.services.sessions.briefing import comments_block
from roundtable.store.db import Reader
from roundtable.store.records import Proposal, SecurityReview, Task, TestRun

VOTER_ROLES = ("reviewer", "security", "tester")  # the order further voters are added in
BLOCKING_REVIEWS = frozenset({ReviewStatus.VETO, ReviewStatus.NEEDS_CHANGES})
FAILED_TESTS = frozenset({TestRunStatus.FAILED, TestRunStatus.ERROR, TestRunStatus.TIMED_OUT})


@dataclass(frozen=True)
class Job:
    """One session the autopilot wants running."""

    key: str
    reason: str  # plan_goal | task_assigned | review_requested | revision_requested | test_failed | comments_left
    run_id: str
    agent_id: str
    role: str
    task_id: str
    proposal_id: str = ""
    detail: str = ""  # the reason in words, for the session's briefing
    # Text another agent (or a test's output) wrote that the session should see, and its author:
    # quoted into the briefing as data (`services.sessions.briefing.quote`), never as part of `detail`.
    quote: str = ""
    quote_author: str = ""
    # The comments on the revision to revise, as `path:line — body` lines already quoted as data.
    comments: str = ""


@dataclass(frozen=True)
class PlanNeed:
    """A run with a goal and no task yet."""

    run_id: str
    goal: str


@dataclass(frozen=True)
class TestNeed:
    """A revision under review without a host test run."""

    __test__ = False  # not a pytest test class

    key: str
    run_id: str
    proposal_id: str
    task_id: str
    revision: str


@dataclass
class Work:
    plans: list[PlanNeed] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    tests: list[TestNeed] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.plans or self.jobs or self.tests)


async def find(r: Reader, runs: list[str] | None = None, *, root: Path | None = None, policy: Any = None) -> Work:
    """The work the active runs (or `runs`) call for. With `root` and `policy`, reviews are
    completed to what the policy requires (see the module docstring)."""
    rows = await r.fetchall("SELECT id, coalesce(goal, '') FROM runs WHERE status = 'active' ORDER BY started_at, id")
    goals = {str(row[0]): str(row[1]) for row in rows if runs is None or str(row[0]) in runs}
    work = Work()
    if not goals:
        return work
    marks = ", ".join("?" for _ in goals)
    counts = await r.fetchall(
        f"SELECT run_id, count(*) FROM tasks WHERE run_id IN ({marks}) GROUP BY run_id", tuple(goals)
    )
    with_tasks = {str(row[0]) for row in counts if int(row[1])}
    work.plans = [PlanNeed(run, goal) for run, goal in goals.items() if goal.strip() and run not in with_tasks]
    await _task_jobs(r, goals, work)
    await _proposal_jobs(r, goals, work, root, policy)
    return work


async def _task_jobs(r: Reader, goals: dict[str, str], work: Work) -> None:
    marks = ", ".join("?" for _ in goals)
    tasks = await r.all(
        Task,
        f"SELECT * FROM tasks WHERE run_id IN ({marks}) AND coalesce(assigned_agent_id, '') != ''"
        " ORDER BY priority, created_at, id",
        tuple(goals),
    )
    for task in tasks:
        if task.status in TERMINAL_TASK_STATUSES or task.status in BLOCKED_TASK_STATUSES:
            continue
        agent = task.assigned_agent_id
        role = capabilities.role_for_agent(agent)
        if role not in ("implementer", "planner"):
            continue
        made = await r.scalar("SELECT 1 FROM proposals WHERE task_id = ? AND agent_id = ? LIMIT 1", (task.id, agent))
        if made:
            continue
        if role == "planner":
            detail, title = "Turn the run's goal into tasks (task.create), then mark this planning task completed.", ""
        else:
            detail = (
                f"Task {task.id} is assigned to you: claim, read, propose a patch, request review. "
                "Its title is quoted below."
            )
            title = task.title
        work.jobs.append(
            Job(
                f"task:{task.id}",
                "plan_goal" if role == "planner" else "task_assigned",
                _run_of(task),
                agent,
                role,
                task.id,
                detail=detail,
                quote=title,
                quote_author=f"the creator of task {task.id}",
            )
        )


def _run_of(record: Task | Proposal) -> str:
    return str(getattr(record, "run_id", "") or "")


async def _proposal_jobs(r: Reader, goals: dict[str, str], work: Work, root: Path | None, policy: Any) -> None:
    marks = ", ".join("?" for _ in goals)
    statuses = ", ".join("?" for _ in OPEN_PROPOSAL_STATUSES)
    proposals = await r.all(
        Proposal,
        f"SELECT * FROM proposals WHERE run_id IN ({marks}) AND status IN ({statuses}) ORDER BY created_at, id",
        (*goals, *sorted(OPEN_PROPOSAL_STATUSES)),
    )
    for p in proposals:
        rev = p.current_revision
        if not rev:
            continue
        requested = await r.scalar(
            "SELECT payload_json FROM events WHERE type = ? AND json_extract(payload_json, '$.proposal_id') = ?"
            " AND json_extract(payload_json, '$.revision') = ? ORDER BY id DESC LIMIT 1",
            (EventType.PROPOSAL_REVIEW_REQUESTED, p.id, rev),
        )
        if not requested:
            continue  # the Chair requests the review first
        votes = await current_votes(r, p)
        why = await _blocking_reason(r, p, votes)
        remarks = await comments_service.for_revision(r, p.id, p.revision_number)
        if why is None and any(c.author == comments_service.OPERATOR_AUTHOR for c in remarks):
            why = (
                "comments_left",
                f"The operator left comments on revision {p.revision_number} of proposal {p.id}, quoted "
                "below: address them in a new revision of it, then ask for review again.",
                "",
                "",
            )
        if why is not None:
            reason, detail, quoted, author = why
            if capabilities.role_for_agent(p.agent_id) == "implementer":
                work.jobs.append(
                    Job(
                        f"revise:{p.id}:{rev}",
                        reason,
                        _run_of(p),
                        p.agent_id,
                        "implementer",
                        p.task_id,
                        detail=detail,
                        quote=quoted,
                        quote_author=author,
                        comments=comments_block(remarks) if remarks else "",
                    )
                )
            continue
        voted = {v.agent_id for v in votes}
        try:
            reviewers = [str(a) for a in json.loads(requested).get("reviewers") or []]
        except ValueError:
            reviewers = []
        if root is not None and policy is not None:
            reviewers = await _with_required_voters(r, root, policy, p, votes, reviewers)
        for agent in reviewers:
            role = capabilities.role_for_agent(agent)
            if agent == p.agent_id or agent in voted or role not in ("reviewer", "security", "tester"):
                continue
            work.jobs.append(
                Job(
                    f"review:{p.id}:{rev}:{agent}",
                    "review_requested",
                    _run_of(p),
                    agent,
                    role,
                    p.task_id,
                    proposal_id=p.id,
                    detail=f"Review proposal {p.id} (revision {rev[:12]}) as its {role}.",
                )
            )
        host = await r.scalar(
            "SELECT 1 FROM test_runs WHERE proposal_id = ? AND revision = ? AND status NOT IN (?, ?, ?) LIMIT 1",
            (p.id, rev, *HOST_RUN_EXCLUDED),
        )
        if not host:
            work.tests.append(TestNeed(f"test:{p.id}:{rev}", _run_of(p), p.id, p.task_id, rev))


async def _blocking_reason(r: Reader, p: Proposal, votes: list) -> tuple[str, str, str, str] | None:  # type: ignore[type-arg]
    """(reason, our words, the text to quote, its author) when the current revision needs
    another one from its author. What an agent or a test wrote is returned apart, to be quoted."""
    for vote in votes:
        if vote.vote.strip().lower() in BLOCKING_VOTES:
            note = vote.reason_md.strip() or "(no reason given)"
            return (
                "revision_requested",
                f"{vote.agent_id} voted {vote.vote} on proposal {p.id}; their reason is quoted below.",
                note,
                vote.agent_id,
            )
    review = await r.one(
        SecurityReview,
        "SELECT * FROM security_reviews WHERE proposal_id = ? AND revision = ? ORDER BY created_at DESC, id DESC LIMIT 1",
        (p.id, p.current_revision),
    )
    if review is not None and review.status in BLOCKING_REVIEWS:
        return (
            "revision_requested",
            f"security review {review.id} is {review.status}; its summary is quoted below.",
            review.summary_md.strip() or "(no summary)",
            review.reviewer_id or "the security reviewer",
        )
    run = await r.one(
        TestRun,
        "SELECT * FROM test_runs WHERE proposal_id = ? AND revision = ? AND status NOT IN (?, ?, ?)"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (p.id, p.current_revision, *HOST_RUN_EXCLUDED),
    )
    if run is not None and run.status in FAILED_TESTS:
        summary = (run.summary_md or "").strip() or f"exit code {run.exit_code}"
        return (
            "test_failed",
            f"test run {run.id} ({run.command}) {run.status} on proposal {p.id}; its summary is quoted below.",
            summary,
            f"the output of test run {run.id}",
        )
    return None


_TOUCHED: dict[tuple[str, str, int], tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _touched(root: Path, sha: str, policy: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(touched paths, special high-risk paths) of a stored revision; content-addressed, so cached
    (per policy object: a reloaded policy parses again)."""
    key = (str(root), sha, id(policy))
    found = _TOUCHED.get(key)
    if found is None:
        parsed = parse_patch(read_patch(root, sha), root, allowances(policy))
        found = (tuple(parsed.touched), tuple(parsed.special))
        if len(_TOUCHED) >= 256:
            _TOUCHED.pop(next(iter(_TOUCHED)))
        _TOUCHED[key] = found
    return found


async def _with_required_voters(
    r: Reader,
    root: Path,
    policy: Any,
    p: Proposal,
    votes: list,
    reviewers: list[str],  # type: ignore[type-arg]
) -> list[str]:
    """`reviewers` plus security when the policy requires a security review, plus further enabled
    voters until the approvals it requires can be reached (never the author)."""
    try:
        touched, special = _touched(root, p.current_revision, policy)
        result = policy.evaluate(p.risk, list(touched), votes, extra_high_paths=list(special))
    except (RoundtableError, OSError):
        return reviewers
    rows = await r.fetchall("SELECT id FROM agents WHERE is_enabled = 1 ORDER BY created_at, id")
    pool = [str(row[0]) for row in rows if str(row[0]) != p.agent_id]
    out = list(reviewers)
    if result.security_review_required:
        out += [a for a in pool if capabilities.role_for_agent(a) == "security" and a not in out][:1]
    for role in VOTER_ROLES:
        for agent in pool:
            if sum(1 for a in out if capabilities.role_for_agent(a) in VOTER_ROLES) >= result.approvals_required:
                return out
            if capabilities.role_for_agent(agent) == role and agent not in out:
                out.append(agent)
    return out


@dataclass(frozen=True)
class ReadyNeed:
    """A revision every gate but the operator's own passes: votes, security review, tests,
    claims, rollback plan. It goes to the operator's approval inbox (`human.request_approval`)."""

    run_id: str
    proposal_id: str
    revision: str
    title: str
    summary: str


# The gates only the operator's act settles: the dry run runs at apply time, and a policy that
# requires a human approval (and the operator's own approval gate) is met by the approval this
# asks for.
OPERATOR_GATES = frozenset({"dry_run", "policy", "approval"})


async def ready_for_operator(r: Reader, root: Path, policy: Any, now: str, work: Work) -> list[ReadyNeed]:
    """Open proposals of the active runs whose current revision waits only for the operator and
    has no approval request yet — none while the autopilot still has work for them."""
    pending = {j.proposal_id for j in work.jobs if j.proposal_id} | {t.proposal_id for t in work.tests}
    rows = await r.fetchall("SELECT id FROM runs WHERE status = 'active'")
    runs = [str(row[0]) for row in rows]
    if not runs:
        return []
    marks = ", ".join("?" for _ in runs)
    statuses = ", ".join("?" for _ in OPEN_PROPOSAL_STATUSES)
    proposals = await r.all(
        Proposal,
        f"SELECT * FROM proposals WHERE run_id IN ({marks}) AND status IN ({statuses}) ORDER BY created_at, id",
        (*runs, *sorted(OPEN_PROPOSAL_STATUSES)),
    )
    out: list[ReadyNeed] = []
    for p in proposals:
        rev = p.current_revision
        if not rev or p.id in pending:
            continue
        asked = await r.scalar(
            "SELECT 1 FROM human_approvals WHERE proposal_id = ? AND revision = ? LIMIT 1", (p.id, rev)
        )
        if asked:
            continue
        report = await evaluate(r, root, policy, p, now)
        failing = {g.name for g in report.failures()}
        result = report.policy
        if not failing <= OPERATOR_GATES or result is None:
            continue
        votes_met = result.approvals >= result.approvals_required and result.blockers <= result.blockers_allowed
        if "policy" in failing and not (result.needs_human and votes_met):
            continue  # votes are missing or blocking: not the operator's turn yet
        passed = [g for g in report.gates if g.passed and g.name not in OPERATOR_GATES]
        summary = "; ".join(f"{g.name}: {g.reason}" for g in passed)
        out.append(ReadyNeed(_run_of(p), p.id, rev, p.title, summary))
    return out
