"""Workspaces: `workspace.propose` and `workspace.sync` (MCP tools for agents and sessions),
`workspace.create`, `workspace.remove` and `workspace.list` (the operator's; the supervisor
makes a session's workspace through `workspace.create`), `workspace.sweep` and
`workspace.record_unproposed` (internal). Handlers bind the caller to `services.workspaces.worktrees`,
which runs git outside any transaction and writes in one transaction of its own."""

from __future__ import annotations

from typing import Any

from roundtable.domain import Risk, WorkspaceState
from roundtable.errors import ValidationError
from roundtable.services.workspaces import worktrees as service
from roundtable.tools import views
from roundtable.tools.args import opt_bool, opt_str
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, obj, result, string, strings


def _agent(call: Call) -> str:
    agent_id = opt_str(call.args, "agent_id").strip()
    if not agent_id:
        raise ValidationError("agent_id is required")
    return agent_id


async def create(call: Call) -> dict[str, Any]:
    return await service.create(
        call.runtime,
        agent_id=_agent(call),
        task_id=call.args["task_id"].strip(),
        actor=call.actor,
        runs=call.run_hint,
    )


async def propose(call: Call) -> dict[str, Any]:
    args = call.args
    request = service.ProposeInput(
        agent_id=_agent(call),
        task_id=args["task_id"].strip(),
        title=opt_str(args, "title"),
        summary_md=opt_str(args, "summary_md"),
        risk=opt_str(args, "risk", Risk.NORMAL),
        session_id=call.session_id,
        proposed_by=call.actor if call.caller.is_internal else "",
        counted_agent=call.agent_id,
        request_review=opt_bool(args, "request_review", True),
    )
    out = await service.propose(call.runtime, request, actor=call.actor, runs=call.run_hint)
    # What the author acts on next: ids, where the proposal stands, what went in (the full record
    # is proposal.get's, with detail).
    brief = {
        "proposal": views.proposal_brief(out["proposal"], views.PROPOSAL_REVISED),
        "files": [f"{f['path']} +{f['added']} -{f['deleted']}" for f in out["diffstat"]["files"]],
        "claimed": out["claimed"],
    }
    if "reviewers" in out:
        brief["reviewers"] = out["reviewers"]
    return brief


async def sync(call: Call) -> dict[str, Any]:
    return await service.sync(
        call.runtime, agent_id=_agent(call), task_id=call.args["task_id"].strip(), actor=call.actor, runs=call.run_hint
    )


async def remove(call: Call) -> dict[str, Any]:
    return await service.remove(
        call.runtime,
        workspace_id=call.args["workspace_id"].strip(),
        reason=opt_str(call.args, "reason") or "removed by the operator",
        actor=call.actor,
        runs=call.run_hint,
    )


async def list_(call: Call) -> dict[str, Any]:
    async with call.runtime.db.read() as r:
        rows = await service.listing(
            r,
            agent_id=opt_str(call.args, "agent_id"),
            task_id=opt_str(call.args, "task_id"),
            include_removed=opt_bool(call.args, "all", False),
        )
    out = []
    for ws in rows:
        item = service.workspace_dict(ws)
        if opt_bool(call.args, "diffstat", False) and ws.state != WorkspaceState.REMOVED:
            item["diffstat"] = await service.diffstat(call.runtime.root, ws)
        out.append(item)
    return {"workspaces": out}


async def sweep(call: Call) -> dict[str, Any]:
    return {"removed": await service.sweep(call.runtime, actor=call.actor, run_id=opt_str(call.args, "run_id"))}


async def record_unproposed(call: Call) -> dict[str, Any]:
    args = call.args
    return await service.record_unproposed(
        call.w,
        workspace_id=args["workspace_id"],
        session_id=opt_str(args, "session_id"),
        reason=args["reason"],
        actor=call.actor,
    )


_TASK = string()
_AGENT = string("The agent (default: the agent your credential names; agents may not name another).")
_WORKSPACE = {"workspace": RECORD, "created": boolean()}

TOOLS = [
    ToolSpec(
        name="workspace.propose",
        description=(
            "Propose your workspace's changes (your git worktree): a new proposal, or a new revision of "
            "your open one for the task. Touched paths are claimed for you where free; review is requested."
        ),
        input_schema=obj(
            {
                "task_id": _TASK,
                "agent_id": _AGENT,
                "title": string("Needed for a new proposal."),
                "summary_md": string("What and why; needed for a new proposal."),
                "risk": string("New proposal only; high and critical need a human's approval.", enum=list(Risk)),
                "request_review": boolean("Default true; false leaves it pending."),
            },
            ["task_id"],
        ),
        output_schema=result(
            {"proposal": RECORD, "files": strings(), "claimed": strings(), "reviewers": strings()},
            required=["proposal", "files", "claimed"],
        ),
        handler=propose,
        mode="none",
    ),
    ToolSpec(
        name="workspace.sync",
        description=(
            "Bring your workspace onto the project's current tree (a three-way merge with your "
            "work); conflicting paths keep conflict markers and are listed in conflicts."
        ),
        input_schema=obj({"task_id": _TASK, "agent_id": _AGENT}, ["task_id"]),
        output_schema=result({"workspace": RECORD, "changed": boolean(), "conflicts": strings()}),
        handler=sync,
        mode="none",
    ),
    ToolSpec(
        name="workspace.create",
        description="Make (or return) an agent's workspace for a task: a git worktree outside the project.",
        input_schema=obj({"agent_id": string("The agent."), "task_id": _TASK}, ["agent_id", "task_id"]),
        output_schema=result(_WORKSPACE),
        handler=create,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="workspace.remove",
        description="Remove a workspace's directory (the record stays, state removed).",
        input_schema=obj({"workspace_id": string("Workspace id (WS-…)."), "reason": string("Why.")}, ["workspace_id"]),
        output_schema=result({"workspace": RECORD, "removed": boolean()}),
        handler=remove,
        mode="none",
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="workspace.list",
        description="List workspaces (live ones unless all), optionally with a diffstat of their work.",
        input_schema=obj(
            {
                "agent_id": string("Exact agent id."),
                "task_id": string("Exact task id."),
                "all": boolean("Include removed ones."),
                "diffstat": boolean("Add each live workspace's diffstat (runs git)."),
            }
        ),
        output_schema=result({"workspaces": RECORDS}),
        handler=list_,
        mode="none",
        read_only=True,
        audience="operator",
    ),
    ToolSpec(
        name="workspace.sweep",
        description="Remove the workspaces of completed or cancelled tasks (after keep_days).",
        input_schema=obj({"run_id": string("Only this run's workspaces (and those of no run).")}),
        output_schema=result({"removed": strings()}),
        handler=sweep,
        mode="none",
        audience="internal",
    ),
    ToolSpec(
        name="workspace.record_unproposed",
        description="Record why a session's workspace changes could not be proposed.",
        input_schema=obj(
            {"workspace_id": string("Workspace id."), "session_id": string("Session id."), "reason": string("Why.")},
            ["workspace_id", "reason"],
        ),
        output_schema=result({"workspace": RECORD}),
        handler=record_unproposed,
        audience="internal",
    ),
]
