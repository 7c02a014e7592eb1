"""The vocabulary every layer shares: statuses, vote values, event types and the predicates on
them. A status or vote spelled anywhere else is a bug waiting to disagree with this
file — the console once counted `approve_with_notes` as neither for nor against.

`StrEnum` members compare equal to their strings, so rows read from SQLite (plain `str`) work
with every predicate here.
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

TERMINAL_TASK_STATUSES: frozenset[str] = frozenset({"completed", "done", "closed", "cancelled", "canceled", "failed"})
BLOCKED_TASK_STATUSES: frozenset[str] = frozenset({"blocked"})


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


class WorkspaceState(StrEnum):
    ACTIVE = "active"  # made, or synced onto a new base: work not yet proposed
    PROPOSED = "proposed"  # its diff is a revision of its proposal (edits since may follow)
    REMOVED = "removed"  # the directory is gone; the row stays


class ClaimStatus(StrEnum):
    ACTIVE = "active"
    RELEASED = "released"
    EXPIRED = "expired"


class ContentionStatus(StrEnum):
    OPEN = "open"  # a refused claim's contention nobody has resolved yet


class ReviewEvent(StrEnum):
    """Events of the review loop beyond votes: a line comment left on a revision."""

    COMMENTED = "proposal.commented"
