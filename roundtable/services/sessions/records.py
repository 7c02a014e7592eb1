"""Agent session records: register (upsert), heartbeat, end, lookup and listing.

A session row says which agent runs where, through which adapter, and how to resume it. Its
lifecycle notes (`registered`, `heartbeat`, `ended`) go to `agent_session_events`, never to the
run event log. Every function takes the transaction or reader it works in, so callers choose
the boundaries (the supervisor writes a session row and its capability in one transaction).
The session operations' arguments are declared here and received whole (`RegisterArgs`,
`OpenArgs`, `HeartbeatArgs`, …); `SessionDraft` is the row a registration stores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from roundtable import clock
from roundtable.domain import ClaimStatus, Delivery, EventType, SessionStatus, TaskStatus
from roundtable.errors import ValidationError
from roundtable.services.args import Args, Id, Int, Object, Text, Word
from roundtable.services.coordination import turns
from roundtable.store.db import Reader, Tx
from roundtable.store.records import AgentSession

# The session's metadata key for the operator's messages waiting for its turn to end.
PENDING_MESSAGES = "pending_messages"


@dataclass(frozen=True)
class SessionDraft:
    """What a registration stores; omitted optional fields are cleared on re-registration."""

    id: str
    agent_id: str
    run_id: str
    adapter: str
    working_directory: str
    provider: str = ""
    model: str = ""
    external_session_id: str = ""
    external_resume_command: str = ""
    mcp_socket: str = ""
    status: str = SessionStatus.ACTIVE
    metadata: dict[str, Any] | None = None


_SESSION = "The session id."


class SessionRecordArgs(Args):
    """The arguments of a session record, shared by `session.register` and `session.open`."""

    session_id: Id = Field(description=_SESSION)
    agent_id: Id = Field(description="Agent.")
    run_id: Id = Field(description="Run.")
    adapter: Text = Field(description="Adapter.")
    working_directory: Text = Field(description="Working directory.")
    model: Text = Field(default="", description="Model.")
    mcp_socket: Text = Field(default="", description="MCP socket path.")

    def draft(self, **more: Any) -> SessionDraft:
        """The session row these arguments describe (`more`: the operation's own columns)."""
        return SessionDraft(
            id=self.session_id,
            agent_id=self.agent_id,
            run_id=self.run_id,
            adapter=self.adapter,
            working_directory=self.working_directory,
            model=self.model,
            mcp_socket=self.mcp_socket,
            **more,
        )


class RegisterArgs(SessionRecordArgs):
    # `session.register` (the operator's: a session a harness reports itself).
    provider: Text = Field(default="", description="Provider.")
    external_session_id: Id = Field(default="", description="The harness's own session id.")
    resume_command: Text = Field(default="", description="How to resume it (default: from the adapter's pattern).")
    status: Word = Field(default=SessionStatus.ACTIVE, description="Status (default active).")


class HeartbeatArgs(Args):
    # `session.heartbeat`.
    session_id: Id = Field(description=_SESSION)
    status: Word = Field(default="", description="New status.")
    external_session_id: Id = Field(default="", description="External id.")


def resume_command(pattern: str, external_session_id: str) -> str:
    """The adapter's resume pattern with the external session id filled in ('' when unknown)."""
    if not pattern.strip() or not external_session_id.strip():
        return ""
    return pattern.replace("{{external_session_id}}", external_session_id)


def _metadata_text(metadata: dict[str, Any] | None) -> str | None:
    if not metadata:
        return None
    try:
        return json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"session metadata is not serialisable: {exc}") from None


async def _session_event(tx: Tx, session_id: str, event_type: str, payload: dict[str, Any]) -> None:
    await tx.insert(
        "agent_session_events",
        {
            "session_id": session_id,
            "event_type": event_type,
            "payload_json": json.dumps(payload, separators=(",", ":")),
            "created_at": clock.now(),
        },
    )


async def register(tx: Tx, draft: SessionDraft) -> AgentSession:
    """Upsert the session by id; `started_at` keeps its first value."""
    required = (draft.id, draft.agent_id, draft.run_id, draft.adapter, draft.working_directory)
    if any(not value.strip() for value in required):
        raise ValidationError("id, agent, run, adapter, and cwd are required")
    metadata_json = _metadata_text(draft.metadata)
    now = clock.now()
    await tx.execute(
        """INSERT INTO agent_sessions (id, agent_id, run_id, adapter, provider, model,
               external_session_id, external_resume_command, working_directory, mcp_socket,
               status, started_at, last_seen_at, ended_at, metadata_json)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, COALESCE(?, '{}'))
           ON CONFLICT(id) DO UPDATE SET
               agent_id = excluded.agent_id, run_id = excluded.run_id, adapter = excluded.adapter,
               provider = excluded.provider, model = excluded.model,
               external_session_id = excluded.external_session_id,
               external_resume_command = excluded.external_resume_command,
               working_directory = excluded.working_directory, mcp_socket = excluded.mcp_socket,
               status = excluded.status, last_seen_at = excluded.last_seen_at, ended_at = NULL,
               metadata_json = excluded.metadata_json""",
        (
            draft.id,
            draft.agent_id,
            draft.run_id,
            draft.adapter,
            draft.provider or None,
            draft.model or None,
            draft.external_session_id or None,
            draft.external_resume_command or None,
            draft.working_directory,
            draft.mcp_socket or None,
            draft.status or "active",
            now,
            now,
            metadata_json,
        ),
    )
    tx.tables.add("agent_sessions")
    session = await get(tx, draft.id)
    await _session_event(tx, session.id, "registered", {"status": session.status, "adapter": session.adapter})
    return session


async def register_reported(tx: Tx, args: RegisterArgs, resume_pattern: str = "") -> AgentSession:
    """`session.register`: the session as its harness reports it; without a resume command, the
    one the adapter's `resume_pattern` makes of its external id."""
    command = args.resume_command or resume_command(resume_pattern, args.external_session_id)
    draft = args.draft(
        provider=args.provider,
        external_session_id=args.external_session_id,
        external_resume_command=command,
        status=args.status,
    )
    return await register(tx, draft)


async def get(reader: Reader | Tx, session_id: str) -> AgentSession:
    session = await reader.get(AgentSession, session_id)
    return session


async def heartbeat(tx: Tx, args: HeartbeatArgs) -> AgentSession:
    """Touch `last_seen_at`; status and external id change only when given."""
    session_id, status, external_session_id = args.session_id, args.status, args.external_session_id
    session = await get(tx, session_id)
    now = clock.now()
    await tx.update(
        "agent_sessions",
        {"id": session.id},
        {
            "status": status.strip() or session.status,
            "external_session_id": external_session_id.strip() or session.external_session_id or None,
            "last_seen_at": now,
        },
    )
    session = await get(tx, session_id)
    await _session_event(tx, session.id, "heartbeat", {"status": session.status, "last_seen_at": now})
    return session


async def end(tx: Tx, session_id: str, *, status: str = "", actor: str = "operator") -> AgentSession:
    """Mark the session ended (or the given status) and release the read claims it leaves
    behind (`release_reads`); repeatable, each call replaces the end time."""
    if not session_id.strip():
        raise ValidationError("session is required")
    session = await get(tx, session_id)
    now = clock.now()
    final = status.strip() or "ended"
    await tx.update("agent_sessions", {"id": session.id}, {"status": final, "ended_at": now, "last_seen_at": now})
    await _session_event(tx, session.id, "ended", {"status": final, "ended_at": now})
    await release_reads(tx, session, now, actor=actor)
    return await get(tx, session_id)


# Claims that only look: once the session that took them has ended nothing needs them, and left
# active they would show the files as contended until they expire.
LOOKING_MODES = ("read", "review")


async def release_reads(tx: Tx, session: AgentSession, now: str, *, actor: str) -> list[str]:
    """Release (`claim.released`, reason `session … ended`) the read and review claims the
    session's agent took while the session ran, unless another session of that agent is still
    live. Write claims stay: a proposal's claims gate needs them until it is applied or rejected,
    and they are released then. Returns the released claim ids."""
    from roundtable.services.coordination.claims import transition
    from roundtable.store.records import Claim

    still_live = await tx.scalar(
        "SELECT 1 FROM agent_sessions WHERE agent_id = ? AND id != ? AND ended_at IS NULL LIMIT 1",
        (session.agent_id, session.id),
    )
    if still_live:
        return []
    marks = ", ".join("?" for _ in LOOKING_MODES)
    taken = await tx.all(
        Claim,
        f"SELECT * FROM claims WHERE agent_id = ? AND status = 'active' AND claim_type IN ({marks})"
        " AND created_at >= ? ORDER BY created_at, id",
        (session.agent_id, *LOOKING_MODES, session.started_at),
    )
    released = []
    for claim in taken:
        _claim, changed = await transition(
            tx,
            claim.id,
            ClaimStatus.RELEASED,
            now,
            actor_id=actor,
            reason=f"session {session.id} ended",
            run_id=session.run_id,
            operator=True,
        )
        if changed:
            released.append(claim.id)
    return released


async def for_agent(reader: Reader | Tx, agent_id: str) -> AgentSession | None:
    """The agent's current session: `active` first, then latest seen, then latest started, then id."""
    return await reader.one(
        AgentSession,
        """SELECT * FROM agent_sessions WHERE agent_id = ?
           ORDER BY (status = 'active') DESC, COALESCE(last_seen_at, '') DESC, started_at DESC, id DESC
           LIMIT 1""",
        (agent_id,),
    )


async def list_sessions(reader: Reader | Tx, *, status: str = "") -> list[AgentSession]:
    if status:
        return await reader.all(
            AgentSession, "SELECT * FROM agent_sessions WHERE status = ? ORDER BY started_at, id", (status,)
        )
    return await reader.all(AgentSession, "SELECT * FROM agent_sessions ORDER BY started_at, id")


async def session_events(reader: Reader | Tx, session_id: str) -> list[dict[str, Any]]:
    rows = await reader.fetchall(
        "SELECT id, event_type, payload_json, created_at FROM agent_session_events WHERE session_id = ? ORDER BY id",
        (session_id,),
    )
    return [
        {
            "id": r["id"],
            "event_type": r["event_type"],
            "payload": json.loads(r["payload_json"]),
            "created_at": r["created_at"],
        }
        for r in rows
    ]


def metadata(session: AgentSession) -> dict[str, Any]:
    try:
        value = json.loads(session.metadata_json or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class SessionExit:
    """A supervised session ended: `exit_code` (non-zero = failed) and why it ended
    (`process_exited`, `launch_failed`, `shutdown`)."""

    session_id: str
    exit_code: int
    reason: str


# --- the supervisor's bookkeeping (its internal operations, `tools/sessions_ops.py`) -------------

SUPERVISOR_ACTOR = "supervisor"


class OpenArgs(SessionRecordArgs):
    # `session.open` (internal: the supervisor's).
    role: Text = Field(description="Capability role.")
    task_id: Id = Field(description="Task.")
    proposal_id: Id = Field(default="", description="Proposal.")
    launched_by: Id = Field(default="operator", description="Principal that asked for the launch.")
    metadata: Object = {}


@dataclass(frozen=True)
class Opened:
    """A supervised session recorded: its row, its capability and the token (never stored)."""

    session: AgentSession
    capability_id: str
    token: str


async def open_supervised(tx: Tx, args: OpenArgs) -> Opened:
    """Issue the capability, record the session (`starting`) and `session.launched`, in `tx`."""
    from roundtable.services.sessions import capabilities

    role, task_id, proposal_id, launched_by = args.role, args.task_id, args.proposal_id, args.launched_by
    draft = args.draft(status=SessionStatus.STARTING, metadata=dict(args.metadata))

    token, cap = await capabilities.issue(
        tx,
        session_id=draft.id,
        agent_id=draft.agent_id,
        run_id=draft.run_id,
        role=role,
        task_id=task_id,
        proposal_id=proposal_id,
    )
    metadata = {**(draft.metadata or {}), "capability_id": cap.id}
    session = await register(tx, SessionDraft(**{**draft.__dict__, "metadata": metadata}))
    await tx.append_event(
        draft.run_id,
        EventType.SESSION_LAUNCHED,
        {
            "session_id": draft.id,
            "agent_id": draft.agent_id,
            "role": role,
            "task_id": task_id,
            "proposal_id": proposal_id,
            "launched_by": launched_by,
        },
        actor_id=SUPERVISOR_ACTOR,
        task_id=task_id,
    )
    return Opened(session, cap.id, token)


async def keep_alive(tx: Tx, session_id: str, capability_id: str) -> None:
    """A running session's heartbeat: touch the row and extend its capability."""
    from roundtable.services.sessions import capabilities

    await heartbeat(tx, HeartbeatArgs(session_id=session_id))
    await capabilities.extend(tx, capability_id)


async def revoke_capabilities(tx: Tx, session_id: str, reason: str) -> bool:
    """Revoke every live capability of the session (`capability.revoked` once); False when
    none was live."""
    from roundtable.services.sessions import capabilities

    session = await get(tx, session_id)
    revoked = False
    for cap in await capabilities.for_session(tx, session_id):
        if await capabilities.revoke(tx, cap.id, reason):
            revoked = True
    if revoked:
        await tx.append_event(
            session.run_id,
            EventType.CAPABILITY_REVOKED,
            {"session_id": session_id, "reason": reason},
            actor_id=SUPERVISOR_ACTOR,
        )
    return revoked


async def limit_reached(tx: Tx, session_id: str, reason: str) -> dict[str, Any]:
    """A session passed one of its limits (`limits.session_*`): its capabilities are revoked,
    `session.limit_reached` is recorded, and the task it works on is blocked with the reason
    (unless already closed). The supervisor then stops the process."""
    from roundtable.domain import TERMINAL_TASK_STATUSES
    from roundtable.services.coordination.autopilot import BlockTaskArgs, block_task
    from roundtable.services.sessions import capabilities

    session = await get(tx, session_id)
    caps = await capabilities.for_session(tx, session_id)
    task_id = next((c.task_id for c in caps if c.task_id), "")
    await tx.append_event(
        session.run_id,
        EventType.SESSION_LIMIT_REACHED,
        {"session_id": session_id, "agent_id": session.agent_id, "task_id": task_id, "reason": reason},
        actor_id=SUPERVISOR_ACTOR,
        task_id=task_id,
    )
    await revoke_capabilities(tx, session_id, f"limit: {reason}")
    blocked = False
    if task_id:
        status = await tx.scalar("SELECT status FROM tasks WHERE id = ?", (task_id,))
        if status is not None and status not in TERMINAL_TASK_STATUSES and status != TaskStatus.BLOCKED:
            why = f"session {session_id} of {session.agent_id} was stopped by a limit: {reason}"
            await block_task(
                tx, BlockTaskArgs(run_id=session.run_id, task_id=task_id, reason=why), actor=SUPERVISOR_ACTOR
            )
            blocked = True
    return {"session_id": session_id, "task_id": task_id, "blocked": blocked}


LAUNCH_REFUSED = EventType.SESSION_LAUNCH_REFUSED


class LaunchArgs(Args):
    # `session.launch` (the operator's; the dispatcher's too): what the supervisor starts.
    agent_id: Id = Field(description="Agent (implementer-N, reviewer-N, tester-1, security-1, architect-N).")
    task_id: Id = Field(description="Task the session works on.")
    proposal_id: Id = Field(default="", description="Proposal (reviewer, tester, security).")
    run_id: Id = Field(default="", description="Run (default: the latest active run).")
    adapter: Text = Field(default="", description="Adapter (default: the agent's; `scripted` = the demo agent).")
    model: Text = Field(default="", description="Model override.")
    briefing: Text = Field(default="", description="Why the session is launched, for its briefing.")


class RecordRefusalArgs(Args):
    # `session.record_refusal` (internal: the supervisor's).
    agent_id: Id = Field(description="Agent.")
    task_id: Id = Field(default="", description="Task.")
    proposal_id: Id = Field(default="", description="Proposal.")
    run_id: Id = Field(default="", description="Run (blank when none is active).")
    reason: Text = Field(description="Why it was refused.")
    launched_by: Id = Field(default="operator", description="Principal that asked for the launch.")


async def record_refusal(tx: Tx, args: RecordRefusalArgs) -> int:
    """A launch the supervisor refused before anything started (no usable sandbox, no model
    credential, the work no longer open, …): `session.launch_refused` with the reason, so the
    console lists it where failed sessions are listed. Returns the event id."""
    run_id, task_id = args.run_id, args.task_id
    agent_id, proposal_id, reason, launched_by = args.agent_id, args.proposal_id, args.reason, args.launched_by
    event = await tx.append_event(
        run_id,
        LAUNCH_REFUSED,
        {
            "agent_id": agent_id,
            "task_id": task_id,
            "proposal_id": proposal_id,
            "reason": reason[:2000],
            "launched_by": launched_by,
        },
        actor_id=SUPERVISOR_ACTOR,
        task_id=task_id,
    )
    return int(event.id)


class RecordStreamArgs(Args):
    # `session.record_stream` (internal: the supervisor's, from the harness's own stream).
    session_id: Id = Field(description="The session id.")
    harness_session_id: Text = Field(default="", description="The harness's own session id, from its stream.")
    attention: Word = Field(default="", description="Whether it needs the operator (transcript.Attention).")
    detail: Text = Field(default="", description="Why, in words.")


async def record_stream(tx: Tx, args: RecordStreamArgs, *, resume_pattern: str = "") -> AgentSession:
    """What the harness's own stream said (`services/sessions/transcript.py`): its own session id
    (kept as `external_session_id`, with the resume command the adapter's `resume_pattern` makes of
    it), and whether the session needs the operator — kept in its metadata as `attention` {state,
    detail, at}; a change into or out of a state that needs the operator is the run event
    `session.attention`."""
    session_id, harness_session_id = args.session_id, args.harness_session_id.strip()
    attention, detail = args.attention, args.detail
    from roundtable.services.sessions.transcript import NEEDS_HUMAN

    session = await get(tx, session_id)
    changes: dict[str, Any] = {}
    if harness_session_id and harness_session_id != session.external_session_id:
        changes["external_session_id"] = harness_session_id
        command = resume_command(resume_pattern, harness_session_id)
        if command:
            changes["external_resume_command"] = command
    meta = metadata(session)
    kept = meta.get("attention")
    previous: dict[str, Any] = kept if isinstance(kept, dict) else {}
    if attention and (previous.get("state"), previous.get("detail")) != (attention, detail):
        meta["attention"] = {"state": attention, "detail": detail, "at": clock.now()}
        changes["metadata_json"] = json.dumps(meta, sort_keys=True)
        # Only a change into or out of a state that needs the operator is news for the run.
        if previous.get("state") != attention and NEEDS_HUMAN & {attention, previous.get("state")}:
            await tx.append_event(
                session.run_id,
                EventType.SESSION_ATTENTION,
                {
                    "session_id": session_id,
                    "agent_id": session.agent_id,
                    "state": attention,
                    "previous": str(previous.get("state") or ""),
                    "detail": detail,
                    "task_id": str(meta.get("task_id") or ""),
                },
                actor_id=SUPERVISOR_ACTOR,
                task_id=str(meta.get("task_id") or ""),
            )
    if changes:
        await tx.update("agent_sessions", {"id": session_id}, changes)
    return await get(tx, session_id)


class RecordMessageArgs(Args):
    # `session.record_message` (internal: the supervisor's).
    session_id: Id = Field(description=_SESSION)
    message: Text = Field(description="The message.")
    sent_by: Text = Field(description="Who sent it (a principal).")
    resumed_in: Id = Field(default="", description="The session that carries it on ('' while it runs).")
    delivery: Word = Field(default=Delivery.LIVE, description="How it reaches the harness (domain.Delivery).")


async def record_message(tx: Tx, args: RecordMessageArgs) -> int:
    """The operator (`sent_by`) sent the session a message: `session.message`, the sender its
    actor, with how it reaches the harness (`Delivery`) and the session that carries it on
    (`resumed_in`, '' while the session still runs). A message that waits for the turn to end is
    kept in the session's metadata (`pending_messages`, what `sessions show` and the console show)
    until a resumed session carries it on. Returns the event id."""
    from roundtable.services.redact import redact

    session_id, message, sent_by, resumed_in = args.session_id, args.message, args.sent_by, args.resumed_in
    delivery: str = args.delivery
    session = await get(tx, session_id)
    meta = metadata(session)
    task_id = str(meta.get("task_id") or "")
    text = redact(message)[:4000]
    if delivery and delivery not in set(Delivery):
        raise ValidationError(f"unknown delivery {delivery!r} (one of: {', '.join(Delivery)})")
    delivery = delivery or (Delivery.RESUMED if resumed_in else Delivery.LIVE)
    kept = meta.get(PENDING_MESSAGES)
    pending = [m for m in kept if isinstance(m, dict)] if isinstance(kept, list) else []
    if resumed_in and pending:
        meta.pop(PENDING_MESSAGES)
    elif delivery == Delivery.WHEN_TURN_ENDS:
        meta[PENDING_MESSAGES] = [*pending, {"message": text, "sent_by": sent_by, "at": clock.now()}]
    if meta != metadata(session):
        await tx.update("agent_sessions", {"id": session_id}, {"metadata_json": json.dumps(meta, sort_keys=True)})
    event = await tx.append_event(
        session.run_id,
        EventType.SESSION_MESSAGE,
        {
            "session_id": session_id,
            "agent_id": session.agent_id,
            "resumed_in": resumed_in,
            "delivery": str(delivery),
            "message": text,
            "sent_by": sent_by,
        },
        actor_id=sent_by,
        task_id=task_id,
    )
    return int(event.id)


def pending_messages(session: AgentSession) -> list[dict[str, str]]:
    """The operator's messages the session gets when its turn ends (it is then resumed with them)."""
    kept = metadata(session).get(PENDING_MESSAGES)
    return [
        {"message": str(m.get("message", "")), "sent_by": str(m.get("sent_by", "")), "at": str(m.get("at", ""))}
        for m in (kept if isinstance(kept, list) else [])
        if isinstance(m, dict)
    ]


class RecordExitArgs(Args):
    # `session.record_exit` (internal: the supervisor's).
    session_id: Id = Field(description=_SESSION)
    exit_code: Int = Field(default=0, description="Exit code.")
    reason: Text = Field(description="Why it ended.")


async def record_exit(tx: Tx, args: RecordExitArgs) -> AgentSession:
    """The process ended: the session `ended` (exit 0, or stopped because a budget was reached:
    a reason starting `budget:`) or `failed`, its capability revoked, `session.exited` recorded."""
    from roundtable.services.sessions.budgets import REASON_PREFIX

    session_id, exit_code, reason = args.session_id, args.exit_code, args.reason

    session = await get(tx, session_id)
    stopped = reason.startswith(REASON_PREFIX)
    status = SessionStatus.ENDED if exit_code == 0 or stopped else SessionStatus.FAILED
    await end(tx, session_id, status=status, actor=SUPERVISOR_ACTOR)
    # How it ended stays on the record, where the console shows a failure (not only in an event).
    try:
        meta = json.loads(session.metadata_json or "{}")
    except ValueError:
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    meta.update({"exit_code": exit_code, "exit_reason": reason})
    await tx.update("agent_sessions", {"id": session_id}, {"metadata_json": json.dumps(meta, sort_keys=True)})
    ended = await get(tx, session_id)
    await revoke_capabilities(tx, session_id, reason)
    if not await tx.fetchone(
        "SELECT 1 FROM agent_sessions WHERE agent_id = ? AND run_id = ? AND id != ? AND status IN (?, ?) LIMIT 1",
        (session.agent_id, session.run_id, session_id, SessionStatus.STARTING, SessionStatus.ACTIVE),
    ):
        # Its turn is handed back at once (another live session of the agent may still use it).
        await turns.hand_back(tx, session.run_id, session.agent_id, session_id)
    await tx.append_event(
        session.run_id,
        EventType.SESSION_EXITED,
        {"session_id": session_id, "exit_code": exit_code, "status": status},
        actor_id=SUPERVISOR_ACTOR,
    )
    return ended
