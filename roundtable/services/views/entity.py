"""One record: the inspector's read (a record in full, its related rows and, for a proposal, its
diff, found the way the patch service stores it: `.roundtable/patches/<sha256>.diff`), and the
single-record reads the operator's flows make before they act."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roundtable.domain import BLOCKED_TASK_STATUSES, ApprovalStatus, RunStatus
from roundtable.errors import NotFound
from roundtable.services.coordination.autopilot import blocked_reason
from roundtable.services.repository.patches import patch_rel_path
from roundtable.store.db import Reader
from roundtable.store.records import AgentSession, HumanApproval, PatchRevision, Proposal


@dataclass(frozen=True)
class Entity:
    """One record in full, plus what the inspector shows beside it."""

    kind: str
    id: str
    record: dict[str, Any]
    related: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    diff_text: str = ""
    diff_note: str = ""
    # A proposal's branch or pull-request landing (`landings` row), when it has one.
    landing: dict[str, Any] | None = None


ENTITY_TABLES = {
    "run": ("runs", "id"),
    "proposal": ("proposals", "id"),
    "approval": ("human_approvals", "id"),
    "transaction": ("transactions", "id"),
    "claim": ("claims", "id"),
    "event": ("events", "id"),
    "session": ("agent_sessions", "id"),
    "task": ("tasks", "id"),
    "agent": ("agents", "id"),
}


async def load_entity(reader: Reader, kind: str, entity_id: str) -> Entity | None:
    table, key = ENTITY_TABLES[kind]
    row = await reader.fetchone(f"SELECT * FROM {table} WHERE {key} = ?", (entity_id,))
    if row is None:
        return None
    record = {k: row[k] for k in row.keys()}
    related: dict[str, list[dict[str, Any]]] = {}
    landed: dict[str, Any] | None = None
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
            (
                "comments",
                "SELECT revision, path, line, author, body_md FROM proposal_comments WHERE proposal_id = ?"
                " ORDER BY revision, created_at, id",
            ),
        ):
            related[name] = [
                dict(zip(r.keys(), tuple(r), strict=True)) for r in await reader.fetchall(sql, (entity_id,))
            ]
        if not related["comments"]:
            del related["comments"]  # listed only when there are some
        landing = await reader.fetchone(
            "SELECT mode, ref, commit_sha, pr_number, pr_url, pr_state, checks_json FROM landings WHERE proposal_id = ?",
            (entity_id,),
        )
        if landing is not None:  # a branch or pull-request landing: shown above the gates
            landed = dict(zip(landing.keys(), tuple(landing), strict=True))
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
    elif kind == "task" and record.get("status") in BLOCKED_TASK_STATUSES:
        reason = await blocked_reason(reader, str(entity_id))
        related["blocked"] = [{"reason": reason}] if reason else []
    elif kind == "agent":
        related["sessions"] = [
            dict(zip(r.keys(), tuple(r), strict=True))
            for r in await reader.fetchall(
                "SELECT id, status, adapter, started_at, ended_at FROM agent_sessions WHERE agent_id = ? "
                "ORDER BY started_at DESC, id DESC LIMIT 10",
                (entity_id,),
            )
        ]
    return Entity(kind, str(entity_id), record, related, landing=landed)


def patch_file(root: Path, record: dict[str, Any]) -> Path | None:
    """The stored diff of a proposal's current revision (`patches/<sha256>.diff`), else its patch_path."""
    revision = str(record.get("current_revision") or "")
    if revision and all(c in "0123456789abcdef" for c in revision.lower()):
        path = root / patch_rel_path(revision)
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


async def session(reader: Reader, session_id: str) -> AgentSession | None:
    """One agent session (the log and transcript viewers reload it as it runs)."""
    return await reader.one(AgentSession, "SELECT * FROM agent_sessions WHERE id = ?", (session_id,))


async def newest_revisions(reader: Reader, proposal_id: str, count: int = 2) -> list[PatchRevision]:
    """A proposal's newest `count` patch revisions, newest first (the review shows the current
    one and what changed since the previous)."""
    return await reader.all(
        PatchRevision,
        "SELECT * FROM patch_revisions WHERE proposal_id = ? ORDER BY number DESC LIMIT ?",
        (proposal_id, count),
    )


async def current_decision(reader: Reader, proposal: Proposal) -> HumanApproval | None:
    """The approval record of the proposal's current revision that a decision changes: its
    latest one that is not closed (an open request, or an earlier decision), if any."""
    return await reader.one(
        HumanApproval,
        "SELECT * FROM human_approvals WHERE proposal_id = ? AND revision = ? AND status != ?"
        " ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT 1",
        (proposal.id, proposal.current_revision, ApprovalStatus.CLOSED.value),
    )


async def run_to_show(reader: Reader, run_id: str = "") -> str:
    """The run a read-only console shows: `run_id` if it exists (NotFound if not), else the latest
    active run, else the latest run of any status, else "" (nothing is created)."""
    if run_id:
        row = await reader.fetchone("SELECT id FROM runs WHERE id = ?", (run_id,))
        if row is None:
            raise NotFound("run", run_id)
        return str(row[0])
    row = await reader.fetchone(
        "SELECT id FROM runs ORDER BY status = ? DESC, started_at DESC, id DESC LIMIT 1", (RunStatus.ACTIVE.value,)
    )
    return str(row[0]) if row is not None else ""
