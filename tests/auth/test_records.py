"""Every state change leaves an event, memory keeps its history, secrets
in arguments are not stored, and an owner whose database file vanished stops instead of
acknowledging writes that go nowhere."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from roundtable.errors import StoreError, ToolError
from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.services.coordination import memory as memory_service
from roundtable.tools.context import OPERATOR, Caller
from tests.auth.conftest import PATCH, client, events, snapshot
from tests.support.results import value_of

pytestmark = pytest.mark.anyio

IMPL1 = Caller("agent", "http", agent_id="implementer-1")
IMPL2 = Caller("agent", "http", agent_id="implementer-2")
ENTRY = {"scope": "project", "kind": "finding", "title": "first", "body_md": "v1"}


async def test_task_changes_append_events(owner: Owner) -> None:
    rt = owner.runtime
    made = (await rt.call("task.create", {"title": "a", "body_md": "b"}))["task"]
    await rt.call("task.create", {"task_id": made["id"], "title": "a2", "body_md": "b2"})
    async with client(owner, "implementer-1") as c:
        out = await c.session.call_tool("task_create", {"title": "agent task", "body_md": "b"})
        assert out.is_error is False
        await c.session.call_tool(
            "task_update_status", {"task_id": made["id"], "assigned_agent_id": "implementer-1", "status": "in_progress"}
        )
    created = await events(rt, "task.created")
    assert [(e["task_id"], e["principal"]) for e in created] == [
        (made["id"], "operator"),
        (value_of(out)["task"]["id"], "agent:implementer-1"),
    ]
    assert [e["task_id"] for e in await events(rt, "task.replaced")] == [made["id"]]
    [updated] = await events(rt, "task.updated")
    assert (updated["actor_id"], updated["transport"]) == ("implementer-1", "http")
    assert '"previous_status":"open"' in updated["payload_json"] and '"status":"in_progress"' in updated["payload_json"]


async def test_memory_edits_keep_history_and_only_authors_edit(owner: Owner) -> None:
    rt = owner.runtime
    entry = (await rt.call("memory.record", ENTRY, IMPL1))["entry"]
    assert entry["author_id"] == "implementer-1" and entry["revision"] == 1
    before = await snapshot(rt)
    with pytest.raises(ToolError, match="written by implementer-1; agents edit only their own entries"):
        await rt.call("memory.record", {**ENTRY, "memory_id": entry["id"], "body_md": "hijacked"}, IMPL2)
    with pytest.raises(ToolError, match="written by implementer-1"):
        await rt.call("memory.mark_stale", {"memory_id": entry["id"], "reason_md": "no"}, IMPL2)
    assert await snapshot(rt) == before
    # The author's own edit is a new revision; nothing is overwritten silently.
    edited = (
        await rt.call("memory.record", {**ENTRY, "memory_id": entry["id"], "title": "second", "body_md": "v2"}, IMPL1)
    )["entry"]
    assert (edited["revision"], edited["title"], edited["author_id"]) == (2, "second", "implementer-1")
    # The operator edits every entry (and the author stays the author).
    stale = (await rt.call("memory.mark_stale", {"memory_id": entry["id"], "reason_md": "superseded"}, OPERATOR))[
        "entry"
    ]
    assert (stale["status"], stale["revision"], stale["author_id"]) == ("stale", 3, "implementer-1")
    async with rt.db.read() as r:
        history = await memory_service.revisions(r, entry["id"])
    assert [(h.revision, h.title, h.body_md, h.edited_by) for h in history] == [
        (1, "first", "v1", "implementer-1"),
        (2, "second", "v2", "operator"),
    ]
    kinds = [e["type"] for e in (await events(rt, "memory.recorded")) + (await events(rt, "memory.revised"))]
    assert kinds == ["memory.recorded", "memory.revised"]
    assert len(await events(rt, "memory.marked_stale")) == 1


async def test_secrets_in_arguments_are_redacted_before_storage(owner: Owner) -> None:
    rt = owner.runtime
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    task = (
        await rt.call(
            "task.create",
            {"title": f"rotate token={secret}", "body_md": f"use Bearer {secret} then api_key: hunter2hunter2"},
            IMPL1,
        )
    )["task"]
    assert secret not in task["title"] and "[REDACTED]" in task["title"]
    assert "hunter2" not in task["body_md"]
    await rt.call("memory.record", {**ENTRY, "body_md": f"password={secret}"}, IMPL1)
    await rt.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": task["id"], "path": "src/app.py"},
        IMPL1,
    )
    # A patch stays byte-exact (git applies it; the security scan flags secrets in it).
    patch = PATCH.replace("print('v2')", f"print('{secret}')")
    made = await rt.call(
        "proposal.create",
        {
            "task_id": task["id"],
            "title": "p",
            "summary_md": f"token: {secret}",
            "affected_resources": [],
            "risk": "normal",
            "patch": patch,
        },
        IMPL1,
    )
    got = await rt.call("proposal.get", {"proposal_id": made["proposal"]["id"]})
    assert got["patch"] == patch
    assert secret not in got["proposal"]["summary_md"]
    db = (owner.root / ".roundtable" / "roundtable.db").read_bytes()
    events_and_rows = db.replace(patch.encode(), b"")
    assert secret.encode() not in events_and_rows


async def test_writes_are_refused_once_the_database_file_is_gone(owner: Owner) -> None:
    rt: Runtime = owner.runtime
    owner.db_check_interval = 0.05
    db = rt.db.path
    await rt.call("task.create", {"title": "before", "body_md": "b"})
    os.rename(db, f"{db}.moved")
    with pytest.raises(StoreError, match="was removed while this process had it open; refusing to write"):
        await rt.call("task.create", {"title": "lost", "body_md": "b"})
    # Writers that do not go through Runtime.call (the Chair, the supervisor) are refused too.
    with pytest.raises(StoreError, match="was removed while this process had it open"):
        async with rt.db.write(tool="chair.tick") as tx:
            await tx.append_event("", "lost.event", {})
    # Reads still answer from the open file; the watchdog stops the owner.
    assert (await rt.call("task.list", {}))["tasks"][0]["title"] == "before"
    await asyncio.wait_for(owner.failed.wait(), 10)
    assert "removed" in owner.fatal_error and "the owner stops" in owner.fatal_error
    os.rename(f"{db}.moved", db)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_owner_process_stops_when_its_database_is_replaced(repo: Path) -> None:
    cfg = repo / ".roundtable" / "config.yaml"
    cfg.write_text(
        cfg.read_text().replace('http_address: "127.0.0.1:7117"', f'http_address: "127.0.0.1:{free_port()}"')
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "roundtable", "mcp", "serve", "--root", str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "ready" in first or "listening" in first or "http" in first, first
        db = repo / ".roundtable" / "roundtable.db"
        replacement = repo / ".roundtable" / "other.db"
        replacement.write_bytes(db.read_bytes())
        os.replace(replacement, db)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 1
    assert "was replaced while this process had it open" in out
