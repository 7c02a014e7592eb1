"""`table.get_state` pages: bounded default, cursors that walk every row once, filters, summary.

Correctness only (timings live in `bench/state.py`): a table larger than one page is walked
page by page and compared with the full snapshot `load_state` reads.
"""

from __future__ import annotations

from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.coordination.state import STATE_DEFAULT_LIMIT, STATE_KEYS, load_state

pytestmark = pytest.mark.anyio

TASKS = 230
CLAIMS = 130
FAR = "2099-01-01T00:00:00.000000000Z"
PAST = "2000-01-01T00:00:00.000000000Z"


async def _seed(runtime: Runtime) -> None:
    """Tasks with repeated priorities and timestamps (so paging must use the id as tie-breaker),
    claims of two agents, some active, some released, some past their expiry."""
    async with runtime.db.write() as tx:
        for i in range(TASKS):
            await tx.insert(
                "tasks",
                {
                    "id": f"T-{i:04d}",
                    "title": f"task {i}",
                    "body_md": "b",
                    "status": ("open", "done", "blocked")[i % 3],
                    "priority": i % 4,
                    "assigned_agent_id": f"implementer-{i % 2 + 1}",
                    "created_at": f"2026-01-0{i % 5 + 1}T00:00:00.000000000Z",
                },
            )
        for i in range(CLAIMS):
            await tx.insert(
                "claims",
                {
                    "id": f"C-{i:04d}",
                    "resource_id": f"file:src/m{i}.py",
                    "agent_id": f"implementer-{i % 2 + 1}",
                    "task_id": f"T-{i:04d}",
                    "claim_type": "write",
                    "status": "released" if i % 5 == 0 else "active",
                    "expires_at": PAST if i % 7 == 0 else FAR,
                    "created_at": f"2026-01-0{i % 3 + 1}T00:00:00.000000000Z",
                },
            )


async def _walk(runtime: Runtime, args: dict[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Every page of one walk, the lists concatenated; and how many pages it took."""
    seen: dict[str, list[dict[str, Any]]] = {key: [] for key in STATE_KEYS}
    page = await runtime.call("table.get_state", args)
    pages = 1
    while True:
        for key in STATE_KEYS:
            seen[key] += page[key]
        if not page["has_more"]:
            assert page["next_cursor"] == ""
            return seen, pages
        assert page["next_cursor"]
        page = await runtime.call("table.get_state", {**args, "cursor": page["next_cursor"]})
        pages += 1


async def test_default_page_is_bounded_and_counts_the_rest(runtime: Runtime, run_id: str) -> None:
    await _seed(runtime)
    page = await runtime.call("table.get_state")
    assert list(page)[: len(STATE_KEYS)] == list(STATE_KEYS)
    assert len(page["tasks"]) == STATE_DEFAULT_LIMIT and len(page["claims"]) == STATE_DEFAULT_LIMIT
    assert page["counts"]["tasks"] == TASKS and page["counts"]["claims"] == CLAIMS
    assert page["has_more"] is True and page["next_cursor"] and page["limit"] == STATE_DEFAULT_LIMIT
    async with runtime.db.read() as r:
        full = await load_state(r)
    # The first page is the head of the documented order, converted the same way.
    assert page["tasks"] == full["tasks"][:STATE_DEFAULT_LIMIT]
    assert page["claims"] == full["claims"][:STATE_DEFAULT_LIMIT]
    assert page["runs"] == full["runs"] and page["agents"] == full["agents"]


async def test_walking_the_cursor_reads_every_row_once_in_order(runtime: Runtime, run_id: str) -> None:
    await _seed(runtime)
    async with runtime.db.read() as r:
        full = await load_state(r)
    seen, pages = await _walk(runtime, {"limit": 17})
    assert pages == -(-TASKS // 17)  # the longest list sets the number of pages
    for key in STATE_KEYS:
        assert seen[key] == full[key], key
    expired = [c for c in seen["claims"] if c["status"] == "expired"]
    assert expired and all(c["expires_at"] == PAST for c in expired)


async def test_filters_restrict_every_list(runtime: Runtime, run_id: str) -> None:
    await _seed(runtime)
    async with runtime.db.read() as r:
        full = await load_state(r)
    mine, _ = await _walk(runtime, {"agent_id": "implementer-2", "limit": 25})
    assert mine["tasks"] == [t for t in full["tasks"] if t["assigned_agent_id"] == "implementer-2"]
    assert mine["claims"] == [c for c in full["claims"] if c["agent_id"] == "implementer-2"]
    assert [a["id"] for a in mine["agents"]] == ["implementer-2"]
    assert mine["runs"] == [] and mine["decisions"] == []  # lists without an agent field
    blocked, _ = await _walk(runtime, {"status": "blocked", "lists": ["tasks"], "limit": 30})
    assert blocked["tasks"] == [t for t in full["tasks"] if t["status"] == "blocked"]
    assert blocked["claims"] == [] and blocked["runs"] == []  # not selected
    expired, _ = await _walk(runtime, {"status": "expired", "lists": ["claims"], "limit": 7})
    assert expired["claims"] == [c for c in full["claims"] if c["status"] == "expired"]
    active, _ = await _walk(runtime, {"status": "active", "lists": ["claims"], "limit": 1000})
    assert active["claims"] == [c for c in full["claims"] if c["status"] == "active"]
    run = await runtime.call("table.get_state", {"run_id": run_id})
    assert [r["id"] for r in run["runs"]] == [run_id] and run["tasks"] == [] and run["counts"]["runs"] == 1


async def test_summary_counts_by_status(runtime: Runtime, run_id: str) -> None:
    await _seed(runtime)
    summary = await runtime.call("table.get_state", {"summary": True})
    assert all(summary[key] == [] for key in STATE_KEYS)
    assert summary["counts"]["tasks"] == TASKS and summary["counts"]["claims"] == CLAIMS
    assert summary["by_status"]["tasks"] == {"open": 77, "done": 77, "blocked": 76}
    claims = summary["by_status"]["claims"]
    released = len([i for i in range(CLAIMS) if i % 5 == 0])
    expired = len([i for i in range(CLAIMS) if i % 5 and i % 7 == 0])
    assert claims == {"released": released, "expired": expired, "active": CLAIMS - released - expired}
    assert summary["has_more"] is False and summary["next_cursor"] == ""


async def test_a_foreign_or_mismatched_cursor_is_refused(runtime: Runtime, run_id: str) -> None:
    await _seed(runtime)
    page = await runtime.call("table.get_state", {"status": "open", "limit": 10})
    with pytest.raises(ToolError, match="other filters"):
        await runtime.call("table.get_state", {"status": "done", "cursor": page["next_cursor"]})
    for bad in ("not-a-cursor", "e30", page["next_cursor"][:-4]):
        with pytest.raises(ToolError, match="cursor is not one this tool issued"):
            await runtime.call("table.get_state", {"status": "open", "cursor": bad})
    with pytest.raises(ToolError, match="at most 1000"):
        await runtime.call("table.get_state", {"limit": 5000})
    with pytest.raises(ToolError, match="must be one of"):
        await runtime.call("table.get_state", {"lists": ["events"]})
