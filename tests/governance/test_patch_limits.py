"""A new revision's patch is bounded: more files than `repo.max_patch_files` (default 1,000) or
more bytes than the patch limit is refused with the limit named, before any per-file work, and
nothing is recorded; a large patch inside the limits is accepted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from roundtable.errors import RoundtableError, ValidationError
from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.repository.patches import MAX_PATCH_BYTES, parse_patch
from roundtable.store.db import DatabaseBusy
from tests.faults.helpers import db_fingerprint, tree_fingerprint
from tests.governance.conftest import AUTHOR, Flow
from tests.helpers import agent

pytestmark = pytest.mark.anyio


def new_files(count: int, directory: str = "gen") -> str:
    """A git diff adding `count` one-line files under `directory`."""
    return "".join(
        f"diff --git a/{directory}/f{i}.txt b/{directory}/f{i}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/{directory}/f{i}.txt\n@@ -0,0 +1 @@\n+line {i}\n"
        for i in range(count)
    )


async def test_a_patch_over_the_file_limit_is_refused_and_nothing_is_recorded(rt: Runtime, repo: Path) -> None:
    flow = Flow(rt)
    await flow.task()
    await flow.claim("gen", resource_type="directory")
    before_db, before_tree = await db_fingerprint(rt), tree_fingerprint(repo)
    with pytest.raises(RoundtableError) as info:
        await flow.propose(new_files(5000))
    message = str(info.value)
    assert "5000 files" in message and "limit of 1000" in message and "repo.max_patch_files" in message
    assert await db_fingerprint(rt) == before_db
    assert tree_fingerprint(repo) == before_tree


async def test_the_file_limit_comes_from_the_config(repo: Path) -> None:
    config = repo / ".roundtable" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "\nrepo:\n  max_patch_files: 3\n", encoding="utf-8")
    rt = await Runtime.open(repo)
    try:
        await sync_agents(rt)
        flow = Flow(rt)
        await flow.task()
        await flow.claim("gen", resource_type="directory")
        with pytest.raises(RoundtableError, match="4 files, over the limit of 3"):
            await flow.propose(new_files(4))
        proposal = await flow.propose(new_files(3))
        assert proposal["id"]
        with pytest.raises(RoundtableError, match="limit of 3"):
            await flow.call(
                "proposal.attach_patch",
                {"proposal_id": proposal["id"], "patch": new_files(4, "gen/two")},
                agent(AUTHOR),
            )
        async with rt.db.read() as r:
            revisions = await r.fetchone(
                "SELECT COUNT(*) FROM patch_revisions WHERE proposal_id = ?", (proposal["id"],)
            )
        assert revisions is not None and revisions[0] == 1
    finally:
        await rt.close()


async def test_a_large_patch_inside_the_limits_is_accepted(rt: Runtime) -> None:
    flow = Flow(rt)
    await flow.task()
    await flow.claim("gen", resource_type="directory")
    proposal = await flow.propose(new_files(900))
    async with rt.db.read() as r:
        row = await r.fetchone(
            "SELECT touched_files_json FROM patch_revisions WHERE proposal_id = ?", (proposal["id"],)
        )
    assert row is not None and row[0].count("gen/f") == 900


def test_a_patch_over_the_byte_limit_is_refused_with_the_limit_named() -> None:
    text = "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+" + "y" * MAX_PATCH_BYTES + "\n"
    with pytest.raises(ValidationError, match="larger than 16 MiB, the limit for one patch"):
        parse_patch(text, None)


async def test_the_patch_is_checked_before_the_write_lock_is_taken(rt: Runtime, repo: Path) -> None:
    flow = Flow(rt)
    await flow.task()
    await flow.claim("gen", resource_type="directory")
    waiting = await Runtime.open(repo, busy_timeout_ms=200)
    holder = sqlite3.connect(rt.config.sqlite_path(repo), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(RoundtableError) as info:
            await waiting.call(
                "proposal.create",
                {
                    "task_id": flow.task_id,
                    "agent_id": AUTHOR,
                    "title": "t",
                    "summary_md": "s",
                    "affected_resources": [],
                    "risk": "normal",
                    "patch": new_files(1001),
                },
                agent(AUTHOR),
            )
        # Refused by the patch check, which runs before the write transaction (not by the lock).
        assert not isinstance(info.value, DatabaseBusy) and "limit of 1000" in str(info.value)
    finally:
        holder.close()
        await waiting.close()
