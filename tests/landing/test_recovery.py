"""A committed landing survives a crash like any apply: the owner's start completes an apply
interrupted after `git apply` and moves the branch onto the landing commit; one interrupted
before anything was written is marked failed with the branch where it was."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from roundtable.services.applying.recovery import recover_interrupted
from tests.faults.failpoints import CRASH_EXIT, crash_argv
from tests.helpers import git
from tests.landing.conftest import opened
from tests.support.governance import Flow, make_patch

pytestmark = pytest.mark.anyio
PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")


def crash(repo: Path, point: str, proposal_id: str) -> None:
    args = json.dumps({"proposal_id": proposal_id, "mode": "commit"})
    proc = subprocess.run(
        crash_argv(point, "mcp", "call", "--root", str(repo), "--tool", "patch.apply", "--args", args),
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == CRASH_EXIT, proc.stderr.decode()


async def test_crash_after_the_files_completes_the_commit(repo: Path, origin: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    async with opened(repo) as rt:
        proposal = await Flow(rt).ready(PATCH)
    crash(repo, "apply:files", proposal["id"])
    assert git(repo, "rev-parse", "HEAD").strip() == base  # the branch had not moved yet
    async with opened(repo) as rt:
        lines = await recover_interrupted(rt)
        async with rt.db.read() as r:
            tx = await r.fetchone("SELECT status, metadata_json FROM transactions")
    assert "completed" in lines[0] and tx[0] == "applied"
    landed = json.loads(tx[1])["landing"]["commit"]
    assert git(repo, "rev-parse", "HEAD").strip() == landed
    assert git(repo, "rev-parse", "HEAD~1").strip() == base
    assert git(repo, "status", "--porcelain").strip() == ""  # tree, index and branch agree


async def test_crash_after_the_intent_leaves_the_branch_alone(repo: Path, origin: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    async with opened(repo) as rt:
        proposal = await Flow(rt).ready(PATCH)
    crash(repo, "apply:intent", proposal["id"])
    async with opened(repo) as rt:
        await recover_interrupted(rt)
        async with rt.db.read() as r:
            assert await r.scalar("SELECT status FROM transactions") == "failed"
    assert git(repo, "rev-parse", "HEAD").strip() == base
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
