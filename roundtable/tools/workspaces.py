"""Workspaces: `workspace.propose` and `workspace.sync` (MCP tools for agents and sessions),
`workspace.create` (an MCP tool: a connected agent gets its own workspace for a task it may work
on; the operator makes anyone's, and the supervisor a session's), `workspace.remove` and
`workspace.list` (the operator's), `workspace.sweep` and `workspace.record_unproposed` (internal). The arguments are declared in `services.workspaces.worktrees`,
which receives them whole with the caller, runs git outside any transaction and writes in one
transaction of its own."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from roundtable.errors import PermissionDenied, ValidationError
from roundtable.services.args import Args, Id
from roundtable.services.workspaces import worktrees as service
from roundtable.services.workspaces.worktrees import (
    CreateArgs,
    ListArgs,
    ProposeArgs,
    RemoveArgs,
    SyncArgs,
    UnproposedArgs,
)
from roundtable.tools import views
from roundtable.tools.approvals import actor_of
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec
from roundtable.tools.schema import RECORD, RECORDS, boolean, result, string, strings


async def create(call: Call[CreateArgs]) -> dict[str, Any]:
    agent_id, task_id = call.args.agent_id.strip(), call.args.task_id.strip()
    if not agent_id:
        raise ValidationError("agent_id is required")
    if not (call.caller.is_operator or call.caller.is_internal):
        # An agent works on its own tasks or unassigned ones, as it may claim and propose there.
        async with call.runtime.db.read() as r:
            assignee = await r.scalar("SELECT coalesce(assigned_agent_id, '') FROM tasks WHERE id = ?", (task_id,))
        if assignee not in (None, "", agent_id):
            raise PermissionDenied(f"task {task_id} is assigned to {assignee}; ask the operator to reassign it")
    return await service.create(call.runtime, call.args, actor=call.actor, runs=call.run_hint)


async def propose(call: Call[ProposeArgs]) -> dict[str, Any]:
    out = await service.propose(
        call.runtime,
        call.args,
        actor=call.actor,
        runs=call.run_hint,
        session_id=call.session_id,
        proposed_by=call.actor if call.caller.is_internal else "",
        counted_agent=call.agent_id,
        tester=actor_of(call.caller),
    )
    # What the author acts on next: ids, where the proposal stands, what went in (the full record
    # is proposal.get's, with detail).
    brief = {
        "proposal": views.proposal_brief(out["proposal"], views.PROPOSAL_REVISED),
        "files": [f"{f['path']} +{f['added']} -{f['deleted']}" for f in out["diffstat"]["files"]],
        "claimed": out["claimed"],
    }
    if "reviewers" in out:
        brief["reviewers"] = out["reviewers"]
    if "test_run" in out:  # the evidence on the revision just proposed, as test_run gives it
        brief["test_run"], brief["log"] = out["test_run"], views.log_tail(out["log"])[0]
    return brief


async def sync(call: Call[SyncArgs]) -> dict[str, Any]:
    return await service.sync(call.runtime, call.args, actor=call.actor, runs=call.run_hint)


async def remove(call: Call[RemoveArgs]) -> dict[str, Any]:
    return await service.remove(call.runtime, call.args, actor=call.actor, runs=call.run_hint)


async def list_(call: Call[ListArgs]) -> dict[str, Any]:
    return {"workspaces": await service.list_workspaces(call.runtime, call.args)}


class SweepArgs(Args):
    run_id: Id = Field("", description="Only this run's workspaces (and those of no run).")


async def sweep(call: Call[SweepArgs]) -> dict[str, Any]:
    return {"removed": await service.sweep(call.runtime, actor=call.actor, run_id=call.args.run_id)}


async def record_unproposed(call: Call[UnproposedArgs]) -> dict[str, Any]:
    return await service.record_unproposed(call.w, call.args, actor=call.actor)


_WORKSPACE = {"workspace": RECORD, "created": boolean()}

TOOLS = [
    ToolSpec(
        name="workspace.propose",
        description=(
            "Propose your workspace's diff; a new revision of your open proposal for the task, if any; claims "
            "what it touches and asks for review; test runs a test_run command on the new revision."
        ),
        args=ProposeArgs,
        rare_args=frozenset({"request_review"}),
        agent_view=views.proposed_for_agent,
        output_schema=result(
            {
                "proposal": RECORD,
                "files": strings(),
                "claimed": strings(),
                "reviewers": strings(),
                "test_run": RECORD,
                "log": string(),
            },
            required=["proposal", "files", "claimed"],
        ),
        handler=propose,
        mode="none",
    ),
    ToolSpec(
        name="workspace.sync",
        description=("Merge the project's current tree into your workspace; conflicts keep markers and are listed."),
        args=SyncArgs,
        output_schema=result({"workspace": RECORD, "changed": boolean(), "conflicts": strings()}),
        handler=sync,
        mode="none",
    ),
    ToolSpec(
        name="workspace.create",
        description=(
            "Your workspace for a task (made if needed). A git worktree of the project at workspace.path: "
            "edit there with your own tools, then workspace_propose."
        ),
        args=CreateArgs,
        output_schema=result(_WORKSPACE),
        handler=create,
        mode="none",
    ),
    ToolSpec(
        name="workspace.remove",
        description="Remove a workspace's directory (the record stays, state removed).",
        args=RemoveArgs,
        output_schema=result({"workspace": RECORD, "removed": boolean()}),
        handler=remove,
        mode="none",
        destructive=True,
        audience="operator",
    ),
    ToolSpec(
        name="workspace.list",
        description="List workspaces (live ones unless all), optionally with a diffstat of their work.",
        args=ListArgs,
        output_schema=result({"workspaces": RECORDS}),
        handler=list_,
        mode="none",
        read_only=True,
        audience="operator",
    ),
    ToolSpec(
        name="workspace.sweep",
        description="Remove the workspaces of completed or cancelled tasks (after keep_days).",
        args=SweepArgs,
        output_schema=result({"removed": strings()}),
        handler=sweep,
        mode="none",
        audience="internal",
    ),
    ToolSpec(
        name="workspace.record_unproposed",
        description="Record why a session's workspace changes could not be proposed.",
        args=UnproposedArgs,
        output_schema=result({"workspace": RECORD}),
        handler=record_unproposed,
        audience="internal",
    ),
]
