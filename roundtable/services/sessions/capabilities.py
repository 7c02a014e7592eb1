"""Capability tokens for supervised agent sessions and the per-call checks.

A capability binds one session to an agent, a run, a role, a task and (for reviewers, testers
and security) one proposal. The token is `rtcap_` + 256 random bits; only its SHA-256 is stored.
On every call the capability and everything it depends on are re-read from the database
(`check_call`), in a fixed order; nothing is cached between calls, so revoking a token,
reassigning a task, deciding the proposal or ending the run refuses the very next call.

A refusal raises `Denied` (a `PermissionDenied` with a stable `reason_code`); the caller records
it with `record_denial`, in its own transaction, because the refused call itself changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from roundtable import clock
from roundtable.domain import DECIDED_PROPOSAL_STATUSES, TERMINAL_TASK_STATUSES, EventType, RunStatus, SessionStatus
from roundtable.errors import PermissionDenied
from roundtable.services.coordination.claims import parse_resource_id
from roundtable.services.coordination.session_scope import (
    OutOfScope,
    Scope,
    check_read,
    clean_path,
    in_readable,
    parse_readable,
    within,
)
from roundtable.store.db import Reader, Tx
from roundtable.store.records import AgentSession, Claim, Proposal, SessionCapability, Task

TOKEN_PREFIX = "rtcap_"
LIFETIME_S = 3600
MAX_LIFETIME_S = 12 * 3600
EXPIRED_OR_REVOKED = "capability expired or revoked"

ROLES = ("implementer", "reviewer", "tester", "security", "planner")
# Roles bound to a task assigned to the agent (the others are bound to one proposal of the task).
TASK_ROLES = frozenset({"implementer", "planner"})
_FAMILY = re.compile(r"^(implementer|reviewer|tester|security|architect)-[1-9][0-9]*$")
# The capability role of an agent id family where the two differ: an architect plans.
_FAMILY_ROLE = {"architect": "planner"}

# What each session role may call, default deny. Names are canonical (dotted).
_COMMON = frozenset(
    {
        "table.get_state",
        "table.watch",
        "task.get",
        "task.list",
        "memory.query",
        "memory.summarize",
        "resource.get",
        "resource.search",
        "resource.claim_status",
        "proposal.get",
        "proposal.list",
        "vote.list",
        "human.approval_status",
        "test.get_result",
        "test.suggest",
        "agent.turn_request",
        "agent.turn_start",
        "agent.turn_complete",
        "repo.read_file",
        "repo.search",
        "repo.symbols",
        "resource.claim",
        "resource.release",
        "memory.record",
        "proposal.request_review",
        "patch.validate",
    }
)
ALLOWED: dict[str, frozenset[str]] = {
    "implementer": _COMMON | {"proposal.create", "proposal.attach_patch", "workspace.propose", "workspace.sync"},
    "reviewer": _COMMON | {"vote.cast", "proposal.comment"},
    "tester": _COMMON | {"vote.cast", "proposal.comment", "test.evidence.submit"},
    "security": _COMMON | {"vote.cast", "proposal.comment", "security.review"},
    # The planner turns a run's goal into tasks, then closes its own planning task.
    "planner": _COMMON | {"task.create", "task.update_status"},
}
CLAIM_MODES: dict[str, frozenset[str]] = {
    "implementer": frozenset({"read", "write", "review", "exclusive"}),
    "reviewer": frozenset({"read", "review"}),
    "tester": frozenset({"read"}),
    "security": frozenset({"read", "review"}),
    "planner": frozenset({"read"}),
}
REPO_READS = frozenset({"repo.read_file", "repo.search", "repo.symbols"})
# Arguments that name who is acting: filled from the capability when absent, refused when they
# differ. `proposal_id` is bound only for roles that carry a proposal.
_IDENTITY_ARGS = (
    "agent_id",
    "run_id",
    "task_id",
    "session_id",
    "actor_id",
    "decided_by",
    "reviewer_id",
    "requested_by",
)
_ACTOR_ARGS = frozenset({"actor_id", "decided_by", "reviewer_id", "requested_by"})
# Identity-named arguments that are not identity for one tool: a planner's new task gets its own
# id, never the planning task's; `table.get_state` filters by run and agent within the session's
# scope (binding them filtered every list without those columns to nothing).
_FILTER_ARGS = frozenset({("task.create", "task_id"), ("table.get_state", "run_id"), ("table.get_state", "agent_id")})
# Identity arguments left empty when absent (a given one must still match): `table.watch` without a
# run shows what concerns the session's agent (its scope keeps it to its run all the same).
_UNFILLED_ARGS = frozenset({("table.watch", "run_id")})


class Denied(PermissionDenied):
    """A refused session call; `reason_code` goes into the `capability.denied` event."""

    def __init__(self, reason_code: str, message: str) -> None:
        super().__init__(message)
        self.reason_code = reason_code


class Expired(PermissionDenied):
    """The token is known but expired or revoked (no event: it is not a policy denial). A session
    stopped for its budget is told why (the reason starts `budget:`)."""

    def __init__(self, revoked_reason: str = "") -> None:
        from roundtable.services.sessions.budgets import REASON_PREFIX

        reason = revoked_reason if revoked_reason.startswith(REASON_PREFIX) else ""
        super().__init__(f"{EXPIRED_OR_REVOKED} ({reason})" if reason else EXPIRED_OR_REVOKED)
        self.budget_reason = reason


# --- tokens ---------------------------------------------------------------------------------


def new_token() -> str:
    """`rtcap_` + 43 URL-safe base64 characters of 32 CSPRNG bytes."""
    raw = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
    return TOKEN_PREFIX + raw


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def looks_like_token(token: str) -> bool:
    return token.startswith(TOKEN_PREFIX) and len(token) == len(TOKEN_PREFIX) + 43


def role_for_agent(agent_id: str) -> str | None:
    """The capability role from the agent id family (`implementer-2` → implementer), or None."""
    match = _FAMILY.match(agent_id)
    return _FAMILY_ROLE.get(match.group(1), match.group(1)) if match else None


def _add_seconds(stamp: str, seconds: int) -> str:
    return clock.format_ns(clock.parse(stamp) + seconds * 1_000_000_000)


async def issue(
    tx: Tx,
    *,
    session_id: str,
    agent_id: str,
    run_id: str,
    role: str,
    task_id: str,
    proposal_id: str = "",
    lifetime_s: int = LIFETIME_S,
    max_lifetime_s: int = MAX_LIFETIME_S,
) -> tuple[str, SessionCapability]:
    """Store a new capability; returns the token (shown once, never stored) and the row."""
    if role not in ROLES:
        raise PermissionDenied(f"role {role} cannot be launched")
    token = new_token()
    now = clock.now()
    cap_id = clock.new_id("CAP")
    await tx.insert(
        "session_capabilities",
        {
            "id": cap_id,
            "token_sha256": token_hash(token),
            "session_id": session_id,
            "agent_id": agent_id,
            "run_id": run_id,
            "role": role,
            "task_id": task_id,
            "proposal_id": proposal_id or None,
            "issued_at": now,
            "expires_at": _add_seconds(now, lifetime_s),
            "max_expires_at": _add_seconds(now, max_lifetime_s),
            "created_at": now,
        },
    )
    cap = await tx.one(SessionCapability, "SELECT * FROM session_capabilities WHERE id = ?", (cap_id,))
    assert cap is not None
    return token, cap


async def lookup(reader: Reader | Tx, token: str) -> SessionCapability | None:
    """The capability for `token` in any state, or None when unknown or malformed."""
    if not looks_like_token(token):
        return None
    return await reader.one(
        SessionCapability, "SELECT * FROM session_capabilities WHERE token_sha256 = ?", (token_hash(token),)
    )


def is_live(cap: SessionCapability, now: str | None = None) -> bool:
    """Not revoked and not expired (server clock)."""
    return not cap.revoked_at and clock.parse(now or clock.now()) < clock.parse(cap.expires_at)


async def extend(tx: Tx, cap_id: str, lifetime_s: int = LIFETIME_S) -> SessionCapability | None:
    """Push `expires_at` to now + lifetime, never beyond `max_expires_at`. Expiry is final: a
    capability that is revoked or already expired is never revived (no-op)."""
    cap = await tx.one(SessionCapability, "SELECT * FROM session_capabilities WHERE id = ?", (cap_id,))
    if cap is None or not is_live(cap):
        return cap
    wanted = clock.parse(_add_seconds(clock.now(), lifetime_s))
    new_expiry = clock.format_ns(min(wanted, clock.parse(cap.max_expires_at)))
    if clock.parse(new_expiry) > clock.parse(cap.expires_at):
        await tx.update("session_capabilities", {"id": cap_id}, {"expires_at": new_expiry})
    return await tx.one(SessionCapability, "SELECT * FROM session_capabilities WHERE id = ?", (cap_id,))


async def revoke(tx: Tx, cap_id: str, reason: str) -> bool:
    """Revoke once; returns False when it was already revoked or does not exist."""
    current = await tx.scalar("SELECT revoked_at IS NULL FROM session_capabilities WHERE id = ?", (cap_id,))
    if not current:
        return False
    await tx.update("session_capabilities", {"id": cap_id}, {"revoked_at": clock.now(), "revoked_reason": reason})
    return True


async def for_session(reader: Reader | Tx, session_id: str) -> list[SessionCapability]:
    return await reader.all(
        SessionCapability,
        "SELECT * FROM session_capabilities WHERE session_id = ? ORDER BY issued_at, id",
        (session_id,),
    )


# --- tool listing ------------------------------------------------------------------------------


def allowed_tools(role: str) -> frozenset[str]:
    return ALLOWED.get(role, frozenset())


def bound_args(cap: SessionCapability) -> dict[str, str]:
    """The identity arguments this capability fixes."""
    values = {
        "agent_id": cap.agent_id,
        "run_id": cap.run_id,
        "task_id": cap.task_id,
        "session_id": cap.session_id,
    }
    for name in _ACTOR_ARGS:
        values[name] = cap.agent_id
    if cap.proposal_id:
        values["proposal_id"] = cap.proposal_id
    return values


def session_schema(schema: dict[str, Any], cap: SessionCapability) -> dict[str, Any]:
    """The input schema as a session sees it: identity fields it gets for free are not required."""
    bound = bound_args(cap)
    required = [name for name in schema.get("required", []) if name not in bound]
    out = dict(schema)
    if required:
        out["required"] = required
    else:
        out.pop("required", None)
    return out


# --- the per-call checks --------------------------------------------------------


def _columns(record: type, alias: str, prefix: str) -> str:
    import dataclasses

    return ", ".join(f"{alias}.{f.name} AS {prefix}{f.name}" for f in dataclasses.fields(record))


_STATE_SQL = f"""
SELECT {_columns(SessionCapability, "c", "cap_")}, {_columns(AgentSession, "s", "s_")},
       r.status AS run_status, a.is_enabled AS agent_enabled,
       t.id AS task_id, t.status AS task_status, t.assigned_agent_id AS task_assignee,
       t.readable_paths_json AS task_readable, p.task_id AS proposal_task, p.status AS proposal_status
FROM session_capabilities c
LEFT JOIN agent_sessions s ON s.id = c.session_id
LEFT JOIN runs r ON r.id = c.run_id
LEFT JOIN agents a ON a.id = c.agent_id
LEFT JOIN tasks t ON t.id = c.task_id
LEFT JOIN proposals p ON p.id = c.proposal_id
WHERE c.id = ?"""


@dataclass(frozen=True)
class Checked:
    """A call that passed: the arguments to dispatch (identity filled, claim_id dropped)."""

    capability: SessionCapability
    session: AgentSession
    args: dict[str, Any]


async def check_call(
    reader: Reader | Tx,
    root: Path,
    cap_id: str,
    tool: str,
    args: dict[str, Any],
    properties: frozenset[str],
) -> Checked:
    """Run every check for one call, re-reading all state. `tool` is the canonical name and
    `properties` the argument names its schema accepts. Raises `Expired` or `Denied`."""
    now = clock.now()
    # One snapshot read for steps 1-5 (one round trip instead of six).
    row = await reader.fetchone(_STATE_SQL, (cap_id,))
    if row is None:
        raise Expired()
    cap = SessionCapability.from_row({k[4:]: row[k] for k in row.keys() if k.startswith("cap_")})
    # 1. The capability itself.
    if not is_live(cap, now):
        raise Expired(cap.revoked_reason or "")
    # 2. Session.
    session = AgentSession.from_row({k[2:]: row[k] for k in row.keys() if k.startswith("s_")}) if row["s_id"] else None
    if (
        session is None
        or session.status != SessionStatus.ACTIVE
        or session.ended_at
        or session.agent_id != cap.agent_id
        or session.run_id != cap.run_id
    ):
        raise Denied("session_inactive", "session is not active")
    # 3. Run.
    if row["run_status"] != RunStatus.ACTIVE:
        raise Denied("run_inactive", f"run {cap.run_id} is not active")
    # 4. Agent.
    if row["agent_enabled"] is None or not row["agent_enabled"] or role_for_agent(cap.agent_id) != cap.role:
        raise Denied("agent_disabled", f"agent {cap.agent_id} is not enabled for role {cap.role}")
    # 5. Task and proposal binding.
    if row["task_id"] is None or row["task_status"] in TERMINAL_TASK_STATUSES:
        raise Denied("task_inactive", f"task {cap.task_id} is not open")
    if cap.role in TASK_ROLES:
        if row["task_assignee"] != cap.agent_id:
            raise Denied("task_reassigned", f"task {cap.task_id} is not assigned to {cap.agent_id}")
    elif (
        row["proposal_task"] is None
        or row["proposal_task"] != cap.task_id
        or row["proposal_status"] in DECIDED_PROPOSAL_STATUSES
    ):
        raise Denied("proposal_closed", f"proposal {cap.proposal_id or '(none)'} is not open for this session")
    task = Task.from_row({"id": row["task_id"], "readable_paths_json": row["task_readable"]})
    # 6. Role → tool matrix.
    if tool not in allowed_tools(cap.role):
        raise Denied("tool_not_permitted", f"operation {tool} is not permitted for role {cap.role}")
    # 7. Identity binding.
    out = dict(args)
    for name, value in bound_args(cap).items():
        if name not in properties or (tool, name) in _FILTER_ARGS:
            continue
        given = out.get(name)
        if given is None or (isinstance(given, str) and not given.strip()):
            if (tool, name) not in _UNFILLED_ARGS:
                out[name] = value
        elif given != value:
            raise Denied("identity_mismatch", f"argument {name} does not match the session capability")
    if tool == "task.create":
        out.pop("task_id", None)  # new ids only: a session never names (or replaces) a task
    if tool == "resource.claim":
        out.pop("claim_id", None)  # the server generates claim ids for sessions
    # 8. Scope: records of another task, then tool-specific checks.
    readable = _readable_paths(task)
    try:
        await check_read(reader, Scope.of(cap, readable), tool, out)
    except OutOfScope as exc:
        raise Denied(exc.reason_code, str(exc)) from None
    if tool in REPO_READS:
        out = await _check_repo_read(reader, root, cap, tool, out, readable, now)
    elif tool == "resource.claim":
        _check_claim(cap, out, readable)
    elif tool == "resource.release":
        claim = await reader.one(Claim, "SELECT * FROM claims WHERE id = ?", (str(out.get("claim_id", "")),))
        if claim is not None and claim.agent_id != cap.agent_id:
            raise Denied("not_own_claim", f"claim {claim.id} is not held by {cap.agent_id}")
    elif tool == "proposal.attach_patch":
        proposal = await reader.one(
            Proposal, "SELECT * FROM proposals WHERE id = ?", (str(out.get("proposal_id", "")),)
        )
        if proposal is not None and (proposal.agent_id != cap.agent_id or proposal.task_id != cap.task_id):
            raise Denied("not_own_proposal", f"proposal {proposal.id} is not yours to change")
    return Checked(capability=cap, session=session, args=out)


def _readable_paths(task: Task) -> list[str]:
    return parse_readable(task.readable_paths_json)


def _claim_path(resource_id: str, path: str) -> tuple[str, str]:
    """(type, path) of a claim's resource, deriving the path from the id when the row has none."""
    rtype, id_path, _symbol = parse_resource_id(resource_id)
    return rtype, path or id_path


async def _covering_claim(reader: Reader | Tx, cap: SessionCapability, path: str, now: str) -> bool:
    rows = await reader.fetchall(
        """SELECT c.resource_id, c.expires_at, r.type, r.path FROM claims c
           LEFT JOIN resources r ON r.id = c.resource_id
           WHERE c.agent_id = ? AND c.status = 'active'""",
        (cap.agent_id,),
    )
    for row in rows:
        if clock.parse(row["expires_at"]) <= clock.parse(now):
            continue
        rtype, rpath = _claim_path(row["resource_id"], row["path"] or "")
        cleaned = clean_path(rpath)
        if cleaned is None:
            continue
        if (row["type"] or rtype) == "directory":
            if cleaned == "" or within(path, cleaned):
                return True
        elif path == cleaned:
            return True
    return False


async def _check_repo_read(
    reader: Reader | Tx,
    root: Path,
    cap: SessionCapability,
    tool: str,
    args: dict[str, Any],
    readable: list[str],
    now: str,
) -> dict[str, Any]:
    raw = args.get("path")
    if tool == "repo.search" and not raw:
        # A session search never walks the whole tree: only the (single) readable path.
        candidates = [c for c in (clean_path(r) for r in readable) if c]
        if len(candidates) != 1:
            raise Denied(
                "path_required",
                "repo.search in a session needs a path within the task's readable_paths: "
                + (", ".join(candidates) or "(none)"),
            )
        raw = candidates[0]
        args = {**args, "path": raw}
    path = clean_path(str(raw or ""))
    if path is None or not in_readable(path, readable):
        raise Denied("path_not_readable", f"path {raw} is outside the task's readable_paths")
    # A symlink must not lead out of the readable paths either.
    real = await anyio.to_thread.run_sync(_resolved_relative, root, path)
    if real is None:
        raise Denied("path_not_readable", f"path {raw} is outside the task's readable_paths")
    if real != "." and real != path and not in_readable(real, readable):
        raise Denied("path_not_readable", f"path {raw} is outside the task's readable_paths")
    if not await _covering_claim(reader, cap, path, now):
        raise Denied("no_claim", f"path {raw} is not covered by an active claim of {cap.agent_id}")
    return args


def _resolved_relative(root: Path, path: str) -> str | None:
    """`path` with symlinks resolved, relative to the real root; None when it leaves the root."""
    real_root = root.resolve()
    try:
        return (real_root / path).resolve().relative_to(real_root).as_posix()
    except (ValueError, OSError):
        return None


def _check_claim(cap: SessionCapability, args: dict[str, Any], readable: list[str]) -> None:
    mode = str(args.get("claim_type", ""))
    if mode not in CLAIM_MODES.get(cap.role, frozenset()):
        raise Denied("claim_mode", f"claim type {mode} is not permitted for role {cap.role}")
    raw = str(args.get("path") or "")
    if not raw:
        _type, raw = _claim_path(str(args.get("resource_id", "")), "")
    path = clean_path(raw)
    if path is None or not in_readable(path, readable):
        raise Denied(
            "path_not_readable", f"resource {raw or args.get('resource_id')} is outside the task's readable_paths"
        )


# --- denials -----------------------------------------------------------------------------------


async def record_denial(tx: Tx, cap: SessionCapability, tool: str, reason_code: str) -> None:
    """Append `capability.denied` in `tx`, a transaction of its own (`capability.record_denial`:
    the refused call itself changes nothing); never the arguments or the token. The event is the
    session's: its agent is the principal and `session` the transport, whoever records it (the
    session endpoint does, as the supervisor)."""
    acting = tx.principal, tx.transport
    tx.principal, tx.transport = f"agent:{cap.agent_id}", "session"
    try:
        await tx.append_event(
            cap.run_id,
            EventType.CAPABILITY_DENIED,
            {"session_id": cap.session_id, "tool": tool, "reason_code": reason_code},
            actor_id=cap.agent_id,
            task_id=cap.task_id,
        )
    finally:
        tx.principal, tx.transport = acting
