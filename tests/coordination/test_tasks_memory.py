"""Task and memory tools through Runtime.call: success paths, exact errors, nothing changed on error."""

from __future__ import annotations

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime

pytestmark = pytest.mark.anyio


async def _count(runtime: Runtime, table: str) -> int:
    async with runtime.db.read() as r:
        return int(await r.scalar(f"SELECT count(*) FROM {table}"))


async def test_task_create_get_list_update(runtime: Runtime) -> None:
    created = (
        await runtime.call(
            "task.create",
            {
                "title": "Fix parser",
                "body_md": "Details",
                "priority": 5,
                "readable_paths": ["src/", "./src", "docs//guide.md", "src"],
            },
        )
    )["task"]
    assert created["id"].startswith("T-") and created["status"] == "open" and created["risk"] == "normal"
    assert created["priority"] == 5 and created["assigned_agent_id"] == ""
    assert created["readable_paths"] == ["src", "docs/guide.md"]
    assert "readable_paths_json" not in created
    zero = (await runtime.call("task.create", {"title": "B", "body_md": "b", "priority": 0, "task_id": "T-b"}))["task"]
    assert zero["priority"] == 100 and zero["id"] == "T-b" and zero["readable_paths"] == []
    got = (await runtime.call("task.get", {"task_id": created["id"]}))["task"]
    assert got == created
    listed = (await runtime.call("task.list"))["tasks"]
    assert [t["id"] for t in listed] == [created["id"], "T-b"]
    updated = (await runtime.call("task.update_status", {"task_id": "T-b", "status": "blocked"}))["task"]
    assert updated["status"] == "blocked" and updated["assigned_agent_id"] == ""
    assert updated["updated_at"] > zero["updated_at"]
    updated = (await runtime.call("task.update_status", {"task_id": "T-b", "assigned_agent_id": "implementer-2"}))[
        "task"
    ]
    assert updated["status"] == "blocked" and updated["assigned_agent_id"] == "implementer-2"
    # an existing id is replaced, keeping created_at; an omitted assignee clears it
    again = (await runtime.call("task.create", {"title": "B2", "body_md": "b2", "task_id": "T-b"}))["task"]
    assert again["title"] == "B2" and again["created_at"] == zero["created_at"] and again["assigned_agent_id"] == ""


async def test_task_empty_list_is_a_list(runtime: Runtime) -> None:
    assert await runtime.call("task.list") == {"tasks": [], "has_more": False, "next_cursor": ""}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"title": " ", "body_md": "b"}, "task.create: argument title must not be empty"),
        ({"body_md": "b"}, "task.create: missing required argument title"),
        ({"title": "t", "body_md": "b", "priority": 1.5}, "task.create: argument priority must be an integer"),
        ({"title": "t", "body_md": "b", "task_id": "../x"}, "task_id must be 1-128 letters, digits"),
        ({"title": "t", "body_md": "b", "readable_paths": [".git/config"]}, "credential or configuration location"),
        ({"title": "t", "body_md": "b", "readable_paths": ["src/.env"]}, "credential or configuration location"),
        ({"title": "t", "body_md": "b", "readable_paths": ["keys/server.pem"]}, "credential or configuration"),
        ({"title": "t", "body_md": "b", "readable_paths": ["config/Secrets.yaml"]}, "credential or configuration"),
        ({"title": "t", "body_md": "b", "readable_paths": [".roundtable"]}, "credential or configuration location"),
        ({"title": "t", "body_md": "b", "readable_paths": ["/etc/passwd"]}, "must be relative to the repository root"),
        ({"title": "t", "body_md": "b", "readable_paths": ["../up"]}, "must not contain '..'"),
        ({"title": "t", "body_md": "b", "readable_paths": ["a/../../up"]}, "must not contain '..'"),
        ({"title": "t", "body_md": "b", "readable_paths": [""]}, "readable_paths must not contain empty entries"),
        ({"title": "t", "body_md": "b", "readable_paths": ["a\x01b"]}, "contains a control character"),
        ({"title": "t", "body_md": "b", "readable_paths": "src"}, "argument readable_paths must be an array"),
        ({"title": "t" * 501, "body_md": "b"}, "argument title is too long: 501 characters, at most 500 allowed"),
    ],
)
async def test_task_create_refusals_change_nothing(runtime: Runtime, args: dict, message: str) -> None:
    with pytest.raises(ToolError) as exc:
        await runtime.call("task.create", args)
    assert message in str(exc.value)
    assert await _count(runtime, "tasks") == 0


async def test_task_lookup_errors(runtime: Runtime) -> None:
    with pytest.raises(ToolError, match=r"^get task T-none: not found$"):
        await runtime.call("task.get", {"task_id": "T-none"})
    with pytest.raises(ToolError, match=r"^get task T-none: not found$"):
        await runtime.call("task.update_status", {"task_id": "T-none", "status": "done"})
    with pytest.raises(ToolError, match="argument task_id must not be empty"):
        await runtime.call("task.get", {"task_id": ""})
    with pytest.raises(ToolError, match="unknown argument bogus"):
        await runtime.call("task.list", {"bogus": 1})


async def test_memory_record_query_summarize_mark_stale(runtime: Runtime) -> None:
    a = (
        await runtime.call(
            "memory.record",
            {"scope": "project", "kind": "convention", "title": "Use ruff", "body_md": "ruff ruff", "importance": 80},
        )
    )["entry"]
    assert a["id"].startswith("M-") and a["status"] == "active" and a["importance"] == 80 and a["source_event_id"] == 0
    b = (
        await runtime.call(
            "memory.record",
            {"scope": "T-1", "kind": "decision", "title": "Parser", "body_md": "uses Ruff once", "source_event_id": 3},
        )
    )["entry"]
    assert b["importance"] == 50 and b["source_event_id"] == 3
    # query: score by occurrences, then importance
    hits = (await runtime.call("memory.query", {"query": "RUFF"}))["entries"]
    assert [h["id"] for h in hits] == [a["id"], b["id"]]
    assert (await runtime.call("memory.query", {"query": "nothing-like-this"}))["entries"] == []
    assert [h["id"] for h in (await runtime.call("memory.query", {"query": "", "scope": "T-1"}))["entries"]] == [
        b["id"]
    ]
    assert [h["id"] for h in (await runtime.call("memory.query", {"query": "", "limit": 1}))["entries"]] == [a["id"]]
    assert len((await runtime.call("memory.query", {"query": "", "limit": 0}))["entries"]) == 2
    # summarize
    summary = await runtime.call("memory.summarize", {"task_id": "T-1"})
    assert summary["entry_count"] == 1
    assert summary["summary_md"] == "# Memory Summary\n\nTask: T-1\n\n- [decision] Parser: uses Ruff once\n"
    empty = await runtime.call("memory.summarize", {"scope": "nowhere"})
    assert empty["summary_md"] == "# Memory Summary\n\nScope: nowhere\n\nNo active memory entries matched.\n"
    assert empty["entries"] == [] and empty["entry_count"] == 0
    # mark stale: appended reason; stale entries leave summaries but stay queryable
    stale = (await runtime.call("memory.mark_stale", {"memory_id": b["id"], "reason_md": "superseded"}))["entry"]
    assert stale["status"] == "stale" and stale["body_md"] == "uses Ruff once\n\nStale reason: superseded"
    assert (await runtime.call("memory.summarize", {"task_id": "T-1"}))["entry_count"] == 0
    assert b["id"] in [h["id"] for h in (await runtime.call("memory.query", {"query": "parser"}))["entries"]]
    # replace by id keeps created_at
    again = (
        await runtime.call(
            "memory.record", {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "memory_id": a["id"]}
        )
    )["entry"]
    assert again["created_at"] == a["created_at"] and again["title"] == "t"
    state = await runtime.call("table.get_state")
    assert {m["id"] for m in state["memory"]} == {a["id"], b["id"]}


async def test_memory_errors_change_nothing(runtime: Runtime) -> None:
    cases = [
        (
            "memory.record",
            {"scope": "p", "kind": "k", "title": " ", "body_md": "b"},
            "argument title must not be empty",
        ),
        (
            "memory.record",
            {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "memory_id": "a/b"},
            "memory_id must",
        ),
        (
            "memory.record",
            {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "source_event_id": -1},
            "at least 0",
        ),
        ("memory.mark_stale", {"memory_id": "M-x", "reason_md": "r"}, "get memory entry M-x: not found"),
        ("memory.mark_stale", {"memory_id": "M-x", "reason_md": "r" * 4001}, "argument reason_md is too long: 4001 characters, at most 4000 allowed"),
        ("memory.query", {}, "missing required argument query"),
        ("memory.query", {"query": "x", "limit": "3"}, "argument limit must be an integer"),
    ]
    for tool, args, message in cases:
        with pytest.raises(ToolError) as exc:
            await runtime.call(tool, args)
        assert message in str(exc.value), (tool, args, str(exc.value))
    assert await _count(runtime, "memory_entries") == 0
