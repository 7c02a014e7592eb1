"""The vocabulary every layer shares: statuses, vote values, risks, event types and the
predicates on them. A status or event type spelled anywhere else is a bug waiting to disagree with
this file — the console once counted `approve_with_notes` as neither for nor against.
`tests/test_vocabulary.py` fails on such a literal in Python code outside this module.

`StrEnum` members compare equal to their strings, so rows read from SQLite (plain `str`) work
with every predicate here, and the values written to the database and the wire are the strings.

SQL text may still spell a status in a `WHERE`/`SET` clause (`status = 'active'`): a bound
parameter would hide the query's shape and stop SQLite from matching partial indexes
(`idx_workspaces_live … WHERE state != 'removed'`). The vocabulary test checks every such
literal names a value defined here, so a renamed or misspelled status still fails it.
"""

from __future__ import annotations

from enum import StrEnum

CHAIR_ID = "chair-1"
"""The Chair's actor id in events and turn scheduling."""


class Vote(StrEnum):
    APPROVE = "approve"
    APPROVE_WITH_NOTES = "approve_with_notes"
    REVISE = "revise"
    REJECT = "reject"
    VETO = "veto"
    ABSTAIN = "abstain"


APPROVING_VOTES: frozenset[str] = frozenset({Vote.APPROVE, Vote.APPROVE_WITH_NOTES})
BLOCKING_VOTES: frozenset[str] = frozenset({Vote.REVISE, Vote.REJECT, Vote.VETO})


def approving(vote: str) -> bool:
    """A vote that counts towards approval (`approve`, `approve_with_notes`)."""
    return vote.strip().lower() in APPROVING_VOTES


def blocking(vote: str) -> bool:
    """A vote that stands against the revision (`revise`, `reject`, `veto`)."""
    return vote.strip().lower() in BLOCKING_VOTES


class Risk(StrEnum):
    """How risky an author says a change is; `high` and `critical` need a human's approval."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class ProposalStatus(StrEnum):
    PENDING = "pending"
    IN_REVIEW = "in_review"
    ACCEPTED = "accepted"  # applied to the tree
    REJECTED = "rejected"
    ROLLED_BACK = "rolled_back"


OPEN_PROPOSAL_STATUSES: frozenset[str] = frozenset({ProposalStatus.PENDING, ProposalStatus.IN_REVIEW})
DECIDED_PROPOSAL_STATUSES: frozenset[str] = frozenset({ProposalStatus.ACCEPTED, ProposalStatus.REJECTED})


def is_open(status: str) -> bool:
    """A proposal still under review: it can be revised, voted on, approved or applied."""
    return status in OPEN_PROPOSAL_STATUSES


NARROWED = "narrowed"
"""A test run's `outcome` when `test.run` ran its command narrowed to some paths or tests: it is
evidence of those alone and never satisfies `tests_required`."""


class TransactionStatus(StrEnum):
    PENDING = "pending"  # the apply intent, written before any file changes
    APPLIED = "applied"
    FAILED = "failed"
    ROLLING_BACK = "rolling_back"
    ROLLED_BACK = "rolled_back"


class RunStatus(StrEnum):
    ACTIVE = "active"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    FAILED = "failed"
    ARCHIVED = "archived"  # an ended run hidden from the console and from resume


TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({RunStatus.COMPLETED, RunStatus.BLOCKED, RunStatus.FAILED})

RUN_ENDINGS: tuple[str, ...] = (RunStatus.COMPLETED, RunStatus.BLOCKED, RunStatus.FAILED)
"""The statuses the finite loop may end a run with (each records `orchestrator.<status>`)."""


class TurnEvent(StrEnum):
    REQUESTED = "agent.turn_requested"
    SCHEDULED = "agent.turn_scheduled"
    STARTED = "agent.turn_started"
    COMPLETED = "agent.turn_completed"
    EXPIRED = "agent.turn_expired"


TURN_EVENTS: tuple[str, ...] = tuple(TurnEvent)
TURN_DONE_EVENTS: frozenset[str] = frozenset({TurnEvent.COMPLETED, TurnEvent.EXPIRED})
"""A turn request is outstanding until one of these names it."""


class ApprovalStatus(StrEnum):
    REQUESTED = "requested"
    APPROVED = "approved"
    DENIED = "denied"
    REJECTED = "rejected"
    CHANGES_REQUESTED = "changes_requested"
    DEFERRED = "deferred"
    # Made moot by an apply, a rejection or a new revision: set by roundtable, never a decision.
    CLOSED = "closed"


APPROVAL_DECISIONS: tuple[str, ...] = (
    ApprovalStatus.APPROVED,
    ApprovalStatus.DENIED,
    ApprovalStatus.REJECTED,
    ApprovalStatus.CHANGES_REQUESTED,
    ApprovalStatus.DEFERRED,
)
"""The statuses a human's decision on an approval may set."""


class SessionStatus(StrEnum):
    STARTING = "starting"
    ACTIVE = "active"
    ENDED = "ended"  # the process exited 0
    FAILED = "failed"  # it exited non-zero (or was killed)


class TaskStatus(StrEnum):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    BLOCKED = "blocked"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


# Agents set a task's status as free text; these other spellings of "finished" count as terminal.
TASK_DONE_ALIASES: frozenset[str] = frozenset({"done", "closed", "canceled", "failed"})
TERMINAL_TASK_STATUSES: frozenset[str] = frozenset({TaskStatus.COMPLETED, TaskStatus.CANCELLED}) | TASK_DONE_ALIASES
BLOCKED_TASK_STATUSES: frozenset[str] = frozenset({TaskStatus.BLOCKED})
ENDED_TASK_STATUSES: tuple[str, ...] = (TaskStatus.COMPLETED, TaskStatus.CANCELLED)
"""The statuses roundtable itself sets on a finished task."""


class WorkspaceState(StrEnum):
    ACTIVE = "active"  # made, or synced onto a new base: work not yet proposed
    PROPOSED = "proposed"  # its diff is a revision of its proposal (edits since may follow)
    REMOVED = "removed"  # the directory is gone; the row stays


class ClaimStatus(StrEnum):
    ACTIVE = "active"
    RELEASED = "released"
    EXPIRED = "expired"
    REVOKED = "revoked"
    SUSPENDED = "suspended"  # the file changed under the claim's base hash
    STALE = "stale"


class ContentionStatus(StrEnum):
    OPEN = "open"  # a refused claim's contention nobody has resolved yet


class ReviewEvent(StrEnum):
    """Events of the review loop beyond votes: a line comment left on a revision."""

    COMMENTED = "proposal.commented"


class AgentStatus(StrEnum):
    IDLE = "idle"


class TestRunStatus(StrEnum):
    """`test_runs.status`; `outcome` holds a `TestOutcome` for reported evidence, or `NARROWED`."""

    __test__ = False  # not a pytest class

    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    ERROR = "error"
    REPORTED = "reported"  # a tester session's own report, never a pass


class TestOutcome(StrEnum):
    """What a tester session reports it saw (`test.evidence_reported`)."""

    __test__ = False

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


class ReviewStatus(StrEnum):
    """`security_reviews.status`."""

    APPROVED = "approved"
    NEEDS_CHANGES = "needs_changes"
    VETO = "veto"


class MemoryStatus(StrEnum):
    ACTIVE = "active"
    STALE = "stale"


class ProposalTransactionState(StrEnum):
    """`proposals.transaction_state`: where the proposal's apply stands."""

    NOT_STARTED = "not_started"
    APPLYING = "applying"
    APPLIED = "applied"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"


class GateState(StrEnum):
    """`proposals.vote_state`, `policy_state` and `approval_state`: `pending` as a proposal is
    created (and revised); once it is applied, what every gate said at that moment — the votes
    `approved` it or an approval stood in for them (`overridden`), the policy `passed`, the
    operator `approved` it before applying or by applying (`implicit`)."""

    PENDING = "pending"
    APPROVED = "approved"
    OVERRIDDEN = "overridden"
    PASSED = "passed"
    IMPLICIT = "implicit"


class RecoveryOutcome(StrEnum):
    """`transaction.recovered`'s `outcome`."""

    COMPLETED = "completed"
    ROLLED_BACK = "rolled_back"
    NEEDS_ATTENTION = "needs_attention"


class TranscriptKind(StrEnum):
    """What an entry of a session's transcript is (`services/sessions/transcript.py`)."""

    MESSAGE = "message"  # the agent's words
    THINKING = "thinking"  # its reasoning, when the harness shows it
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    ERROR = "error"
    STATUS = "status"  # the harness's own notes: session started, turn ended
    OPERATOR = "operator"  # a message the operator sent the session
    OUTPUT = "output"  # a line that is not one of the harness's events


class Attention(StrEnum):
    """Whether a session needs a human, as its stream says (`services/sessions/transcript.py`)."""

    WORKING = "working"
    WAITING_PERMISSION = "waiting_permission"  # a tool it needs was refused
    WAITING_ANSWER = "waiting_answer"  # it ended its turn on a question
    IDLE = "idle"  # running, but silent for a while (said by the supervisor)
    FINISHED = "finished"
    FAILED = "failed"


class Delivery(StrEnum):
    """How the operator's message to a session reaches its harness (`session.message`)."""

    LIVE = "live"  # written to the running harness's input: it reads it within its turn
    WHEN_TURN_ENDS = "when_turn_ends"  # the harness takes no input while it runs: it is resumed with it
    RESUMED = "resumed"  # the session had ended: a new session continues it with the message


class ForgeState(StrEnum):
    """The forge's own words (GitHub's API) for a check run's progress, a commit status and a
    pull request's state, as `services/forge/` reads and writes them."""

    COMPLETED = "completed"
    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    CLOSED = "closed"


class EventType(StrEnum):
    """Every type of row in `events` (the turn events are `TurnEvent`, a line comment `ReviewEvent`)."""

    RUN_CREATED = "run.created"
    RUN_RESUMED = "run.resumed"
    RUN_ENDED = "run.ended"
    RUN_ARCHIVED = "run.archived"
    TASK_CREATED = "task.created"
    TASK_REPLACED = "task.replaced"
    TASK_UPDATED = "task.updated"
    TASK_ASSIGNED = "task.assigned"
    TASK_BLOCKED = "task.blocked"
    CLAIM_CREATED = "claim.created"
    CLAIM_EXTENDED = "claim.extended"
    CLAIM_RELEASED = "claim.released"
    CLAIM_EXPIRED = "claim.expired"
    CLAIM_REVOKED = "claim.revoked"
    CLAIM_SUSPENDED = "claim.suspended"
    CLAIM_STALE = "claim.stale"
    PROPOSAL_CREATED = "proposal.created"
    PROPOSAL_REVISED = "proposal.revised"
    PROPOSAL_REVIEW_REQUESTED = "proposal.review_requested"
    VOTE_CAST = "vote.cast"
    DECISION_RECORDED = "decision.recorded"
    SECURITY_REVIEWED = "security.reviewed"
    TEST_STARTED = "test.started"
    TEST_FINISHED = "test.finished"
    TEST_EVIDENCE_REPORTED = "test.evidence_reported"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_DECIDED = "approval.decided"
    APPROVAL_UPDATED = "approval.updated"
    APPROVAL_CLOSED = "approval.closed"
    PATCH_VALIDATED = "patch.validated"
    PATCH_APPLIED = "patch.applied"
    PATCH_APPLY_FAILED = "patch.apply_failed"
    PATCH_REJECTED = "patch.rejected"
    PATCH_ROLLED_BACK = "patch.rolled_back"
    PATCH_ROLLBACK_FAILED = "patch.rollback_failed"
    TRANSACTION_RECOVERED = "transaction.recovered"
    LANDING_PR_OPENED = "landing.pr_opened"
    LANDING_PR_UPDATED = "landing.pr_updated"
    LANDING_CI_FAILED = "landing.ci_failed"
    WORKSPACE_CREATED = "workspace.created"
    WORKSPACE_PROPOSED = "workspace.proposed"
    WORKSPACE_SYNCED = "workspace.synced"
    WORKSPACE_REMOVED = "workspace.removed"
    WORKSPACE_UNPROPOSED = "workspace.unproposed"
    MEMORY_RECORDED = "memory.recorded"
    MEMORY_REVISED = "memory.revised"
    MEMORY_MARKED_STALE = "memory.marked_stale"
    SESSION_LAUNCHED = "session.launched"
    SESSION_EXITED = "session.exited"
    SESSION_LAUNCH_REFUSED = "session.launch_refused"  # refused before anything started
    SESSION_LIMIT_REACHED = "session.limit_reached"
    SESSION_ATTENTION = "session.attention"  # its stream says it waits for the operator, or no longer
    SESSION_MESSAGE = "session.message"  # the operator sent a session a message
    CAPABILITY_DENIED = "capability.denied"
    CAPABILITY_REVOKED = "capability.revoked"
    SOCKET_PEER_REFUSED = "socket.peer_refused"
    CHAIR_ERROR = "chair.error"
    ORCHESTRATOR_COMPLETED = "orchestrator.completed"
    ORCHESTRATOR_BLOCKED = "orchestrator.blocked"
    ORCHESTRATOR_FAILED = "orchestrator.failed"
    ORCHESTRATOR_RETRY = "orchestrator.retry"
    AUTOPILOT_ENABLED = "autopilot.enabled"
    AUTOPILOT_DISABLED = "autopilot.disabled"
    AUTOPILOT_DISPATCHED = "autopilot.dispatched"
    AUTOPILOT_SESSION_FAILED = "autopilot.session_failed"
    AUTOPILOT_STOPPED = "autopilot.stopped"
    AUTOPILOT_SKIPPED = "autopilot.skipped"
    AUTOPILOT_TESTS_RUN = "autopilot.tests_run"
    AUTOPILOT_RATE_LIMITED = "autopilot.rate_limited"
    BUDGET_EXCEEDED = "budget.exceeded"
    GATEWAY_CREDENTIAL_REFUSED = "gateway.credential_refused"  # the model API refused the operator's key
    GATEWAY_CONNECTION_REFUSED = "gateway.connection_refused"  # a session asked for a host not allowed
    GATEWAY_BUDGET_REFUSED = "gateway.budget_refused"  # a model request refused: a budget is reached
    QUOTA_REACHED = "limits.quota_reached"
    CONFIG_RELOADED = "config.reloaded"


def claim_event(status: str) -> EventType:
    """The `claim.<status>` event a claim's transition to `status` records."""
    return EventType(f"claim.{status}")


def orchestrator_event(status: str) -> EventType:
    """The `orchestrator.<status>` event the finite loop records as it ends a run with `status`."""
    return EventType(f"orchestrator.{status}")
