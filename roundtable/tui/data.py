"""What the console reads: one consistent overview for the short panes, and keyed pages for the
long ones (claims, events).

Everything here is a plain async function over a store `Reader` (one read snapshot), so a pane
never shows two instants at once. Long lists never load whole: `VirtualSource.page()` reads one
page after (or before) a known key, falling back to `OFFSET` only for a jump to an unknown
position (a scrollbar drag or `end`).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from roundtable import clock
from roundtable.config import Config
from roundtable.domain import (
    APPROVING_VOTES,
    BLOCKING_VOTES,
    TERMINAL_TASK_STATUSES,
    TURN_DONE_EVENTS,
    TurnEvent,
    is_open,
)
from roundtable.domain import OPEN_PROPOSAL_STATUSES as OPEN_STATUSES
from roundtable.store.db import Reader
from roundtable.store.records import AgentSession, HumanApproval, Proposal, Run, Task, Transaction

# The proposals pane counts votes with the policy's own vocabulary (`roundtable.domain`).
VOTES_FOR = tuple(sorted(APPROVING_VOTES))
VOTES_AGAINST = tuple(sorted(BLOCKING_VOTES))
TURN_DONE_TYPES = tuple(sorted(TURN_DONE_EVENTS))
TURN_STATE_TYPES = (TurnEvent.SCHEDULED.value, TurnEvent.STARTED.value)
OPEN_PROPOSAL_STATUSES = tuple(sorted(OPEN_STATUSES))


class DatabaseUnavailable(Exception):
    """The database file cannot be read (missing, moved or unreadable)."""


def check_database_file(path: Path) -> None:
    """Raise `DatabaseUnavailable` when the file a refresh would read is gone or unreadable.

    Open connections keep working on a renamed or deleted file, so a query alone would hide
    that the project's database is no longer where the console thinks it is.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatabaseUnavailable(f"database file missing: {path}") from None
    except OSError as exc:
        raise DatabaseUnavailable(f"database file unreadable: {exc.strerror}") from None
    if not os.access(path, os.R_OK) or (st.st_mode & 0o444) == 0:
        raise DatabaseUnavailable(f"database file unreadable: {path}")


# --- rows for the short panes ---------------------------------------------------------------


@dataclass(frozen=True)
class TurnRow:
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


@dataclass(frozen=True)
class AttentionItem:
    """Something only the operator can move forward, and where to find it."""

    kind: str  # approval, transaction, task, session
    item_id: str
    text: str
    pane: str  # the pane that lists it ("" when no pane does)


def attention(overview: Overview) -> list[AttentionItem]:
    """What needs the operator, most urgent first: approvals waiting for a decision, applies that
    need attention, blocked tasks, failed sessions."""
    items = [
        AttentionItem("approval", a.id, f"approval requested: {a.subject}", "approvals")
        for a in overview.approvals
        if a.status == "requested"
    ]
    items += [
        AttentionItem("transaction", t.id, f"transaction {t.status}: proposal {t.proposal_id}", "transactions")
        for t in overview.transactions
        if t.status in ("failed", "pending", "needs_attention")
    ]
    items += [AttentionItem("task", task_id, f"task blocked: {title}", "") for task_id, title in overview.blocked_tasks]
    items += [
        AttentionItem("session", row.session.id, f"session failed: {row.session.agent_id} ({row.role})", "sessions")
        for row in overview.sessions
        if row.session.status == "failed"
    ]
    return items


async def load_overview(reader: Reader, run_id: str, config: Config, *, limit: int = 500) -> Overview:
    runs = await reader.all(
        Run,
        "SELECT * FROM runs WHERE status != 'archived' OR id = ? ORDER BY started_at DESC, id DESC LIMIT ?",
        (run_id, limit),
    )
    run = next((r for r in runs if r.id == run_id), None)
    if run is None and run_id:
        run = await reader.one(Run, "SELECT * FROM runs WHERE id = ?", (run_id,))
    turns = await load_turns(reader, run_id, config) if run_id else []
    proposals = await load_proposals(reader, limit=limit)
    approvals = await reader.all(
        HumanApproval,
        "SELECT * FROM human_approvals ORDER BY (status = 'requested') DESC, created_at DESC, id DESC LIMIT ?",
        (limit,),
    )
    transactions = await reader.all(
        Transaction, "SELECT * FROM transactions ORDER BY created_at DESC, id DESC LIMIT ?", (limit,)
    )
    sessions = await load_sessions(reader, limit=limit)
    claims_active = int(await reader.scalar("SELECT COUNT(*) FROM claims WHERE status = 'active'") or 0)
    events_total = int(await reader.scalar("SELECT COALESCE(MAX(id), 0) FROM events") or 0)
    blocked = [
        (str(row[0]), str(row[1]))
        for row in await reader.fetchall(
            "SELECT id, title FROM tasks WHERE status = 'blocked' ORDER BY updated_at DESC, id LIMIT ?", (limit,)
        )
    ]
    terminal = ",".join(f"'{status}'" for status in sorted(TERMINAL_TASK_STATUSES))
    tasks = await reader.all(
        Task,
        f"SELECT * FROM tasks ORDER BY (status IN ({terminal})), priority, created_at DESC, id LIMIT ?",
        (limit,),
    )
    return Overview(
        run, runs, turns, proposals, approvals, transactions, sessions, claims_active, events_total, blocked, tasks
    )


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


async def load_proposals(reader: Reader, *, limit: int = 500) -> list[ProposalRow]:
    """Open proposals first, newest first, with the votes bound to their current revision."""
    for_marks = ",".join("?" for _ in VOTES_FOR)
    against_marks = ",".join("?" for _ in VOTES_AGAINST)
    open_marks = ",".join("?" for _ in OPEN_PROPOSAL_STATUSES)
    rows = await reader.fetchall(
        f"""
        SELECT p.*,
          (SELECT COUNT(*) FROM votes v WHERE v.proposal_id = p.id
             AND (p.current_revision IS NULL OR v.revision IS NULL OR v.revision = p.current_revision)
             AND lower(v.vote) IN ({for_marks})) AS votes_for,
          (SELECT COUNT(*) FROM votes v WHERE v.proposal_id = p.id
             AND (p.current_revision IS NULL OR v.revision IS NULL OR v.revision = p.current_revision)
             AND lower(v.vote) IN ({against_marks})) AS votes_against,
          CASE WHEN p.status IN ({open_marks}) THEN
            (SELECT e.payload_json FROM events e WHERE e.type = 'patch.validated'
               AND json_extract(e.payload_json, '$.proposal_id') = p.id ORDER BY e.id DESC LIMIT 1)
          END AS last_validation
        FROM proposals p
        ORDER BY (p.status IN ({open_marks})) DESC, p.created_at DESC, p.id DESC
        LIMIT ?
        """,
        (*VOTES_FOR, *VOTES_AGAINST, *OPEN_PROPOSAL_STATUSES, *OPEN_PROPOSAL_STATUSES, limit),
    )
    out = []
    for row in rows:
        proposal = Proposal.from_row(row)
        validation = None
        if row["last_validation"]:
            with contextlib.suppress(ValueError):
                validation = json.loads(row["last_validation"])
        out.append(ProposalRow(proposal, int(row["votes_for"]), int(row["votes_against"]), validation))
    return out


async def load_turns(reader: Reader, run_id: str, config: Config) -> list[TurnRow]:
    """The run's outstanding turn requests in FIFO order, with their latest state.

    A request is outstanding until a completion or expiry names it; its deadline comes from
    `chair.turn_start_timeout` once scheduled and `chair.turn_timeout` once started.
    """
    requests = await reader.fetchall(
        "SELECT id, actor_id, payload_json, created_at FROM events "
        "WHERE run_id = ? AND type = 'agent.turn_requested' ORDER BY id",
        (run_id,),
    )
    if not requests:
        return []
    follow_types = TURN_DONE_TYPES + TURN_STATE_TYPES
    marks = ",".join("?" for _ in follow_types)
    follow = await reader.fetchall(
        f"SELECT id, type, payload_json, created_at FROM events WHERE run_id = ? AND type IN ({marks}) "
        "AND id >= ? ORDER BY id",
        (run_id, *follow_types, int(requests[0]["id"])),
    )
    done: set[int] = set()
    state: dict[int, tuple[str, str]] = {}
    for row in follow:
        payload = _payload(row["payload_json"])
        try:
            request_id = int(payload.get("request_event_id") or 0)
        except (TypeError, ValueError):
            continue
        if row["type"] in TURN_DONE_TYPES:
            done.add(request_id)
        else:
            state[request_id] = (str(row["type"]).rsplit("_", 1)[-1], str(row["created_at"]))
    out: list[TurnRow] = []
    for row in requests:
        request_id = int(row["id"])
        if request_id in done:
            continue
        payload = _payload(row["payload_json"])
        kind, at = state.get(request_id, ("requested", str(row["created_at"])))
        expires = 0
        if kind == "scheduled":
            expires = _ns(at) + int(config.chair.turn_start_timeout * 1e9)
        elif kind == "started":
            expires = _ns(at) + int(config.chair.turn_timeout * 1e9)
        out.append(
            TurnRow(
                position=len(out) + 1,
                request_id=request_id,
                agent_id=str(payload.get("agent_id") or row["actor_id"] or ""),
                reason=str(payload.get("reason_md") or ""),
                state=kind,
                requested_at=str(row["created_at"]),
                state_at=at,
                expires_at_ns=expires,
            )
        )
    return out


def _payload(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _ns(stamp: str) -> int:
    try:
        return clock.parse(stamp)
    except ValueError:
        return 0


# --- the inspector ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Entity:
    """One record in full, plus what the inspector shows beside it."""

    kind: str
    id: str
    record: dict[str, Any]
    related: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    diff_text: str = ""
    diff_note: str = ""


ENTITY_TABLES = {
    "run": ("runs", "id"),
    "proposal": ("proposals", "id"),
    "approval": ("human_approvals", "id"),
    "transaction": ("transactions", "id"),
    "claim": ("claims", "id"),
    "event": ("events", "id"),
    "session": ("agent_sessions", "id"),
    "task": ("tasks", "id"),
}


async def load_entity(reader: Reader, kind: str, entity_id: str) -> Entity | None:
    table, key = ENTITY_TABLES[kind]
    row = await reader.fetchone(f"SELECT * FROM {table} WHERE {key} = ?", (entity_id,))
    if row is None:
        return None
    record = {k: row[k] for k in row.keys()}
    related: dict[str, list[dict[str, Any]]] = {}
    if kind == "proposal":
        for name, sql in (
            (
                "revisions",
                "SELECT number, sha256, agent_id, created_at FROM patch_revisions WHERE proposal_id = ? ORDER BY number",
            ),
            (
                "votes",
                "SELECT agent_id, vote, revision, reason_md, created_at FROM votes WHERE proposal_id = ? ORDER BY created_at, id",
            ),
            (
                "approvals",
                "SELECT id, status, revision, decided_by FROM human_approvals WHERE proposal_id = ? ORDER BY created_at, id",
            ),
            (
                "transactions",
                "SELECT id, status, revision, applied_at FROM transactions WHERE proposal_id = ? ORDER BY created_at, id",
            ),
        ):
            related[name] = [
                dict(zip(r.keys(), tuple(r), strict=True)) for r in await reader.fetchall(sql, (entity_id,))
            ]
    elif kind == "claim":
        related["contentions"] = [
            dict(zip(r.keys(), tuple(r), strict=True))
            for r in await reader.fetchall(
                "SELECT id, claimant_id, status, reason, created_at FROM claim_contentions "
                "WHERE resource_id = ? ORDER BY created_at DESC LIMIT 20",
                (record.get("resource_id"),),
            )
        ]
    elif kind == "session":
        # Never the token hash: the inspector shows what the capability allows and until when.
        related["capabilities"] = [
            dict(zip(r.keys(), tuple(r), strict=True))
            for r in await reader.fetchall(
                "SELECT id, role, task_id, proposal_id, issued_at, expires_at, revoked_at, revoked_reason "
                "FROM session_capabilities WHERE session_id = ? ORDER BY issued_at, id",
                (entity_id,),
            )
        ]
    return Entity(kind, str(entity_id), record, related)


def patch_file(root: Path, record: dict[str, Any]) -> Path | None:
    """The stored diff of a proposal's current revision (`patches/<sha256>.diff`), else its patch_path."""
    revision = str(record.get("current_revision") or "")
    if revision and all(c in "0123456789abcdef" for c in revision.lower()):
        path = root / ".roundtable" / "patches" / f"{revision}.diff"
        if path.exists():
            return path
    patch_path = str(record.get("patch_path") or "")
    if patch_path:
        candidate = (root / patch_path).resolve()
        if candidate.is_relative_to(root.resolve()) and candidate.is_file():
            return candidate
    return None


def read_diff(root: Path, record: dict[str, Any], limit: int = 512 * 1024) -> tuple[str, str]:
    """(diff text, note) for a proposal record; blocking, so call it in a thread."""
    path = patch_file(root, record)
    if path is None:
        return "", "no patch attached" if not record.get("current_revision") else "patch file not found"
    with path.open("rb") as fh:
        data = fh.read(limit + 1)
    note = f"showing the first {limit // 1024} KiB" if len(data) > limit else ""
    return data[:limit].decode("utf-8", errors="replace"), note


# --- virtual sources ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimLine:
    id: str
    resource_id: str
    agent_id: str
    claim_type: str
    status: str
    expires_at: str
    fence: int
    contended: bool

    @property
    def key(self) -> str:
        return self.id


@dataclass(frozen=True)
class EventLine:
    id: int
    run_id: str
    type: str
    actor_id: str
    task_id: str
    payload_json: str
    created_at: str

    @property
    def key(self) -> int:
        return self.id


class VirtualSource:
    """A long table read by pages ordered by a unique key (`id`)."""

    table: ClassVar[str]
    select: ClassVar[str]
    filter_columns: ClassVar[tuple[str, ...]]
    append_only: ClassVar[bool] = False
    dense = False

    def where(self, text: str) -> tuple[str, list[Any]]:
        text = text.strip()
        if not text:
            return "", []
        escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        like = f"%{escaped}%"
        clause = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in self.filter_columns)
        return f"WHERE ({clause})", [like] * len(self.filter_columns)

    async def count(self, reader: Reader, text: str) -> int:
        where, params = self.where(text)
        if not where and self.append_only:
            # An append-only AUTOINCREMENT table with no gaps maps position n to id n+1, so a
            # jump to any position is a key lookup instead of an OFFSET scan. Nothing deletes
            # events, so once the ids are known to be dense, MAX(id) (one index probe) is the
            # count; the full COUNT(*) (130 ms at a million rows here) runs only once.
            if self.dense:
                return int(await reader.scalar(f"SELECT COALESCE(MAX(id), 0) FROM {self.table}") or 0)
            row = await reader.fetchone(f"SELECT COUNT(*), COALESCE(MAX(id), 0) FROM {self.table}")
            total, top = (int(row[0]), int(row[1])) if row else (0, 0)
            self.dense = total == top
            return total
        return int(await reader.scalar(f"SELECT COUNT(*) FROM {self.table} t {where}", params) or 0)

    async def page(
        self,
        reader: Reader,
        text: str,
        *,
        offset: int,
        limit: int,
        after: Any = None,
        before: Any = None,
    ) -> list[Any]:
        """`limit` rows in key order: after `after`, before `before`, or from `offset`."""
        where, params = self.where(text)
        conds = [where[len("WHERE ") :]] if where else []
        if after is not None:
            conds.append("t.id > ?")
            params.append(after)
        elif before is not None:
            conds.append("t.id < ?")
            params.append(before)
        clause = f"WHERE {' AND '.join(conds)}" if conds else ""
        if before is not None:
            sql = f"{self.select} {clause} ORDER BY t.id DESC LIMIT ?"
            rows = list(reversed(await reader.fetchall(sql, [*params, limit])))
        elif after is not None:
            rows = await reader.fetchall(f"{self.select} {clause} ORDER BY t.id LIMIT ?", [*params, limit])
        else:
            if self.append_only and not where and self.dense:
                # Dense AUTOINCREMENT ids: position n is id n+1, so a jump is a key lookup.
                rows = await reader.fetchall(f"{self.select} WHERE t.id > ? ORDER BY t.id LIMIT ?", [offset, limit])
            else:
                sql = f"{self.select} {clause} ORDER BY t.id LIMIT ? OFFSET ?"
                rows = await reader.fetchall(sql, [*params, limit, offset])
        return [self.line(r) for r in rows]

    def line(self, row: Any) -> Any:
        raise NotImplementedError


class ClaimsSource(VirtualSource):
    table = "claims"
    select = (
        "SELECT t.id, t.resource_id, t.agent_id, t.claim_type, t.status, t.expires_at, t.fence, "
        "(EXISTS (SELECT 1 FROM claim_contentions cc WHERE cc.resource_id = t.resource_id AND cc.status = 'open') "
        " OR (t.status = 'active' AND (SELECT COUNT(*) FROM claims c2 WHERE c2.resource_id = t.resource_id "
        "     AND c2.status = 'active') > 1)) AS contended "
        "FROM claims t"
    )
    filter_columns = ("t.resource_id", "t.agent_id", "t.status", "t.claim_type", "t.id")

    def line(self, row: Any) -> ClaimLine:
        return ClaimLine(
            id=row["id"],
            resource_id=row["resource_id"] or "",
            agent_id=row["agent_id"] or "",
            claim_type=row["claim_type"] or "",
            status=row["status"] or "",
            expires_at=row["expires_at"] or "",
            fence=int(row["fence"] or 0),
            contended=bool(row["contended"]),
        )


class EventsSource(VirtualSource):
    table = "events"
    select = "SELECT t.id, t.run_id, t.type, t.actor_id, t.task_id, t.payload_json, t.created_at FROM events t"
    filter_columns = ("t.type", "t.actor_id", "t.task_id", "t.run_id", "t.payload_json")
    append_only = True

    def line(self, row: Any) -> EventLine:
        return EventLine(
            id=int(row["id"]),
            run_id=row["run_id"] or "",
            type=row["type"] or "",
            actor_id=row["actor_id"] or "",
            task_id=row["task_id"] or "",
            payload_json=row["payload_json"] or "",
            created_at=row["created_at"] or "",
        )


def short_time(stamp: str) -> str:
    """`HH:MM:SS` of an RFC 3339 stamp (the console's compact time)."""
    if "T" in stamp and len(stamp) >= 19:
        return stamp[11:19]
    return stamp


def human_delta(seconds: float) -> str:
    """`12s`, `3m04s`, `2h05m`, `3d04h` (negative values get a leading `-`)."""
    sign = "-" if seconds < 0 else ""
    s = int(abs(seconds))
    if s < 60:
        return f"{sign}{s}s"
    if s < 3600:
        return f"{sign}{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{sign}{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{sign}{s // 86400}d{(s % 86400) // 3600:02d}h"


def seconds_until(stamp: str, now_ns: int) -> float | None:
    ns = _ns(stamp)
    return None if ns == 0 else (ns - now_ns) / 1e9


def join_nonempty(parts: Sequence[str], sep: str = " · ") -> str:
    return sep.join(p for p in parts if p)
