"""Shared pieces of the fault tests: a git project, database and tree fingerprints, a proposal
made ready for apply (every default gate met), and the owner subprocess from `bench.ownerproc`."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.store.schema import TABLES
from roundtable.tools.context import OPERATOR, Caller
from tests.helpers import agent, git
from tests.helpers import make_git_project as _make_git_project

AUTHOR = "implementer-1"
REVIEWERS = ("reviewer-1", "reviewer-2")
# Rows a refused call may still leave on purpose (a refused claim records why).
ALLOWED_ON_REFUSAL = frozenset({"claim_contentions"})


def make_git_project(root: Path, files: dict[str, str]) -> Path:
    """The shared git project, with three reviewers configured: votes count only from registered
    agents (`ready_proposal` registers them)."""
    config = root / ".roundtable" / "config.yaml"
    text = config.read_text(encoding="utf-8")
    old = "  reviewers:\n    count: 1\n"
    if old in text:
        config.write_text(text.replace(old, "  reviewers:\n    count: 3\n"), encoding="utf-8")
    return _make_git_project(root, files)


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
    await sync_agents(rt)  # the configured reviewers become registered voters
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


# --- real git as the oracle, policies, gates without votes ----------------------------

PERMISSIVE_PATCHES = (
    "```yaml\npatches:\n  allow_symlinks: true\n  allow_submodules: true\n  allow_mode_changes: true\n```\n"
)
NO_TESTS_GATE = "```yaml\nconsensus:\n  default:\n    tests_required: false\n```\n"


def add_policy(root: Path, *blocks: str) -> None:
    """Append yaml blocks to the project's policy file (they merge over what is there)."""
    path = root / "POLICIES.ROUNDTABLE.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + "\n".join(blocks), encoding="utf-8")


def git_touches(root: Path, patch: str) -> set[str] | None:
    """What a real `git apply` changes: apply to a fresh clone of `root`'s HEAD and list every
    path that differs (no rename detection: a rename is its two paths). None if git refuses."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rt-oracle-") as tmp:
        clone = Path(tmp) / "clone"
        git(root, "clone", "-q", str(root), str(clone))
        done = subprocess.run(["git", "apply", "-"], cwd=clone, input=patch.encode(), capture_output=True)
        if done.returncode != 0:
            return None
        git(clone, "add", "-A")
        out = git(clone, "diff", "--cached", "--name-only", "--no-renames", "-z", "HEAD")
        return {p for p in out.split("\0") if p}


async def approve_for_apply(rt: Runtime, proposal_id: str) -> None:
    """Gates without votes: the proposal must be high-risk (risk or path); the operator approves
    it and the security scan reviews it."""
    req = await rt.call(
        "human.request_approval",
        {"subject": "apply", "reason_md": "please", "proposal_id": proposal_id},
        agent(AUTHOR),
    )
    await rt.call(
        "human.request_approval",
        {
            "subject": "apply",
            "reason_md": "please",
            "approval_id": req["approval"]["id"],
            "proposal_id": proposal_id,
            "status": "approved",
        },
    )
    await rt.call("security.review", {"proposal_id": proposal_id})
