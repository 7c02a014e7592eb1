"""Records: one frozen dataclass per table, fields equal to the columns (snake_case).

Rows read from SQLite become records through `from_row`, which turns NULL into the zero value
of the field (`""`, `0`, `0.0`, `False`) as the spec requires; `to_dict()` is the JSON shape
every tool result uses. `tests/store/test_records.py` checks these classes against the schema.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Base: conversion from a database row and to a JSON-ready dict."""

    table: ClassVar[str]

    @classmethod
    def from_row(cls: type[R], row: Any) -> R:
        """Build from a `sqlite3.Row` or a mapping of column names to values (a missing column
        reads as NULL). The fields are set directly, as the dataclass's own `__init__` would set
        them (records have no `__post_init__`), at a fraction of its cost for a frozen class."""
        values: dict[str, Any] = {}
        for name, zero, convert in _plan(cls):
            try:
                raw = row[name]
            except (IndexError, KeyError):
                raw = None
            values[name] = zero if raw is None else raw if convert is None else convert(raw)
        record = object.__new__(cls)
        record.__dict__.update(values)
        return record

    def to_dict(self) -> dict[str, Any]:
        # Fields hold only str/int/float/bool, so a shallow dict equals dataclasses.asdict
        # (which deep-copies and costs ~10x more on big snapshots); a frozen record's __dict__
        # holds exactly its fields, in their order.
        return dict(self.__dict__)


_FIELD_KINDS: dict[type, tuple[tuple[str, str], ...]] = {}


def _field_kinds(cls: type) -> tuple[tuple[str, str], ...]:
    """(name, type name) of every field of a record class, computed once per class."""
    kinds = _FIELD_KINDS.get(cls)
    if kinds is None:
        kinds = _FIELD_KINDS[cls] = tuple((f.name, str(f.type)) for f in dataclasses.fields(cls))
    return kinds


_PLANS: dict[type, tuple[tuple[str, Any, Any], ...]] = {}
_CONVERTERS: dict[str, Any] = {"bool": bool, "float": float}


def _plan(cls: type) -> tuple[tuple[str, Any, Any], ...]:
    """(name, zero value, converter or None) of every field of a record class, once per class."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple((name, _zero(kind), _CONVERTERS.get(kind)) for name, kind in _field_kinds(cls))
    return plan


# How a missing row is named in errors (`get <kind> <id>: not found`).
RECORD_KINDS: dict[str, str] = {
    "runs": "run",
    "events": "event",
    "agents": "agent",
    "agent_sessions": "agent session",
    "tasks": "task",
    "resources": "resource",
    "claims": "claim",
    "proposals": "proposal",
    "votes": "vote",
    "decisions": "decision",
    "transactions": "transaction",
    "human_approvals": "human approval",
    "security_reviews": "security review",
    "test_runs": "test run",
    "memory_entries": "memory entry",
    "access_tokens": "access token",
    "workspaces": "workspace",
    "proposal_comments": "comment",
}


def _zero(type_name: object) -> Any:
    return {"str": "", "int": 0, "float": 0.0, "bool": False}[str(type_name)]


def _convert(type_name: object, raw: Any) -> Any:
    kind = str(type_name)
    if kind == "bool":
        return bool(raw)
    if kind == "float":
        return float(raw)
    return raw


@dataclasses.dataclass(frozen=True)
class Run(Record):
    table: ClassVar[str] = "runs"

    id: str
    goal: str
    status: str
    started_at: str
    ended_at: str
    metadata_json: str
    workspace_id: str


@dataclasses.dataclass(frozen=True)
class Event(Record):
    table: ClassVar[str] = "events"

    id: int
    run_id: str
    type: str
    actor_id: str
    task_id: str
    payload_json: str
    created_at: str
    principal: str = ""
    transport: str = ""


@dataclasses.dataclass(frozen=True)
class Agent(Record):
    table: ClassVar[str] = "agents"

    id: str
    role: str
    name: str
    adapter: str
    command: str
    model: str
    status: str
    is_enabled: bool
    created_at: str


@dataclasses.dataclass(frozen=True)
class AgentSession(Record):
    table: ClassVar[str] = "agent_sessions"

    id: str
    agent_id: str
    run_id: str
    adapter: str
    provider: str
    model: str
    external_session_id: str
    external_resume_command: str
    working_directory: str
    mcp_socket: str
    status: str
    started_at: str
    last_seen_at: str
    ended_at: str
    metadata_json: str
    workspace_id: str


@dataclasses.dataclass(frozen=True)
class AgentSessionEvent(Record):
    table: ClassVar[str] = "agent_session_events"

    id: int
    session_id: str
    event_type: str
    payload_json: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class AdapterCapability(Record):
    table: ClassVar[str] = "adapter_capabilities"

    adapter: str
    supports_resume: bool
    supports_mcp: bool
    supports_readonly_workspace: bool
    supports_session_capture: bool
    metadata_json: str


@dataclasses.dataclass(frozen=True)
class RunSnapshot(Record):
    table: ClassVar[str] = "run_snapshots"

    id: str
    run_id: str
    snapshot_json: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class Task(Record):
    table: ClassVar[str] = "tasks"

    id: str
    title: str
    body_md: str
    status: str
    priority: int
    risk: str
    assigned_agent_id: str
    readable_paths_json: str
    created_at: str
    updated_at: str
    run_id: str


@dataclasses.dataclass(frozen=True)
class Resource(Record):
    table: ClassVar[str] = "resources"

    id: str
    type: str
    path: str
    symbol: str
    language: str
    start_line: int
    end_line: int
    current_hash: str
    metadata_json: str


@dataclasses.dataclass(frozen=True)
class Claim(Record):
    table: ClassVar[str] = "claims"

    id: str
    resource_id: str
    agent_id: str
    task_id: str
    claim_type: str
    base_hash: str
    status: str
    expires_at: str
    heartbeat_at: str
    renewable: bool
    resume_policy: str
    rationale_md: str
    fence: int
    created_at: str
    workspace_id: str


@dataclasses.dataclass(frozen=True)
class ClaimContention(Record):
    table: ClassVar[str] = "claim_contentions"

    id: str
    resource_id: str
    claimant_id: str
    challenged_claim_id: str
    status: str
    reason: str
    resolved_by: str
    resolved_at: str
    requested_resource_id: str
    requested_agent_id: str
    requested_task_id: str
    requested_mode: str
    requested_path: str
    resolution: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class Counter(Record):
    table: ClassVar[str] = "counters"

    name: str
    value: int


@dataclasses.dataclass(frozen=True)
class Proposal(Record):
    table: ClassVar[str] = "proposals"

    id: str
    task_id: str
    agent_id: str
    title: str
    summary_md: str
    patch_path: str
    status: str
    risk: str
    current_revision: str
    revision_number: int
    expected_tests_json: str
    rollback_notes: str
    workspace_id: str
    deliberation_id: str
    proposer_session_id: str
    base_revision: str
    vote_state: str
    policy_state: str
    approval_state: str
    transaction_state: str
    created_at: str
    updated_at: str
    run_id: str


@dataclasses.dataclass(frozen=True)
class PatchRevision(Record):
    table: ClassVar[str] = "patch_revisions"

    proposal_id: str
    number: int
    sha256: str
    patch_path: str
    touched_files_json: str
    claim_fences_json: str
    agent_id: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class ProposalResource(Record):
    table: ClassVar[str] = "proposal_resources"

    proposal_id: str
    resource_id: str


@dataclasses.dataclass(frozen=True)
class Vote(Record):
    table: ClassVar[str] = "votes"

    id: str
    proposal_id: str
    agent_id: str
    vote: str
    confidence: float
    reason_md: str
    revision: str
    session_id: str
    policy_weight: int
    policy_version: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class Decision(Record):
    table: ClassVar[str] = "decisions"

    id: str
    proposal_id: str
    task_id: str
    decision: str
    rationale_md: str
    decided_by: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class Transaction(Record):
    table: ClassVar[str] = "transactions"

    id: str
    proposal_id: str
    run_id: str
    revision: str
    before_git_hash: str
    after_git_hash: str
    status: str
    applied_by: str
    applied_at: str
    rollback_patch_path: str
    metadata_json: str
    created_at: str
    workspace_id: str


@dataclasses.dataclass(frozen=True)
class Landing(Record):
    """Where a proposal lands beyond the working tree: its branch and built commit, its pull
    request, and the forge checks last read for that commit."""

    table: ClassVar[str] = "landings"

    proposal_id: str
    mode: str
    ref: str
    base: str
    revision: str
    commit_sha: str
    pushed_sha: str
    pr_number: int
    pr_url: str
    pr_state: str
    checks_json: str
    ci_attempts: int
    ci_notified: str
    comments_seen_json: str
    updated_at: str


@dataclasses.dataclass(frozen=True)
class HumanApproval(Record):
    table: ClassVar[str] = "human_approvals"

    id: str
    proposal_id: str
    task_id: str
    subject: str
    reason_md: str
    status: str
    requested_by: str
    decision_md: str
    decided_by: str
    override_policy: bool
    revision: str
    created_at: str
    updated_at: str


@dataclasses.dataclass(frozen=True)
class SecurityReview(Record):
    table: ClassVar[str] = "security_reviews"

    id: str
    proposal_id: str
    resource_id: str
    task_id: str
    reviewer_id: str
    status: str
    summary_md: str
    findings_json: str
    revision: str
    created_at: str
    updated_at: str


@dataclasses.dataclass(frozen=True)
class TestRun(Record):
    __test__ = False  # not a pytest test class
    table: ClassVar[str] = "test_runs"

    id: str
    proposal_id: str
    task_id: str
    command: str
    status: str
    summary_md: str
    log_path: str
    exit_code: int
    revision: str
    outcome: str
    agent_id: str
    session_id: str
    created_at: str
    finished_at: str
    sandbox: str = ""
    argv_json: str = ""


@dataclasses.dataclass(frozen=True)
class MemoryEntry(Record):
    table: ClassVar[str] = "memory_entries"

    id: str
    scope: str
    kind: str
    title: str
    body_md: str
    source_event_id: int
    importance: int
    status: str
    workspace_id: str
    tags_json: str
    provenance_json: str
    source_session_id: str
    source_proposal_id: str
    confidence: float
    reliability: float
    pinned: bool
    revision: int
    archived_at: str
    resynthesis_status: str
    created_at: str
    updated_at: str
    author_id: str = ""


@dataclasses.dataclass(frozen=True)
class SessionCapability(Record):
    table: ClassVar[str] = "session_capabilities"

    id: str
    token_sha256: str
    session_id: str
    agent_id: str
    run_id: str
    role: str
    task_id: str
    proposal_id: str
    issued_at: str
    expires_at: str
    max_expires_at: str
    revoked_at: str
    revoked_reason: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class MemoryRevision(Record):
    """An earlier version of a memory entry, kept when the entry is edited."""

    table: ClassVar[str] = "memory_revisions"

    entry_id: str
    revision: int
    title: str
    body_md: str
    edited_by: str
    created_at: str


@dataclasses.dataclass(frozen=True)
class AccessToken(Record):
    table: ClassVar[str] = "access_tokens"

    id: str
    token_sha256: str
    principal: str
    agent_id: str
    created_at: str
    revoked_at: str


@dataclasses.dataclass(frozen=True)
class Workspace(Record):
    """One agent's git worktree for one task (`services.workspaces.worktrees`)."""

    table: ClassVar[str] = "workspaces"

    id: str
    agent_id: str
    task_id: str
    run_id: str
    proposal_id: str
    base_commit: str
    base_tree: str
    path: str
    gitdir: str
    state: str
    conflicts_json: str
    created_at: str
    updated_at: str
    remove_after: str
    removed_at: str


@dataclasses.dataclass(frozen=True)
class ProposalComment(Record):
    """A line comment on one revision of a proposal (`services.governance.comments`); `line` 0: on the whole
    file, `path` '': on the whole proposal."""

    table: ClassVar[str] = "proposal_comments"

    id: str
    proposal_id: str
    revision: int
    revision_sha: str
    path: str
    line: int
    side: str
    body_md: str
    author: str
    session_id: str
    created_at: str


ALL_RECORDS: tuple[type[Record], ...] = (
    Run,
    Event,
    Agent,
    AgentSession,
    AgentSessionEvent,
    AdapterCapability,
    RunSnapshot,
    Task,
    Resource,
    Claim,
    ClaimContention,
    Counter,
    Proposal,
    PatchRevision,
    ProposalResource,
    Vote,
    Decision,
    Transaction,
    HumanApproval,
    SecurityReview,
    TestRun,
    MemoryEntry,
    SessionCapability,
    AccessToken,
    MemoryRevision,
    Workspace,
    ProposalComment,
)
