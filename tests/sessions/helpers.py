"""Shared set-up for session tests: agents, a run, a task with readable paths, a capability."""

from __future__ import annotations

from dataclasses import dataclass

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.coordination.runs import create_run
from roundtable.services.sessions import capabilities
from roundtable.services.sessions import records as sessions
from roundtable.store.records import SessionCapability


@dataclass
class Bound:
    run_id: str
    task_id: str
    session_id: str
    token: str
    cap: SessionCapability


async def make_task(
    runtime: Runtime, *, agent: str = "implementer-1", readable: list[str] | None = None
) -> tuple[str, str]:
    await sync_agents(runtime)
    run = await create_run(runtime, "test goal")
    res = await runtime.call(
        "task.create",
        {
            "title": "Add mul",
            "body_md": "do it",
            "assigned_agent_id": agent,
            "readable_paths": readable if readable is not None else ["src"],
        },
    )
    return run.id, res["task"]["id"]


async def add_proposal(runtime: Runtime, task_id: str, *, status: str = "pending", agent: str = "implementer-1") -> str:
    pid = clock.new_id("P")
    async with runtime.db.write() as tx:
        await tx.insert(
            "proposals",
            {
                "id": pid,
                "task_id": task_id,
                "agent_id": agent,
                "title": "t",
                "summary_md": "s",
                "patch_path": "",
                "status": status,
            },
        )
    return pid


async def bind(
    runtime: Runtime, agent: str, run_id: str, task_id: str, proposal_id: str = "", workspace: str = ""
) -> Bound:
    session_id = clock.new_id("S")
    role = capabilities.role_for_agent(agent)
    assert role is not None
    async with runtime.db.write() as tx:
        await sessions.register(
            tx,
            sessions.SessionDraft(
                id=session_id,
                agent_id=agent,
                run_id=run_id,
                adapter="scripted",
                working_directory=workspace or "/w",
                # As the supervisor names a session's workspace (its working directory).
                metadata={"workspace": workspace} if workspace else None,
            ),
        )
        token, cap = await capabilities.issue(
            tx,
            session_id=session_id,
            agent_id=agent,
            run_id=run_id,
            role=role,
            task_id=task_id,
            proposal_id=proposal_id,
        )
    return Bound(run_id, task_id, session_id, token, cap)
