"""Session operations: the operator's launch and revoke, the session records harnesses report
themselves, and the supervisor's own bookkeeping.

Operator operations (never advertised; the CLI reaches a running owner's over the legacy socket):
- `session.launch` / `session.revoke` / `session.send` (a message to a session, resuming it) run the
  owner's supervisor, which the owner provides as
  `runtime.supervisor` (a `SessionControl`); a process hosting none answers
  `supervisor is not running in this process`. The autopilot's dispatcher launches through the
  same operation, as the internal caller `dispatcher`;
- `session.register` / `session.heartbeat` / `session.end` — `roundtable sessions register|…`.

Internal operations (the supervisor's bookkeeping, caller `supervisor`): `session.open` (issue the
capability, record the session and `session.launched`), `session.activate`, `session.keep_alive`,
`session.revoke_capabilities`, `session.limit_reached`, `session.record_exit`, `session.record_stream`
(the harness's own session id and whether it needs the operator, from its stream), and
`session.record_refusal` (a launch refused before anything started).

The session records' arguments are declared in `services.sessions.records`, which receives them
whole; `session.launch`'s model is what the supervisor's `launch` receives.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from roundtable.domain import SessionStatus
from roundtable.errors import ToolError
from roundtable.services.args import Args, Id, Text, Word
from roundtable.services.sessions import capabilities
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions.records import (
    HeartbeatArgs,
    LaunchArgs,
    OpenArgs,
    RecordExitArgs,
    RecordMessageArgs,
    RecordRefusalArgs,
    RecordStreamArgs,
    RegisterArgs,
)
from roundtable.store.records import SessionCapability
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

NOT_RUNNING = "supervisor is not running in this process"
_OBJECT = {"type": "object"}


class SessionControl(Protocol):
    """The supervisor as the operations see it (set on the runtime by the owner hosting it)."""

    async def launch(self, args: LaunchArgs, *, launched_by: str = "operator") -> dict[str, Any]: ...

    async def revoke(self, session_id: str, reason: str = "operator") -> dict[str, Any]: ...

    async def send(self, session_id: str, message: str, sent_by: str = "operator") -> dict[str, Any]: ...


def _supervisor(call: Call) -> SessionControl:
    host: SessionControl | None = getattr(call.runtime, "supervisor", None)
    if host is None:
        raise ToolError(NOT_RUNNING)
    return host


# --- operator ------------------------------------------------------------------------------------

_SESSION = "The session id."


async def launch(call: Call[LaunchArgs]) -> dict[str, Any]:
    return await _supervisor(call).launch(call.args, launched_by=call.caller.principal)


class RevokeArgs(Args):
    session_id: Id = Field(description=_SESSION)
    reason: Text = Field("", description="Why (recorded).")


async def revoke(call: Call[RevokeArgs]) -> dict[str, Any]:
    a = call.args
    return await _supervisor(call).revoke(a.session_id.strip(), a.reason.strip() or "operator")


class SendArgs(Args):
    session_id: Id = Field(description=_SESSION)
    message: Text = Field(description="What to tell the session's agent.")


async def send(call: Call[SendArgs]) -> dict[str, Any]:
    a = call.args
    return await _supervisor(call).send(a.session_id.strip(), a.message, call.caller.principal)


async def register(call: Call[RegisterArgs]) -> dict[str, Any]:
    adapter = call.runtime.config.adapters.get(call.args.adapter)
    pattern = adapter.resume_pattern if adapter is not None else ""
    return {"session": (await sessions.register_reported(call.w, call.args, pattern)).to_dict()}


async def heartbeat(call: Call[HeartbeatArgs]) -> dict[str, Any]:
    return {"session": (await sessions.heartbeat(call.w, call.args)).to_dict()}


class EndArgs(Args):
    session_id: Id = Field(description=_SESSION)
    status: Word = Field("", description="Final status (default ended).")


async def end(call: Call[EndArgs]) -> dict[str, Any]:
    session = await sessions.end(call.w, call.args.session_id, status=call.args.status)
    return {"session": session.to_dict()}


# --- internal: the supervisor's bookkeeping -------------------------------------------------------


async def open_(call: Call[OpenArgs]) -> dict[str, Any]:
    opened = await sessions.open_supervised(call.w, call.args)
    return {"session": opened.session.to_dict(), "capability_id": opened.capability_id, "token": opened.token}


class SessionArgs(Args):
    session_id: Id = Field(description=_SESSION)


async def activate(call: Call[SessionArgs]) -> dict[str, Any]:
    started = HeartbeatArgs(session_id=call.args.session_id, status=str(SessionStatus.ACTIVE))
    session = await sessions.heartbeat(call.w, started)
    return {"session": session.to_dict()}


class KeepAliveArgs(Args):
    session_id: Id = Field(description=_SESSION)
    capability_id: Id = Field(description="Capability.")


async def keep_alive(call: Call[KeepAliveArgs]) -> dict[str, Any]:
    await sessions.keep_alive(call.w, call.args.session_id, call.args.capability_id)
    return {"session_id": call.args.session_id}


class RevokeCapabilitiesArgs(Args):
    session_id: Id = Field(description=_SESSION)
    reason: Text = Field(description="Why.")


async def revoke_capabilities(call: Call[RevokeCapabilitiesArgs]) -> dict[str, Any]:
    a = call.args
    revoked = await sessions.revoke_capabilities(call.w, a.session_id, a.reason)
    return {"session_id": a.session_id, "revoked": revoked}


class LimitReachedArgs(Args):
    session_id: Id = Field(description=_SESSION)
    reason: Text = Field(description="Which limit, and the count.")


async def limit_reached(call: Call[LimitReachedArgs]) -> dict[str, Any]:
    a = call.args
    return await sessions.limit_reached(call.w, a.session_id, a.reason)


async def record_refusal(call: Call[RecordRefusalArgs]) -> dict[str, Any]:
    return {"event_id": await sessions.record_refusal(call.w, call.args)}


async def record_exit(call: Call[RecordExitArgs]) -> dict[str, Any]:
    return {"session": (await sessions.record_exit(call.w, call.args)).to_dict()}


async def record_stream(call: Call[RecordStreamArgs]) -> dict[str, Any]:
    async with call.runtime.db.read() as reader:
        adapter_name = str(
            await reader.scalar("SELECT adapter FROM agent_sessions WHERE id = ?", (call.args.session_id,)) or ""
        )
    adapter = call.runtime.config.adapters.get(adapter_name)
    resume_pattern = adapter.resume_pattern if adapter is not None else ""
    session = await sessions.record_stream(call.w, call.args, resume_pattern=resume_pattern)
    return {"session": session.to_dict()}


async def record_message(call: Call[RecordMessageArgs]) -> dict[str, Any]:
    return {"event_id": await sessions.record_message(call.w, call.args)}


class RecordDenialArgs(Args):
    capability_id: Id = Field(description="The refused session's capability.")
    tool: Text = Field(description="The tool it called.")
    reason_code: Text = Field(description="Why it was refused.")


async def record_denial(call: Call[RecordDenialArgs]) -> dict[str, Any]:
    """A session endpoint refused one of its session's calls: `capability.denied`, written as the
    session's own (its agent the principal, `session` the transport), never with the arguments."""
    a = call.args
    cap = await call.w.get(SessionCapability, a.capability_id)
    await capabilities.record_denial(call.w, cap, a.tool, a.reason_code)
    return {"recorded": True}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="capability.record_denial",
        description="Session endpoint: record that a capability session's call was refused (capability.denied).",
        args=RecordDenialArgs,
        output_schema=_OBJECT,
        handler=record_denial,
        audience="internal",
    ),
    ToolSpec(
        name="session.launch",
        description="Start a supervised agent session for a task (and, for reviewers, a proposal).",
        args=LaunchArgs,
        output_schema=_OBJECT,
        handler=launch,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="session.revoke",
        description="Revoke a session's capability now; its process is stopped after a short grace.",
        args=RevokeArgs,
        output_schema=_OBJECT,
        handler=revoke,
        mode="none",
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="session.send",
        description="Send a session a message: a running one gets it now when its harness reads input while it works "
        "(Claude Code), else when its turn ends; an ended one is resumed "
        "with it (its harness's own session, workspace and budgets carried on).",
        args=SendArgs,
        output_schema=_OBJECT,
        handler=send,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="session.register",
        description="Record (or replace) a session an agent harness reports itself.",
        args=RegisterArgs,
        output_schema=_OBJECT,
        handler=register,
        audience="operator",
    ),
    ToolSpec(
        name="session.heartbeat",
        description="Mark a session as seen now (status and external id change only when given).",
        args=HeartbeatArgs,
        output_schema=_OBJECT,
        handler=heartbeat,
        audience="operator",
    ),
    ToolSpec(
        name="session.end",
        description="Mark a session ended (or the given status).",
        args=EndArgs,
        output_schema=_OBJECT,
        handler=end,
        audience="operator",
    ),
    ToolSpec(
        name="session.open",
        description="Supervisor: issue the capability, record the session and session.launched.",
        args=OpenArgs,
        output_schema=_OBJECT,
        handler=open_,
        audience="internal",
    ),
    ToolSpec(
        name="session.activate",
        description="Supervisor: the session's process started.",
        args=SessionArgs,
        output_schema=_OBJECT,
        handler=activate,
        audience="internal",
    ),
    ToolSpec(
        name="session.keep_alive",
        description="Supervisor: heartbeat a running session and extend its capability.",
        args=KeepAliveArgs,
        output_schema=_OBJECT,
        handler=keep_alive,
        audience="internal",
    ),
    ToolSpec(
        name="session.revoke_capabilities",
        description="Supervisor: revoke every live capability of a session.",
        args=RevokeCapabilitiesArgs,
        output_schema=_OBJECT,
        handler=revoke_capabilities,
        audience="internal",
    ),
    ToolSpec(
        name="session.limit_reached",
        description="Supervisor: a session passed a limit; revoke it, record why and block its task.",
        args=LimitReachedArgs,
        output_schema=_OBJECT,
        handler=limit_reached,
        audience="internal",
    ),
    ToolSpec(
        name="session.record_exit",
        description="Supervisor: the session's process ended; record it and revoke its capability.",
        args=RecordExitArgs,
        output_schema=_OBJECT,
        handler=record_exit,
        audience="internal",
    ),
    ToolSpec(
        name="session.record_stream",
        description="Supervisor: what the harness's stream said (its own session id; whether it needs the operator).",
        args=RecordStreamArgs,
        output_schema=_OBJECT,
        handler=record_stream,
        audience="internal",
    ),
    ToolSpec(
        name="session.record_message",
        description="Supervisor: the operator sent a session a message (session.message).",
        args=RecordMessageArgs,
        output_schema=_OBJECT,
        handler=record_message,
        audience="internal",
    ),
    ToolSpec(
        name="session.record_refusal",
        description="Supervisor: a launch was refused before anything started; record who, for what and why.",
        args=RecordRefusalArgs,
        output_schema=_OBJECT,
        handler=record_refusal,
        audience="internal",
    ),
]
