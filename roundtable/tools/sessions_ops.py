"""Session operations: the operator's launch and revoke, the session records harnesses report
themselves, and the supervisor's own bookkeeping.

Operator operations (never advertised; the CLI reaches a running owner's over the legacy socket):
- `session.launch` / `session.revoke` run the owner's supervisor, which the owner provides as
  `runtime.supervisor` (a `SessionControl`); a process hosting none answers
  `supervisor is not running in this process`. The autopilot's dispatcher launches through the
  same operation, as the internal caller `dispatcher`;
- `session.register` / `session.heartbeat` / `session.end` — `roundtable sessions register|…`.

Internal operations (the supervisor's bookkeeping, caller `supervisor`): `session.open` (issue the
capability, record the session and `session.launched`), `session.activate`, `session.keep_alive`,
`session.revoke_capabilities`, `session.limit_reached`, `session.record_exit`.
"""

from __future__ import annotations

from typing import Any, Protocol

from roundtable.domain import SessionStatus
from roundtable.errors import ToolError
from roundtable.services.sessions import capabilities
from roundtable.services.sessions import records as sessions
from roundtable.store.records import SessionCapability
from roundtable.tools.args import opt_int, opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import integer, obj, string

NOT_RUNNING = "supervisor is not running in this process"
_OBJECT = {"type": "object"}


class SessionControl(Protocol):
    """The supervisor as the operations see it (set on the runtime by the owner hosting it)."""

    async def launch(
        self,
        *,
        agent_id: str,
        task_id: str,
        proposal_id: str = "",
        run_id: str = "",
        adapter: str = "",
        model: str = "",
        briefing: str = "",
        launched_by: str = "operator",
    ) -> dict[str, Any]: ...

    async def revoke(self, session_id: str, reason: str = "operator") -> dict[str, Any]: ...


def _supervisor(call: Call) -> SessionControl:
    host: SessionControl | None = getattr(call.runtime, "supervisor", None)
    if host is None:
        raise ToolError(NOT_RUNNING)
    return host


# --- operator ------------------------------------------------------------------------------------


async def launch(call: Call) -> dict[str, Any]:
    a = call.args
    return await _supervisor(call).launch(
        agent_id=a["agent_id"].strip(),
        task_id=a["task_id"].strip(),
        proposal_id=opt_str(a, "proposal_id").strip(),
        run_id=opt_str(a, "run_id").strip(),
        adapter=opt_str(a, "adapter").strip(),
        model=opt_str(a, "model").strip(),
        briefing=opt_str(a, "briefing"),
        launched_by=call.caller.principal,
    )


async def revoke(call: Call) -> dict[str, Any]:
    a = call.args
    return await _supervisor(call).revoke(a["session_id"].strip(), opt_str(a, "reason").strip() or "operator")


async def register(call: Call) -> dict[str, Any]:
    a = call.args
    command = opt_str(a, "resume_command")
    adapter = call.runtime.config.adapters.get(a["adapter"])
    if not command and adapter is not None:
        command = sessions.resume_command(adapter.resume_pattern, opt_str(a, "external_session_id"))
    session = await sessions.register(
        call.w,
        _draft(
            a,
            provider=opt_str(a, "provider"),
            external_session_id=opt_str(a, "external_session_id"),
            external_resume_command=command,
            status=opt_str(a, "status", SessionStatus.ACTIVE),
        ),
    )
    return {"session": session.to_dict()}


def _draft(a: dict[str, Any], **more: Any) -> sessions.SessionDraft:
    """A session record from the arguments both `session.register` and `session.open` take."""
    return sessions.SessionDraft(
        id=a["session_id"],
        agent_id=a["agent_id"],
        run_id=a["run_id"],
        adapter=a["adapter"],
        working_directory=a["working_directory"],
        model=opt_str(a, "model"),
        mcp_socket=opt_str(a, "mcp_socket"),
        **more,
    )


async def heartbeat(call: Call) -> dict[str, Any]:
    a = call.args
    session = await sessions.heartbeat(
        call.w, a["session_id"], status=opt_str(a, "status"), external_session_id=opt_str(a, "external_session_id")
    )
    return {"session": session.to_dict()}


async def end(call: Call) -> dict[str, Any]:
    session = await sessions.end(call.w, call.args["session_id"], status=opt_str(call.args, "status"))
    return {"session": session.to_dict()}


# --- internal: the supervisor's bookkeeping -------------------------------------------------------


async def open_(call: Call) -> dict[str, Any]:
    a = call.args
    opened = await sessions.open_supervised(
        call.w,
        _draft(a, status=SessionStatus.STARTING, metadata=dict(a.get("metadata") or {})),
        role=a["role"],
        task_id=a["task_id"],
        proposal_id=opt_str(a, "proposal_id"),
        launched_by=opt_str(a, "launched_by", "operator"),
    )
    return {"session": opened.session.to_dict(), "capability_id": opened.capability_id, "token": opened.token}


async def activate(call: Call) -> dict[str, Any]:
    session = await sessions.heartbeat(call.w, call.args["session_id"], status=SessionStatus.ACTIVE)
    return {"session": session.to_dict()}


async def keep_alive(call: Call) -> dict[str, Any]:
    await sessions.keep_alive(call.w, call.args["session_id"], call.args["capability_id"])
    return {"session_id": call.args["session_id"]}


async def revoke_capabilities(call: Call) -> dict[str, Any]:
    a = call.args
    revoked = await sessions.revoke_capabilities(call.w, a["session_id"], a["reason"])
    return {"session_id": a["session_id"], "revoked": revoked}


async def limit_reached(call: Call) -> dict[str, Any]:
    a = call.args
    return await sessions.limit_reached(call.w, a["session_id"], a["reason"])


async def record_exit(call: Call) -> dict[str, Any]:
    a = call.args
    session = await sessions.record_exit(
        call.w, a["session_id"], exit_code=opt_int(a, "exit_code", 0), reason=a["reason"]
    )
    return {"session": session.to_dict()}


_SESSION = string("The session id.")

# The arguments of a session record, shared by `session.register` and `session.open` (`_draft`).
_RECORD_ARGS = {
    "session_id": _SESSION,
    "agent_id": string("Agent."),
    "run_id": string("Run."),
    "adapter": string("Adapter."),
    "working_directory": string("Working directory."),
    "model": string("Model."),
    "mcp_socket": string("MCP socket path."),
}


async def record_denial(call: Call) -> dict[str, Any]:
    """A session endpoint refused one of its session's calls: `capability.denied`, written as the
    session's own (its agent the principal, `session` the transport), never with the arguments."""
    a = call.args
    async with call.runtime.db.read() as reader:
        cap = await reader.get(SessionCapability, a["capability_id"])
    await capabilities.record_denial(call.runtime.db, cap, a["tool"], a["reason_code"])
    return {"recorded": True}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="capability.record_denial",
        description="Session endpoint: record that a capability session's call was refused (capability.denied).",
        input_schema=obj(
            {
                "capability_id": string("The refused session's capability."),
                "tool": string("The tool it called."),
                "reason_code": string("Why it was refused."),
            },
            ["capability_id", "tool", "reason_code"],
        ),
        output_schema=_OBJECT,
        handler=record_denial,
        mode="none",
        audience="internal",
    ),
    ToolSpec(
        name="session.launch",
        description="Start a supervised agent session for a task (and, for reviewers, a proposal).",
        input_schema=obj(
            {
                "agent_id": string("Agent (implementer-N, reviewer-N, tester-1, security-1, architect-N)."),
                "task_id": string("Task the session works on."),
                "proposal_id": string("Proposal (reviewer, tester, security)."),
                "run_id": string("Run (default: the latest active run)."),
                "adapter": string("Adapter (default: the agent's; `scripted` = the demo agent)."),
                "model": string("Model override."),
                "briefing": string("Why the session is launched, for its briefing."),
            },
            ["agent_id", "task_id"],
        ),
        output_schema=_OBJECT,
        handler=launch,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="session.revoke",
        description="Revoke a session's capability now; its process is stopped after a short grace.",
        input_schema=obj({"session_id": _SESSION, "reason": string("Why (recorded).")}, ["session_id"]),
        output_schema=_OBJECT,
        handler=revoke,
        mode="none",
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="session.register",
        description="Record (or replace) a session an agent harness reports itself.",
        input_schema=obj(
            {
                **_RECORD_ARGS,
                "provider": string("Provider."),
                "external_session_id": string("The harness's own session id."),
                "resume_command": string("How to resume it (default: from the adapter's pattern)."),
                "status": string("Status (default active)."),
            },
            ["session_id", "agent_id", "run_id", "adapter", "working_directory"],
        ),
        output_schema=_OBJECT,
        handler=register,
        audience="operator",
    ),
    ToolSpec(
        name="session.heartbeat",
        description="Mark a session as seen now (status and external id change only when given).",
        input_schema=obj(
            {"session_id": _SESSION, "status": string("New status."), "external_session_id": string("External id.")},
            ["session_id"],
        ),
        output_schema=_OBJECT,
        handler=heartbeat,
        audience="operator",
    ),
    ToolSpec(
        name="session.end",
        description="Mark a session ended (or the given status).",
        input_schema=obj({"session_id": _SESSION, "status": string("Final status (default ended).")}, ["session_id"]),
        output_schema=_OBJECT,
        handler=end,
        audience="operator",
    ),
    ToolSpec(
        name="session.open",
        description="Supervisor: issue the capability, record the session and session.launched.",
        input_schema=obj(
            {
                **_RECORD_ARGS,
                "role": string("Capability role."),
                "task_id": string("Task."),
                "proposal_id": string("Proposal."),
                "launched_by": string("Principal that asked for the launch."),
                "metadata": _OBJECT,
            },
            ["session_id", "agent_id", "run_id", "adapter", "working_directory", "role", "task_id"],
        ),
        output_schema=_OBJECT,
        handler=open_,
        audience="internal",
    ),
    ToolSpec(
        name="session.activate",
        description="Supervisor: the session's process started.",
        input_schema=obj({"session_id": _SESSION}, ["session_id"]),
        output_schema=_OBJECT,
        handler=activate,
        audience="internal",
    ),
    ToolSpec(
        name="session.keep_alive",
        description="Supervisor: heartbeat a running session and extend its capability.",
        input_schema=obj(
            {"session_id": _SESSION, "capability_id": string("Capability.")}, ["session_id", "capability_id"]
        ),
        output_schema=_OBJECT,
        handler=keep_alive,
        audience="internal",
    ),
    ToolSpec(
        name="session.revoke_capabilities",
        description="Supervisor: revoke every live capability of a session.",
        input_schema=obj({"session_id": _SESSION, "reason": string("Why.")}, ["session_id", "reason"]),
        output_schema=_OBJECT,
        handler=revoke_capabilities,
        audience="internal",
    ),
    ToolSpec(
        name="session.limit_reached",
        description="Supervisor: a session passed a limit; revoke it, record why and block its task.",
        input_schema=obj(
            {"session_id": _SESSION, "reason": string("Which limit, and the count.")}, ["session_id", "reason"]
        ),
        output_schema=_OBJECT,
        handler=limit_reached,
        audience="internal",
    ),
    ToolSpec(
        name="session.record_exit",
        description="Supervisor: the session's process ended; record it and revoke its capability.",
        input_schema=obj(
            {"session_id": _SESSION, "exit_code": integer("Exit code."), "reason": string("Why it ended.")},
            ["session_id", "reason"],
        ),
        output_schema=_OBJECT,
        handler=record_exit,
        audience="internal",
    ),
]
