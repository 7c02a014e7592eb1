"""A session's read claims end with it: when its process ends (`session.record_exit`) the read and
review claims its agent took while it ran are released, so a file a reviewer only read does not
show as contended for the claims' whole lifetime; write claims stay for the proposal's gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.tools.context import SUPERVISOR
from tests.helpers import agent
from tests.sessions.helpers import bind, make_task

pytestmark = pytest.mark.anyio


async def claim(runtime: Runtime, agent_id: str, task_id: str, path: str, mode: str) -> str:
    out = await runtime.call(
        "resource.claim",
        {"resource_type": "file", "resource_id": f"file:{path}", "path": path, "claim_type": mode, "task_id": task_id},
        agent(agent_id),
    )
    return str(out["claim"]["id"])


async def statuses(runtime: Runtime, *claim_ids: str) -> list[str]:
    async with runtime.db.read() as r:
        return [str(await r.scalar("SELECT status FROM claims WHERE id = ?", (c,))) for c in claim_ids]


async def test_a_sessions_read_claims_are_released_when_it_ends(runtime: Runtime, project: Path) -> None:
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "a.py").write_text("a = 1\n")
    (project / "src" / "b.py").write_text("b = 1\n")
    run_id, task_id = await make_task(runtime)
    reviewer = await bind(runtime, "reviewer-1", run_id, task_id)
    implementer = await bind(runtime, "implementer-1", run_id, task_id)
    read = await claim(runtime, "reviewer-1", task_id, "src/a.py", "read")
    review = await claim(runtime, "reviewer-1", task_id, "src/b.py", "review")
    write = await claim(runtime, "implementer-1", task_id, "src/a.py", "write")
    implementer_read = await claim(runtime, "implementer-1", task_id, "src/b.py", "read")

    await runtime.call(
        "session.record_exit",
        {"session_id": reviewer.session_id, "exit_code": 0, "reason": "process_exited"},
        SUPERVISOR,
    )
    assert await statuses(runtime, read, review) == ["released", "released"]
    assert await statuses(runtime, write, implementer_read) == ["active", "active"]  # another agent's
    async with runtime.db.read() as r:
        reasons = await r.fetchall(
            "SELECT actor_id, json_extract(payload_json, '$.reason') FROM events WHERE type = 'claim.released'"
        )
    assert [tuple(row) for row in reasons] == [("supervisor", f"session {reviewer.session_id} ended")] * 2

    # the implementer's write claim outlives its session: the proposal's claims gate needs it
    await runtime.call(
        "session.record_exit",
        {"session_id": implementer.session_id, "exit_code": -9, "reason": "process_exited"},
        SUPERVISOR,
    )
    assert await statuses(runtime, write, implementer_read) == ["active", "released"]


async def test_claims_stay_while_another_session_of_the_agent_runs(runtime: Runtime, project: Path) -> None:
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "a.py").write_text("a = 1\n")
    run_id, task_id = await make_task(runtime)
    first = await bind(runtime, "reviewer-1", run_id, task_id)
    await bind(runtime, "reviewer-1", run_id, task_id)  # still live
    read = await claim(runtime, "reviewer-1", task_id, "src/a.py", "read")
    await runtime.call(
        "session.record_exit", {"session_id": first.session_id, "exit_code": 0, "reason": "process_exited"}, SUPERVISOR
    )
    assert await statuses(runtime, read) == ["active"]
