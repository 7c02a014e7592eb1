"""A capability session sees through its tools exactly what it sees through its resources: its
run, its task, the proposals of its task and what hangs off them, its claims — over a real
session endpoint and the official SDK client."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError

from roundtable import clock
from roundtable.runtime import Runtime
from tests.sessions.helpers import add_proposal, bind, make_task
from tests.sessions.test_endpoint import client, endpoint, text_of
from tests.support.results import value_of

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


async def _other_task(runtime: Runtime) -> str:
    """A second task of the same run, for another implementer, readable everywhere."""
    other = await runtime.call(
        "task.create",
        {"title": "Other", "body_md": "not yours", "assigned_agent_id": "implementer-2", "readable_paths": ["."]},
    )
    return str(other["task"]["id"])


async def _evidence(runtime: Runtime, proposal_id: str, task_id: str) -> tuple[str, str]:
    """A test run and a human approval request on `proposal_id`: (test run id, approval id)."""
    run_id, approval_id = clock.new_id("TR"), clock.new_id("HA")
    async with runtime.db.write() as tx:
        await tx.insert(
            "test_runs",
            {"id": run_id, "proposal_id": proposal_id, "task_id": task_id, "command": "make test", "status": "passed"},
        )
        await tx.insert(
            "human_approvals",
            {"id": approval_id, "proposal_id": proposal_id, "task_id": task_id, "subject": "s", "reason_md": "r"},
        )
    return run_id, approval_id


async def test_tools_refuse_another_tasks_proposal_as_the_resource_does(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    other_task = await _other_task(runtime)
    own = await add_proposal(runtime, task_id)
    stranger = await add_proposal(runtime, other_task, agent="implementer-2")
    stranger_run, stranger_approval = await _evidence(runtime, stranger, other_task)
    own_run, own_approval = await _evidence(runtime, own, task_id)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        with pytest.raises(MCPError, match="belongs to another task"):
            await s.read_resource(f"roundtable://proposal/{stranger}")
        for tool, args in (
            ("proposal_get", {"proposal_id": stranger}),
            ("vote_list", {"proposal_id": stranger}),
            ("patch_validate", {"proposal_id": stranger}),
            ("test_get_result", {"test_run_id": stranger_run}),
            ("human_approval_status", {"approval_id": stranger_approval}),
        ):
            refused = await s.call_tool(tool, args)
            assert refused.is_error, (tool, text_of(refused))
            assert "belongs to another task than this session's" in text_of(refused), tool
        for tool, args in (
            ("proposal_get", {"proposal_id": own}),
            ("vote_list", {"proposal_id": own}),
            ("test_get_result", {"test_run_id": own_run}),
            ("human_approval_status", {"approval_id": own_approval}),
        ):
            allowed = await s.call_tool(tool, args)
            assert not allowed.is_error, (tool, text_of(allowed))
        got = json.loads((await s.read_resource(f"roundtable://proposal/{own}")).contents[0].text)
        assert got["proposal"]["id"] == own
        listed = await s.call_tool("proposal_list", {})
        assert [p["id"] for p in value_of(listed)["proposals"]] == [own]
        tasks = await s.call_tool("task_list", {})
        assert [t["id"] for t in value_of(tasks)["tasks"]] == [task_id]
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT payload_json FROM events WHERE type = 'capability.denied'")
    denied = [json.loads(row[0]) for row in rows]
    assert [d["reason_code"] for d in denied] == ["out_of_scope"] * 6
    assert all(stranger not in row[0] for row in rows)  # the event names the tool, never the arguments


async def test_table_get_state_in_a_session_shows_the_sessions_scope(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    other_task = await _other_task(runtime)
    own = await add_proposal(runtime, task_id)
    await add_proposal(runtime, other_task, agent="implementer-2")
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        claimed = await s.call_tool(
            "resource_claim", {"resource_type": "file", "path": "src/calc.py", "claim_type": "read"}
        )
        assert not claimed.is_error, text_of(claimed)
        got = await s.call_tool("table_get_state", {})
        assert not got.is_error, text_of(got)
        state = value_of(got)
        assert [r["id"] for r in state["runs"]] == [run_id]
        assert [t["id"] for t in state["tasks"]] == [task_id]
        assert [p["id"] for p in state["proposals"]] == [own]
        assert [c["task_id"] for c in state["claims"]] == [task_id]
        assert [a["id"] for a in state["agents"]] == ["implementer-1"]
        assert state["counts"]["tasks"] == 1 and state["counts"]["proposals"] == 1
        # The resource is the same read.
        table = json.loads((await s.read_resource("roundtable://table")).contents[0].text)
        assert [t["id"] for t in table["tasks"]] == [task_id]
        assert [p["id"] for p in table["proposals"]] == [own]
        # Filters still work inside the scope, and never widen it.
        mine = await s.call_tool("table_get_state", {"agent_id": "implementer-2", "lists": ["proposals"]})
        assert "proposals" not in value_of(mine) and value_of(mine)["counts"]["proposals"] == 0
        summary = await s.call_tool("table_get_state", {"summary": True})
        assert value_of(summary)["by_status"]["proposals"] == {"pending": 1}
        watched = await s.call_tool("table_watch", {})
        assert [p["id"] for p in value_of(watched)["pending_proposals"]] == [own]
        # Its one open task, in full; no count beside the list that shows it.
        assert [t["id"] for t in value_of(watched)["tasks"]] == [task_id] and "open_tasks" not in value_of(watched)


async def test_a_planner_sees_the_tasks_of_its_run(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime, agent="architect-1")
    other_task = await _other_task(runtime)
    b = await bind(runtime, "architect-1", run_id, task_id)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        tasks = await s.call_tool("task_list", {})
        assert sorted(t["id"] for t in value_of(tasks)["tasks"]) == sorted([task_id, other_task])
        state = await s.call_tool("table_get_state", {"lists": ["tasks"]})
        assert sorted(t["id"] for t in value_of(state)["tasks"]) == sorted([task_id, other_task])


async def test_resource_records_outside_the_readable_paths_are_not_shown(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)  # readable: src
    async with runtime.db.write() as tx:
        for rid, path in (("file:src/calc.py", "src/calc.py"), ("file:deploy/prod.env", "deploy/prod.env")):
            await tx.insert("resources", {"id": rid, "type": "file", "path": path})
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with endpoint(runtime, b) as sock, client(sock, b.token) as s:
        found = await s.call_tool("resource_search", {"query": ""})
        assert [r["id"] for r in value_of(found)["resources"]] == ["file:src/calc.py"]
        assert not (await s.call_tool("resource_get", {"resource_id": "file:src/calc.py"})).is_error
        refused = await s.call_tool("resource_get", {"resource_id": "file:deploy/prod.env"})
        assert refused.is_error and "outside the task's readable_paths" in text_of(refused)
    operator = await runtime.call("resource.search", {"query": ""})
    assert len(operator["resources"]) == 2  # everyone else still sees every record
