"""Shared pieces of the fault tests: a git project, database and tree fingerprints, a proposal
made ready for apply (every default gate met), and the owner subprocess from `bench.ownerproc`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from roundtable.runtime import Runtime
from roundtable.store.schema import TABLES
from roundtable.tools.context import OPERATOR, Caller
from tests.helpers import agent, git, make_git_project  # noqa: F401 (re-exported)

AUTHOR = "implementer-1"
REVIEWERS = ("reviewer-1", "reviewer-2")
# Rows a refused call may still leave on purpose (DESIGN §4.18: a refused claim records why).
ALLOWED_ON_REFUSAL = frozenset({"claim_contentions"})


async def db_fingerprint(runtime: Runtime, *, skip: frozenset[str] = ALLOWED_ON_REFUSAL) -> dict[str, str]:
    """One hash per table (rows in primary-key order)."""
    out = {}
    async with runtime.db.read() as r:
        for table in TABLES:
            if table in skip:
                continue
            rows = await r.fetchall(f"SELECT * FROM {table} ORDER BY 1")
            out[table] = hashlib.sha256(repr([tuple(row) for row in rows]).encode()).hexdigest()
    return out


def tree_fingerprint(root: Path, *, artefacts: bool = True) -> dict[str, str]:
    """Every file under `root` (not `.git`, not the database files) -> sha256 of its bytes; a
    symlink -> its target. Includes `.roundtable/patches`, rollback and test logs."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if rel.startswith(".roundtable/roundtable.db") or rel.startswith(".roundtable/logs"):
                continue
            if not artefacts and rel.startswith(".roundtable/"):
                continue
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


async def call(rt: Runtime, tool: str, args: dict[str, Any], caller: Caller = OPERATOR) -> dict[str, Any]:
    return await rt.call(tool, args, caller)


def one_line_patch(path: str, old: str, new: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


async def ready_proposal(rt: Runtime, patch: str, paths: list[str]) -> str:
    """Task, write claims on `paths`, proposal, two approvals and a passing test run."""
    task = await call(rt, "task.create", {"title": "Change", "body_md": "Do it."})
    task_id = task["task"]["id"]
    for path in paths:
        await call(
            rt,
            "resource.claim",
            {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": path, "agent_id": AUTHOR},
            agent(),
        )
    out = await call(
        rt,
        "proposal.create",
        {
            "task_id": task_id,
            "agent_id": AUTHOR,
            "title": "Change",
            "summary_md": "Because.",
            "affected_resources": [],
            "risk": "normal",
            "patch": patch,
        },
        agent(),
    )
    proposal_id = str(out["proposal"]["id"])
    for who in REVIEWERS:
        await call(
            rt,
            "vote.cast",
            {"proposal_id": proposal_id, "agent_id": who, "vote": "approve", "reason_md": "ok"},
            agent(who),
        )
    await call(rt, "test.run", {"command": "printf ok", "proposal_id": proposal_id})
    return proposal_id
