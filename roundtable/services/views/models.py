"""What the console shows, as plain records: one row type per short pane, the `Overview` that a
refresh reads in one snapshot, and the attention list derived from it.

Statuses are compared through `roundtable.domain` (the one vocabulary), never spelled here.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field
from typing import Any

from roundtable.domain import (
    BLOCKED_TASK_STATUSES,
    TERMINAL_TASK_STATUSES,
    ApprovalStatus,
    EventType,
    SessionStatus,
    TransactionStatus,
    TurnEvent,
    is_open,
)
from roundtable.services.sessions.budgets import REASON_PREFIX as BUDGET_REASON
from roundtable.store.records import AgentSession, HumanApproval, Proposal, Run, Task, Transaction


@dataclass(frozen=True)
class TurnRow:
    """One outstanding turn request (services.coordination.turns' `Turn`), as the Turns pane shows it."""

    position: int
    request_id: int
    agent_id: str
    reason: str
    state: str  # requested | scheduled | started
    requested_at: str
    state_at: str
    expires_at_ns: int  # 0 when the turn has no deadline yet


@dataclass(frozen=True)
class ProposalRow:
    proposal: Proposal
    votes_for: int
    votes_against: int
    # The latest `patch.validated` event's payload for an open proposal (None: never validated).
    validation: dict[str, Any] | None = None

    @property
    def gate_summary(self) -> str:
        """`ready`, `failing: a,b`, `not validated` (for this revision) or the decided status."""
        p = self.proposal
        if not is_open(p.status):
            return p.status
        v = self.validation
        if v is None or v.get("revision") != p.current_revision:
            return "not validated"
        if v.get("applicable"):
            return "ready"
        failed = [str(g) for g in v.get("failed_gates") or []]
        return "failing: " + ",".join(failed) if failed else "not ready"


@dataclass(frozen=True)
class SessionRow:
    """An agent session with its binding (role, task, proposal) and its latest capability's
    lifetime. The capability's token hash is never read: the console has no use for it."""

    session: AgentSession
    role: str
    task_id: str
    proposal_id: str
    capability_expires_at: str
    capability_revoked_at: str
    capability_revoked_reason: str

    @property
    def live(self) -> bool:
        return not self.session.ended_at


@dataclass(frozen=True)
class Activity:
    """The newest event an agent recorded (what its last state-changing tool call did), with
    the few payload fields that say it in words (`doing`)."""

    event_type: str
    at: str
    path: str = ""
    mode: str = ""
    revision_number: int = 0

    def doing(self) -> str:
        """What the agent is doing now, in words: `editing calc/ops.py`, `proposed r2, waiting
        for review`, `running tests`, `waiting for its turn` (else the event type)."""
        kind = self.event_type
        if kind == EventType.CLAIM_CREATED and self.path:
            return f"{'reading' if self.mode in ('read', 'review') else 'editing'} {self.path}"
        if kind in (EventType.PROPOSAL_CREATED, EventType.PROPOSAL_REVISED, EventType.PROPOSAL_REVIEW_REQUESTED):
            number = f" r{self.revision_number}" if self.revision_number else ""
            return f"proposed{number}, waiting for review"
        if kind.startswith("test.") or kind == "test_run.recorded":
            return "running tests"
        if kind == TurnEvent.REQUESTED:
            return "waiting for its turn"
        if kind in (TurnEvent.SCHEDULED, TurnEvent.STARTED):
            return "taking its turn"
        if kind in (TurnEvent.COMPLETED, TurnEvent.EXPIRED):
            return "finished its turn"
        if kind == EventType.VOTE_CAST:
            return "reviewed and voted"
        if kind.startswith("security."):
            return "reviewing security"
        if kind == EventType.TASK_CREATED:
            return "planning tasks"
        return kind


@dataclass(frozen=True)
class AgentRow:
    """Who is doing what: one registered agent, its current (else latest) session, the task it
    works on, its place in the turn queue, its last recorded action and its failed sessions."""

    agent_id: str
    role: str
    enabled: bool
    session: SessionRow | None
    task_id: str
    task_title: str  # "" when the task is not among the listed ones
    turn: str  # requested | scheduled | started, "" when it has no outstanding turn
    activity: Activity | None
    failures: int
    spend: str = ""  # what its sessions spent (`12k tokens · $0.42`), "" when none reported
    work: str = ""  # the diffstat of its live workspace (`2 files +10 -3`), "" without one

    @property
    def session_state(self) -> str:
        if self.session is None:
            return "idle" if self.enabled else "disabled"
        return self.session.session.status


@dataclass(frozen=True)
class Refusal:
    """A launch that did not happen: the supervisor refused it (`session.launch_refused`), or
    the autopilot held it back (`autopilot.skipped`: a budget, its launch limit, no planner)."""

    event_id: int
    at: str
    reason: str
    agent_id: str = ""
    task_id: str = ""
    proposal_id: str = ""
    held: bool = False  # the autopilot's hold, not the supervisor's refusal

    @property
    def key(self) -> tuple[str, ...]:
        """What a later refusal of the same launch replaces."""
        return ("held", self.reason) if self.held else (self.agent_id, self.task_id, self.proposal_id)


@dataclass(frozen=True)
class Overview:
    """Everything the header and the short panes show, read in one snapshot."""

    run: Run | None
    runs: list[Run] = field(default_factory=list)
    turns: list[TurnRow] = field(default_factory=list)
    proposals: list[ProposalRow] = field(default_factory=list)
    approvals: list[HumanApproval] = field(default_factory=list)
    transactions: list[Transaction] = field(default_factory=list)
    sessions: list[SessionRow] = field(default_factory=list)
    claims_active: int = 0
    events_total: int = 0
    blocked_tasks: list[tuple[str, str]] = field(default_factory=list)  # (id, title)
    tasks: list[Task] = field(default_factory=list)
    agents: list[AgentRow] = field(default_factory=list)
    blocked_reasons: dict[str, str] = field(default_factory=dict)  # task id -> why it is blocked
    run_spend: str = ""  # what the run's sessions spent, "" when none reported
    refusals: list[Refusal] = field(default_factory=list)  # newest first


@dataclass(frozen=True)
class AttentionItem:
    """Something only the operator can move forward, and where to find it."""

    kind: str  # approval, transaction, task, session
    item_id: str
    text: str
    pane: str  # the pane that lists it ("" when no pane does)
    row: str = ""  # the row that shows it in that pane, when it is not `item_id`

    @property
    def key(self) -> str:
        """What dismissing it remembers (`session:S-…`)."""
        return f"{self.kind}:{self.item_id}"


# A transaction waiting on the operator: an apply that failed, or one interrupted mid-way.
TRANSACTIONS_NEEDING_ATTENTION = frozenset({TransactionStatus.FAILED, TransactionStatus.PENDING})


def attention(overview: Overview, dismissed: frozenset[str] | set[str] = frozenset()) -> list[AttentionItem]:
    """What needs the operator, most urgent first: approvals waiting for a decision, applies that
    need attention, blocked tasks, failed sessions, refused launches."""
    items = [
        AttentionItem("approval", a.id, f"approval requested: {a.subject}", "approvals")
        for a in overview.approvals
        if a.status == ApprovalStatus.REQUESTED
    ]
    items += [
        AttentionItem("transaction", t.id, f"transaction {t.status}: proposal {t.proposal_id}", "transactions")
        for t in overview.transactions
        if t.status in TRANSACTIONS_NEEDING_ATTENTION
    ]
    items += [
        AttentionItem("task", task_id, _blocked_text(title, overview.blocked_reasons.get(task_id, "")), "tasks")
        for task_id, title in overview.blocked_tasks
    ]
    items += [
        AttentionItem(
            "session",
            row.session.id,
            join_words(
                f"session failed: {row.session.agent_id}" + (f" ({row.role})" if row.role else ""),
                exit_text(row.session),
            ),
            "sessions",
        )
        for row in overview.sessions
        if row.session.status == SessionStatus.FAILED and not _retried(row, overview.sessions)
    ]
    items += [
        AttentionItem(
            "session",
            row.session.id,
            join_words(
                f"session {SESSION_WAITS[state]}: {row.session.agent_id}" + (f" ({row.role})" if row.role else ""),
                detail,
            ),
            "sessions",
        )
        for row in overview.sessions
        for state, detail in [session_attention(row.session)]
        if state in SESSION_WAITS and not _superseded(row, overview.sessions)
    ]
    items += [
        AttentionItem(
            "launch",
            str(r.event_id),
            _refusal_text(r, overview),
            "agents" if r.agent_id else "",
            row=r.agent_id,
        )
        for r in open_refusals(overview)
    ]
    return [i for i in items if i.key not in dismissed]


def open_refusals(overview: Overview) -> list[Refusal]:
    """The refused or held launches still standing: the newest of each launch, unless a
    session of that agent (any session, for a hold) started since, or the work it was for is
    closed."""
    closed_tasks = {t.id for t in overview.tasks if t.status in TERMINAL_TASK_STATUSES}
    open_proposals = {r.proposal.id for r in overview.proposals if is_open(r.proposal.status)}
    listed_proposals = {r.proposal.id for r in overview.proposals}
    seen: set[tuple[str, ...]] = set()
    out: list[Refusal] = []
    for r in overview.refusals:
        if r.key in seen:
            continue
        seen.add(r.key)
        started_since = any(
            s.session.started_at > r.at and (r.held or s.session.agent_id == r.agent_id) for s in overview.sessions
        )
        closed = r.task_id in closed_tasks or (
            r.proposal_id in listed_proposals and r.proposal_id not in open_proposals
        )
        if not started_since and not closed:
            out.append(r)
    return out


def _refusal_text(refusal: Refusal, overview: Overview) -> str:
    reason = refusal.reason.removeprefix("launch refused: ")
    if refusal.held:
        return f"launch held: {reason}"
    title = next((t.title for t in overview.tasks if t.id == refusal.task_id), "")
    what = f" for {title}" if title else ""
    return f"launch refused: {refusal.agent_id}{what} — {reason}"


# What a session's stream can say it waits for (`transcript.Attention`): the attention list's words.
SESSION_WAITS = {
    "waiting_permission": "waits for a permission",
    "waiting_answer": "waits for your answer",
    "idle": "is idle",
}


def session_attention(session: AgentSession) -> tuple[str, str]:
    """(state, detail) of what the session's stream last said (`transcript.Attention`), or ("", "")."""
    try:
        meta = json.loads(session.metadata_json or "{}")
    except ValueError:
        return "", ""
    kept = meta.get("attention") if isinstance(meta, dict) else None
    if not isinstance(kept, dict):
        return "", ""
    return str(kept.get("state") or ""), str(kept.get("detail") or "")


def _superseded(row: SessionRow, rows: list[SessionRow]) -> bool:
    """A later session of the same agent for the same work started: what this one waited for is
    behind it (the operator answered by resuming it, or the work was relaunched)."""
    return any(
        r.session.agent_id == row.session.agent_id
        and (r.task_id, r.proposal_id) == (row.task_id, row.proposal_id)
        and r.session.started_at > row.session.started_at
        for r in rows
    )


def _retried(failed: SessionRow, rows: list[SessionRow]) -> bool:
    """A later session of the same agent did not fail: the failure is behind it."""
    return any(
        r.session.agent_id == failed.session.agent_id
        and r.session.started_at > failed.session.started_at
        and r.session.status != SessionStatus.FAILED
        for r in rows
    )


def exit_text(session: AgentSession) -> str:
    """How a session's process ended, from its record: `exit 1: launch_failed`, `killed by
    SIGKILL`, `stopped by budget: …` (the supervisor ended it at its budget, whatever the status
    of its process), or "" when it has not ended (or ended before this was recorded)."""
    ended = _exit(session)
    if ended is None:
        return ""
    how, reason = ended
    if reason.startswith(BUDGET_REASON):
        return f"stopped by {reason}"
    how = how if how.startswith("exit") else f"killed by {how}"
    return f"{how}: {reason}" if reason else how


def exit_brief(session: AgentSession) -> str:
    """The short form a pane shows beside a session's status: `exit 1`, `SIGKILL`, or "" (not
    ended, or ended with exit 0)."""
    ended = _exit(session)
    if ended is not None and ended[1].startswith(BUDGET_REASON):
        return "stopped by budget"
    return "" if ended is None or ended[0] == "exit 0" else ended[0]


def _exit(session: AgentSession) -> tuple[str, str] | None:
    """(`exit N` or the signal's name, the recorded reason) from the session's metadata."""
    try:
        meta = json.loads(session.metadata_json or "{}")
    except ValueError:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("exit_code"), int):
        return None
    code = int(meta["exit_code"])
    reason = str(meta.get("exit_reason") or "")
    if code < 0 and reason != "launch_failed":
        try:
            return signal.Signals(-code).name, reason
        except ValueError:
            return f"signal {-code}", reason
    return f"exit {code}", reason


def join_words(first: str, second: str) -> str:
    return f"{first} — {second}" if second else first


def _blocked_text(title: str, reason: str) -> str:
    return f"task blocked: {title} — {reason}" if reason else f"task blocked: {title}"


def open_task(task: Task) -> bool:
    """Work not finished: neither terminal nor blocked (the Launch form and Agents pane offer it)."""
    return task.status not in TERMINAL_TASK_STATUSES and task.status not in BLOCKED_TASK_STATUSES
