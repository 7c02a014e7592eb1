"""Schema v3: a version 2 file gains `tasks.run_id` and `proposals.run_id`, filled
from what was recorded when each row was created, never from which run happens to be active."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from roundtable.store.db import Database
from roundtable.store.records import Proposal, Task
from roundtable.store.schema import MIGRATIONS, SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def version_2_file(path: Path) -> None:
    """A database as version 2 of the schema left it, with rows of every backfill case."""
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:2]:
        for statement in step:
            con.execute(statement)
    con.execute("PRAGMA user_version = 2")
    con.executemany(
        "INSERT INTO runs (id, status, started_at) VALUES (?, ?, ?)",
        [("R-OLD", "completed", "2026-01-01"), ("R-1", "active", "2026-01-02"), ("R-LATEST", "active", "2026-01-03")],
    )
    for task_id in ("T-EVENT", "T-REPLACED", "T-CAP", "T-NONE"):
        con.execute("INSERT INTO tasks (id, title, body_md) VALUES (?, 'x', 'x')", (task_id,))
    events = [
        ("R-OLD", "task.created", "T-EVENT", "{}"),
        ("R-1", "task.updated", "T-EVENT", "{}"),  # a later event does not move the task
        ("", "task.created", "T-REPLACED", "{}"),
        ("R-1", "task.replaced", "T-REPLACED", "{}"),
        ("", "task.created", "T-CAP", "{}"),
        ("", "task.created", "T-NONE", "{}"),
        ("R-1", "proposal.created", "T-NONE", '{"proposal_id": "P-OWN-EVENT"}'),
    ]
    con.executemany("INSERT INTO events (run_id, type, task_id, payload_json) VALUES (?, ?, ?, ?)", events)
    con.execute(
        "INSERT INTO session_capabilities (id, token_sha256, session_id, agent_id, run_id, role, task_id,"
        " issued_at, expires_at, max_expires_at) VALUES ('CAP-1', 'h', 'S-1', 'implementer-1', 'R-1',"
        " 'implementer', 'T-CAP', '2026-01-02', '2026-01-02', '2026-01-02')"
    )
    proposals = [("P-OF-TASK", "T-EVENT"), ("P-OWN-EVENT", "T-NONE"), ("P-NOTHING", "T-NONE")]
    for proposal_id, task_id in proposals:
        con.execute(
            "INSERT INTO proposals (id, task_id, agent_id, title, summary_md, patch_path)"
            " VALUES (?, ?, 'implementer-1', 'x', 'x', 'x')",
            (proposal_id, task_id),
        )
    con.commit()
    con.close()


async def test_version_2_file_is_backfilled_from_creation_records(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    version_2_file(path)
    db = await Database.open(path)
    try:
        async with db.read() as r:
            tasks = {t.id: t.run_id for t in await r.all(Task, "SELECT * FROM tasks")}
            proposals = {p.id: p.run_id for p in await r.all(Proposal, "SELECT * FROM proposals")}
            version = await r.scalar("PRAGMA user_version")
    finally:
        await db.close()
    assert version == SCHEMA_VERSION >= 3
    # Never "R-LATEST", the run the old code would have guessed for all of them.
    assert tasks == {"T-EVENT": "R-OLD", "T-REPLACED": "R-1", "T-CAP": "R-1", "T-NONE": ""}
    assert proposals == {"P-OF-TASK": "R-OLD", "P-OWN-EVENT": "R-1", "P-NOTHING": ""}


async def test_new_rows_default_to_no_run_and_reopening_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    version_2_file(path)
    for _ in range(2):
        db = await Database.open(path)
        await db.close()
    con = sqlite3.connect(path)
    try:
        con.execute("INSERT INTO tasks (id, title, body_md) VALUES ('T-NEW', 'x', 'x')")
        assert con.execute("SELECT run_id FROM tasks WHERE id = 'T-NEW'").fetchone() == ("",)
        indexes = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        con.close()
    assert {"idx_tasks_run", "idx_proposals_run"} <= indexes
