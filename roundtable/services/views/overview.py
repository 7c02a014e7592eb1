"""The refresh's read: one `Overview` for the header and the short panes, in one read snapshot.

The derivations are the services' own, so the console cannot disagree with what agents are
told: the turn queue is `services.coordination.turns.load_turns`, votes count through `domain.approving` /
`domain.blocking`, open proposals are `domain.is_open`. The agents' last actions come from an
`ActivityLog` that reads only the events appended since the previous refresh.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roundtable import clock, domain
from roundtable.config import Config
from roundtable.domain import (
    OPEN_PROPOSAL_STATUSES,
    TERMINAL_TASK_STATUSES,
    ApprovalStatus,
    ClaimStatus,
    EventType,
    RunStatus,
    SessionStatus,
    TaskStatus,
)
from roundtable.services.coordination import turns as turn_queue
from roundtable.services.coordination.autopilot import blocked_reason
from roundtable.services.sessions import usage
from roundtable.services.sessions.records import LAUNCH_REFUSED
from roundtable.services.views.models import (
    Activity,
    AgentRow,
    Overview,
    ProposalRow,
    Refusal,
    SessionRow,
    TurnRow,
    open_task,
)
from roundtable.store.db import Reader
from roundtable.store.records import AgentSession, HumanApproval, Proposal, Run, Task, Transaction

# The agents' last actions come from at most this many newest events: the first refresh reads
# that far back, later ones only what was appended since (events are append-only).
ACTIVITY_LOOKBACK = 5_000
BLOCKED_REASONS = 50  # the reasons of at most this many blocked tasks are read per refresh
REFUSALS = 50  # the newest refused or held launches read per refresh
AUTOPILOT_HELD = EventType.AUTOPILOT_SKIPPED


@dataclass
class ActivityLog:
    """Each actor's newest event, kept up to date incrementally across refreshes."""

    after: int = 0  # the last event id read
    latest: dict[str, Activity] = field(default_factory=dict)

    async def update(self, reader: Reader) -> dict[str, Activity]:
        top = int(await reader.scalar("SELECT COALESCE(MAX(id), 0) FROM events") or 0)
        # Never more than the last ACTIVITY_LOOKBACK events, however many arrived since.
        self.after = max(self.after, top - ACTIVITY_LOOKBACK, 0)
        rows = await reader.fetchall(
            "SELECT id, actor_id, principal, type, created_at,"
            " json_extract(payload_json, '$.path') AS path,"
            " json_extract(payload_json, '$.claim_type') AS mode,"
            " json_extract(payload_json, '$.revision_number') AS revision_number"
            " FROM events WHERE id > ? AND id <= ? ORDER BY id",
            (self.after, top),
        )
        for row in rows:
            principal = str(row["principal"] or "")
            actor = principal.removeprefix("agent:") if principal.startswith("agent:") else str(row["actor_id"] or "")
            if actor:
                number = row["revision_number"]
                self.latest[actor] = Activity(
                    str(row["type"]),
                    str(row["created_at"]),
                    path=str(row["path"] or "") if isinstance(row["path"], str) else "",
                    mode=str(row["mode"] or "") if isinstance(row["mode"], str) else "",
                    revision_number=number if isinstance(number, int) else 0,
                )
        self.after = top
        return self.latest


async def load_overview(
    reader: Reader,
    run_id: str,
    config: Config,
    *,
    limit: int = 500,
    activity: ActivityLog | None = None,
    work: dict[str, str] | None = None,
) -> Overview:
    runs = await reader.all(
        Run,
        "SELECT * FROM runs WHERE status != ? OR id = ? ORDER BY started_at DESC, id DESC LIMIT ?",
        (RunStatus.ARCHIVED.value, run_id, limit),
    )
    run = next((r for r in runs if r.id == run_id), None)
    if run is None and run_id:
        run = await reader.one(Run, "SELECT * FROM runs WHERE id = ?", (run_id,))
    turns = await load_turns(reader, run_id, config) if run_id else []
    proposals = await load_proposals(reader, limit=limit, run_id=run_id)
    approvals = await reader.all(
        HumanApproval,
        "SELECT * FROM human_approvals ORDER BY (status = ?) DESC, created_at DESC, id DESC LIMIT ?",
        (ApprovalStatus.REQUESTED.value, limit),
    )
    transactions = await reader.all(
        Transaction, "SELECT * FROM transactions ORDER BY created_at DESC, id DESC LIMIT ?", (limit,)
    )
    sessions = await load_sessions(reader, limit=limit)
    claims_active = int(
        await reader.scalar("SELECT COUNT(*) FROM claims WHERE status = ?", (ClaimStatus.ACTIVE.value,)) or 0
    )
    events_total = int(await reader.scalar("SELECT COALESCE(MAX(id), 0) FROM events") or 0)
    # Blocked tasks, but not those of a run that ended: an ended run's are no longer the
    # operator's to unblock, and "needs you" kept listing them.
    blocked = [
        (str(row[0]), str(row[1]))
        for row in await reader.fetchall(
            "SELECT id, title FROM tasks WHERE status = ? AND run_id NOT IN"
            " (SELECT id FROM runs WHERE status != ?) ORDER BY updated_at DESC, id LIMIT ?",
            (TaskStatus.BLOCKED.value, RunStatus.ACTIVE.value, limit),
        )
    ]
    # Why each blocked task is blocked (the autopilot records it when it gives up on a task).
    reasons = {task_id: await blocked_reason(reader, task_id) for task_id, _title in blocked[:BLOCKED_REASONS]}
    terminal = sorted(TERMINAL_TASK_STATUSES)
    tasks = await reader.all(
        Task,
        f"SELECT * FROM tasks ORDER BY (status IN ({_marks(terminal)})), priority, created_at DESC, id LIMIT ?",
        (*terminal, limit),
    )
    latest = await activity.update(reader) if activity is not None else {}
    agents = await load_agents(reader, sessions=sessions, tasks=tasks, turns=turns, activity=latest, work=work)
    run_spend = await usage.totals(reader, run_id=run.id) if run is not None else usage.Totals()
    refusals = await load_refusals(reader)
    return Overview(
        run,
        runs,
        turns,
        proposals,
        approvals,
        transactions,
        sessions,
        claims_active,
        events_total,
        blocked,
        tasks,
        agents,
        {task_id: reason for task_id, reason in reasons.items() if reason},
        usage.describe(run_spend) if run_spend.sessions else "",
        refusals,
    )


async def load_refusals(reader: Reader, *, limit: int = REFUSALS) -> list[Refusal]:
    """The newest launches the supervisor refused and the autopilot held back, newest first
    (`models.open_refusals` decides which still stand)."""
    rows = await reader.fetchall(
        "SELECT id, type, created_at, task_id, payload_json FROM events WHERE type IN (?, ?) ORDER BY id DESC LIMIT ?",
        (LAUNCH_REFUSED, AUTOPILOT_HELD, limit),
    )
    out: list[Refusal] = []
    for row in rows:
        payload = _payload(row["payload_json"])
        out.append(
            Refusal(
                event_id=int(row["id"]),
                at=str(row["created_at"]),
                reason=str(payload.get("reason") or "no reason recorded"),
                agent_id=str(payload.get("agent_id") or ""),
                task_id=str(payload.get("task_id") or row["task_id"] or ""),
                proposal_id=str(payload.get("proposal_id") or ""),
                held=row["type"] == AUTOPILOT_HELD,
            )
        )
    return out


def _marks(values: Iterable[Any]) -> str:
    return ",".join("?" for _ in values)


async def load_sessions(reader: Reader, *, limit: int = 500) -> list[SessionRow]:
    """Live sessions first (newest first), then recent ended ones, each with its latest capability.

    The binding comes from the capability (what the endpoint enforces), falling back to the
    session's metadata for sessions registered without one (resumed harnesses)."""
    rows = await reader.fetchall(
        """
        SELECT s.*, c.role AS cap_role, c.task_id AS cap_task_id, c.proposal_id AS cap_proposal_id,
               c.expires_at AS cap_expires_at, c.revoked_at AS cap_revoked_at,
               c.revoked_reason AS cap_revoked_reason
        FROM agent_sessions s
        LEFT JOIN session_capabilities c ON c.id = (
            SELECT c2.id FROM session_capabilities c2 WHERE c2.session_id = s.id
            ORDER BY c2.issued_at DESC, c2.id DESC LIMIT 1)
        ORDER BY (s.ended_at IS NULL) DESC, s.started_at DESC, s.id DESC
        LIMIT ?
        """,
        (limit,),
    )
    out: list[SessionRow] = []
    for row in rows:
        session = AgentSession.from_row(row)
        meta = _payload(session.metadata_json)
        out.append(
            SessionRow(
                session=session,
                role=str(row["cap_role"] or meta.get("role") or ""),
                task_id=str(row["cap_task_id"] or meta.get("task_id") or ""),
                proposal_id=str(row["cap_proposal_id"] or meta.get("proposal_id") or ""),
                capability_expires_at=str(row["cap_expires_at"] or ""),
                capability_revoked_at=str(row["cap_revoked_at"] or ""),
                capability_revoked_reason=str(row["cap_revoked_reason"] or ""),
            )
        )
    return out


async def load_proposals(reader: Reader, *, limit: int = 500, run_id: str = "") -> list[ProposalRow]:
    """Open proposals first, newest first, with the votes cast on their current revision
    (one per agent, the latest) counted for and against by the domain's predicates. With
    `run_id`, that run's proposals and those of no run (the console's selected run: `d` opened
    an ended run's proposal from one list of every run's)."""
    open_statuses = sorted(OPEN_PROPOSAL_STATUSES)
    of_run = "WHERE p.run_id IN (?, '')" if run_id else ""
    rows = await reader.fetchall(
        f"""
        SELECT p.*,
          CASE WHEN p.status IN ({_marks(open_statuses)}) THEN
            (SELECT e.payload_json FROM events e WHERE e.type = 'patch.validated'
               AND json_extract(e.payload_json, '$.proposal_id') = p.id ORDER BY e.id DESC LIMIT 1)
          END AS last_validation
        FROM proposals p
        {of_run}
        ORDER BY (p.status IN ({_marks(open_statuses)})) DESC, p.created_at DESC, p.id DESC
        LIMIT ?
        """,
        (*open_statuses, *([run_id] if run_id else []), *open_statuses, limit),
    )
    proposals = [Proposal.from_row(row) for row in rows]
    tally = await _vote_tally(reader, proposals)
    out = []
    for row, proposal in zip(rows, proposals, strict=True):
        validation = None
        if row["last_validation"]:
            with contextlib.suppress(ValueError):
                validation = json.loads(row["last_validation"])
        votes_for, votes_against = tally.get(proposal.id, (0, 0))
        out.append(ProposalRow(proposal, votes_for, votes_against, validation))
    return out


async def _vote_tally(reader: Reader, proposals: list[Proposal]) -> dict[str, tuple[int, int]]:
    """(for, against) per proposal: each agent's latest vote on the current revision."""
    if not proposals:
        return {}
    ids = [p.id for p in proposals]
    rows = await reader.fetchall(
        f"""
        SELECT v.proposal_id, v.agent_id, v.vote FROM votes v JOIN proposals p ON p.id = v.proposal_id
        WHERE v.proposal_id IN ({_marks(ids)})
          AND (p.current_revision IS NULL OR v.revision IS NULL OR v.revision = p.current_revision)
        ORDER BY v.created_at, v.id
        """,
        ids,
    )
    latest: dict[tuple[str, str], str] = {}
    for row in rows:
        latest[(str(row["proposal_id"]), str(row["agent_id"]))] = str(row["vote"])
    tally: dict[str, tuple[int, int]] = {}
    for (proposal_id, _agent), vote in latest.items():
        votes_for, votes_against = tally.get(proposal_id, (0, 0))
        tally[proposal_id] = (votes_for + domain.approving(vote), votes_against + domain.blocking(vote))
    return tally


async def load_turns(reader: Reader, run_id: str, config: Config) -> list[TurnRow]:
    """The run's outstanding turn requests in FIFO order (the turn service's reading of the
    events); the deadline comes from `chair.turn_start_timeout` once scheduled and
    `chair.turn_timeout` once started."""
    out: list[TurnRow] = []
    for turn in (await turn_queue.load_turns(reader, run_id)).values():
        if turn.finished:
            continue
        state = turn.status
        at = turn.started_at or turn.scheduled_at or turn.requested_at
        expires = 0
        if state == "scheduled":
            expires = stamp_ns(at) + int(config.chair.turn_start_timeout * 1e9)
        elif state == "started":
            expires = stamp_ns(at) + int(config.chair.turn_timeout * 1e9)
        out.append(
            TurnRow(
                position=len(out) + 1,
                request_id=turn.request_event_id,
                agent_id=turn.agent_id,
                reason=turn.reason_md,
                state=state,
                requested_at=turn.requested_at,
                state_at=at,
                expires_at_ns=expires,
            )
        )
    return out


async def load_agents(
    reader: Reader,
    *,
    sessions: list[SessionRow],
    tasks: list[Task],
    turns: list[TurnRow],
    activity: dict[str, Activity],
    work: dict[str, str] | None = None,
) -> list[AgentRow]:
    """Every registered agent with what it is doing, from rows the refresh already read plus
    one count of failed sessions per agent; agents at work first."""
    agents = await reader.fetchall("SELECT id, role, is_enabled FROM agents")
    failures = {
        str(row[0]): int(row[1])
        for row in await reader.fetchall(
            "SELECT agent_id, COUNT(*) FROM agent_sessions WHERE status = ? GROUP BY agent_id",
            (SessionStatus.FAILED.value,),
        )
    }
    current: dict[str, SessionRow] = {}
    for session_row in sessions:  # live first, newest first: the first one seen is the current one
        current.setdefault(session_row.session.agent_id, session_row)
    working: dict[str, str] = {}
    for task in tasks:
        if task.assigned_agent_id and open_task(task):
            working.setdefault(task.assigned_agent_id, task.id)
    titles = {task.id: task.title for task in tasks}
    spend = await usage.breakdown(reader, "agent_id")
    turn_state: dict[str, str] = {}
    for turn in turns:
        turn_state.setdefault(turn.agent_id, turn.state)
    out: list[AgentRow] = []
    for agent in agents:
        agent_id = str(agent["id"])
        session = current.get(agent_id)
        live_task = session.task_id if session is not None and session.live else ""
        task_id = live_task or working.get(agent_id, "")
        out.append(
            AgentRow(
                agent_id=agent_id,
                role=str(agent["role"] or ""),
                enabled=bool(agent["is_enabled"]),
                session=session,
                task_id=task_id,
                task_title=titles.get(task_id, ""),
                turn=turn_state.get(agent_id, ""),
                activity=activity.get(agent_id),
                failures=failures.get(agent_id, 0),
                spend=usage.describe(spend[agent_id]) if agent_id in spend else "",
                work=(work or {}).get(agent_id, ""),
            )
        )
    # Agents at work first (a live session), then the others; by role and id within each.
    out.sort(key=lambda a: (a.session is None or not a.session.live, a.role.lower(), a.agent_id))
    return out


def stamp_ns(stamp: str) -> int:
    """Nanoseconds of an RFC 3339 stamp; 0 when empty or unreadable."""
    try:
        return clock.parse(stamp)
    except ValueError:
        return 0


def _payload(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
