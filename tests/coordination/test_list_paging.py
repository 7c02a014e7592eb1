"""Lists an agent can ask for page with a default size that does not grow with history: over
more rows than the default, a call returns the default count, `has_more` and a cursor that
continues exactly after the last row (no row twice, none missed); a cursor is tied to its tool
and filters."""

from __future__ import annotations

from typing import Any

import pytest

from roundtable.errors import ValidationError
from roundtable.runtime import Runtime
from roundtable.services.paging import DEFAULT_LIMIT
from tests.helpers import agent

pytestmark = pytest.mark.anyio

EXTRA = 7


async def _all_pages(rt: Runtime, tool: str, key: str, args: dict[str, Any], caller: Any = None) -> list[list[Any]]:
    pages: list[list[Any]] = []
    cursor = ""
    while True:
        call_args = {**args, **({"cursor": cursor} if cursor else {})}
        out = await (rt.call(tool, call_args, caller) if caller is not None else rt.call(tool, call_args))
        pages.append(out[key])
        assert out["has_more"] == bool(out["next_cursor"])
        if not out["has_more"]:
            return pages
        cursor = out["next_cursor"]
        assert len(pages) < 100, "paging does not end"


async def test_task_list_pages_by_default(runtime: Runtime) -> None:
    made = [
        (await runtime.call("task.create", {"title": f"t{i}", "body_md": "b", "priority": i % 3}))["task"]["id"]
        for i in range(DEFAULT_LIMIT + EXTRA)
    ]
    first = await runtime.call("task.list", {})
    assert len(first["tasks"]) == DEFAULT_LIMIT and first["has_more"] is True and first["next_cursor"]
    pages = await _all_pages(runtime, "task.list", "tasks", {})
    assert [len(p) for p in pages] == [DEFAULT_LIMIT, EXTRA]
    ids = [t["id"] for page in pages for t in page]
    assert sorted(ids) == sorted(made) and len(set(ids)) == len(ids)
    order = [(t["priority"], t["created_at"], t["id"]) for page in pages for t in page]
    assert order == sorted(order)
    small = await _all_pages(runtime, "task.list", "tasks", {"limit": 25})
    assert [t["id"] for page in small for t in page] == ids and len(small) == 5


async def test_claim_status_by_agent_and_resource_search_page(runtime: Runtime) -> None:
    task = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
    who = agent("implementer-1")
    for i in range(DEFAULT_LIMIT + EXTRA):
        await runtime.call(
            "resource.claim",
            {"resource_type": "file", "claim_type": "write", "task_id": task, "path": f"src/m{i:03d}.py"},
            who,
        )
    args = {"agent_id": "implementer-1"}
    first = await runtime.call("resource.claim_status", args, who)
    assert len(first["claims"]) == DEFAULT_LIMIT and first["has_more"] is True
    pages = await _all_pages(runtime, "resource.claim_status", "claims", args, who)
    assert [len(p) for p in pages] == [DEFAULT_LIMIT, EXTRA]
    assert len({c["id"] for page in pages for c in page}) == DEFAULT_LIMIT + EXTRA
    found = await _all_pages(runtime, "resource.search", "resources", {"query": "src/m", "limit": 40}, who)
    assert [len(p) for p in found] == [40, 40, 27]
    ids = [r["id"] for page in found for r in page]
    assert ids == sorted(ids) == sorted(f"file:src/m{i:03d}.py" for i in range(DEFAULT_LIMIT + EXTRA))
    # A cursor belongs to its tool and its filters.
    with pytest.raises(ValidationError, match="other filters"):
        await runtime.call("resource.claim_status", {"agent_id": "implementer-2", "cursor": first["next_cursor"]}, who)
    with pytest.raises(ValidationError, match="not one this tool issued"):
        await runtime.call("task.list", {"cursor": first["next_cursor"]})
    with pytest.raises(ValidationError, match="not one this tool issued"):
        await runtime.call("task.list", {"cursor": "garbage!"})
