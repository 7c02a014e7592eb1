"""The demo team: scripted agents that fill the console while the operator watches (`make run`).

`start_demo_agents(owner_or_runtime, run_id)` creates one small task (append a `mul()` to the
demo calculator, or a line to README.md elsewhere), then, through the supervisor, launches the
scripted implementer; once it has proposed, the scripted reviewer, security and tester review
the proposal. The patch is left waiting for the operator's approval. The console calls
`start(owner)`, which picks the latest active run and returns the stop function.

The demo project's tests already expect `mul()` (`roundtable.demo.workspace`): the tester's own report is
only `reported` evidence, and the host-verified pass comes from the operator's `T` key, which
runs `make test` on the proposal's revision (a scratch worktree with the patch applied) in the
sandbox — on the base tree the same tests fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roundtable.runtime import Runtime
from roundtable.services.sessions.records import LaunchArgs
from roundtable.store.records import Proposal, Run
from roundtable.supervisor import Supervisor, start_supervisor, supervisor_for

if TYPE_CHECKING:
    from roundtable.owner import Owner

log = logging.getLogger("roundtable.demo.team")

MUL_RECIPE = """Add multiplication to the calculator.

```append calc/ops.py


def mul(a: int, b: int) -> int:
    return a * b
```
"""
README_RECIPE = """Note in the README that Roundtable coordinates this project.

```append README.md

Changes here are proposed, reviewed and applied through Roundtable.
```
"""
REVIEWERS = ("reviewer-1", "security-1", "tester-1")


@dataclass
class DemoAgents:
    """The running demo; `await demo.stop()` ends it (and the supervisor it started, if any)."""

    runtime: Runtime
    supervisor: Supervisor
    own_supervisor: bool
    task: asyncio.Task[None] | None = None
    sessions: list[str] = field(default_factory=list)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task
        if self.own_supervisor:
            await self.supervisor.close()
        else:
            for session_id in self.sessions:
                with contextlib.suppress(Exception):
                    await self.supervisor.revoke(session_id, "demo stopped")


def _runtime_of(owner_or_runtime: Owner | Runtime) -> Runtime:
    runtime = getattr(owner_or_runtime, "runtime", owner_or_runtime)
    if not isinstance(runtime, Runtime):
        raise TypeError("start_demo_agents needs an Owner or a Runtime")
    return runtime


async def _demo_task(runtime: Runtime) -> str:
    uses_calc = (runtime.root / "calc" / "ops.py").is_file()
    body, readable = (MUL_RECIPE, ["calc", "tests"]) if uses_calc else (README_RECIPE, ["README.md"])
    title = "Add mul() to the calculator" if uses_calc else "Mention Roundtable in the README"
    async with runtime.db.read() as r:
        existing = await r.scalar("SELECT id FROM tasks WHERE title = ? ORDER BY created_at LIMIT 1", (title,))
    if existing:  # a resumed demo continues with its task instead of starting a duplicate
        return str(existing)
    result = await runtime.call(
        "task.create",
        {
            "title": title,
            "body_md": body,
            "assigned_agent_id": "implementer-1",
            "readable_paths": readable,
            "priority": 10,
        },
    )
    return str(result["task"]["id"])


async def _latest_proposal(runtime: Runtime, task_id: str) -> Proposal | None:
    async with runtime.db.read() as r:
        return await r.one(
            Proposal,
            "SELECT * FROM proposals WHERE task_id = ? ORDER BY created_at DESC, id DESC LIMIT 1",
            (task_id,),
        )


async def _play(demo: DemoAgents, run_id: str, task_id: str) -> None:
    sup = demo.supervisor
    proposal = await _latest_proposal(demo.runtime, task_id)
    if proposal is not None:
        # A resumed demo: the team already did its part; the proposal waits for the operator.
        log.info("demo: proposal %s already exists (%s); no agent relaunched", proposal.id, proposal.status)
        return
    launched = await sup.launch(
        LaunchArgs(agent_id="implementer-1", task_id=task_id, run_id=run_id, adapter="scripted")
    )
    impl = str(launched["session"]["id"])
    demo.sessions.append(impl)
    await sup.wait(impl, 600)
    proposal = await _latest_proposal(demo.runtime, task_id)
    if proposal is None:
        log.warning("demo: the implementer made no proposal")
        return
    ids = []
    for agent in REVIEWERS:
        started = await sup.launch(
            LaunchArgs(agent_id=agent, task_id=task_id, proposal_id=proposal.id, run_id=run_id, adapter="scripted")
        )
        ids.append(str(started["session"]["id"]))
    demo.sessions.extend(ids)
    for session_id in ids:
        await sup.wait(session_id, 600)


async def start_demo_agents(owner_or_runtime: Owner | Runtime, run_id: str) -> DemoAgents:
    """Create the demo task and start the scripted team in the background."""
    runtime = _runtime_of(owner_or_runtime)
    existing = supervisor_for(runtime)
    supervisor = existing or await start_supervisor(runtime)
    demo = DemoAgents(runtime, supervisor, own_supervisor=existing is None)
    task_id = await _demo_task(runtime)

    async def play() -> None:
        try:
            await _play(demo, run_id, task_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the demo agents stopped")

    demo.task = asyncio.create_task(play(), name="roundtable-demo-agents")
    return demo


async def start(owner: Owner) -> Callable[[], Awaitable[None]] | None:
    """Console hook (`roundtable run --demo`): start the demo on the latest active run; returns
    the stop function. With the owner's autopilot on, the dispatcher plans and launches the
    demo's agents: nothing to start."""
    dispatcher = owner.dispatcher
    if dispatcher is not None and dispatcher.enabled:
        log.info("demo: the autopilot launches the agents")
        return None
    runtime = _runtime_of(owner)
    async with runtime.db.read() as r:
        run = await r.one(Run, "SELECT * FROM runs WHERE status = 'active' ORDER BY started_at DESC, id DESC LIMIT 1")
    if run is None:
        return None
    demo = await start_demo_agents(runtime, run.id)
    return demo.stop
