"""`make run`'s demo end to end, offline: the scripted implementer proposes `mul()`, and the
demo's `make test` — which already expects `mul()` — fails on the base tree and passes on the
proposal's revision in the sandbox (what the console's `T` key runs)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundtable import chair
from roundtable.demo import workspace as demo
from roundtable.demo.team import start_demo_agents
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.services.coordination.agents import sync_agents
from roundtable.store.records import Proposal
from roundtable.tools.context import OPERATOR

pytestmark = pytest.mark.anyio


@pytest.fixture
def demo_root(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    demo.prepare(root)
    return root


async def test_the_demo_tests_mul_on_the_revision(demo_root: Path) -> None:
    assert "mul(3, 4)" in (demo_root / "tests" / "test_ops.py").read_text()
    rt = await Runtime.open(demo_root)
    try:
        suggested = await rt.call("test.suggest", {}, OPERATOR)
        assert suggested["commands"] == ["make test"]
        base = await rt.call("test.run", {"command": "make test"}, OPERATOR)
        assert base["test_run"]["status"] == "failed" and "cannot import name 'mul'" in base["log"]

        await sync_agents(rt)  # as the owner does when it starts
        run = await runs.create_run(rt, "Improve the calculator")
        team = await start_demo_agents(rt, run.id)
        try:
            proposal = None
            for _ in range(600):
                await chair.tick(rt, run.id)  # the console's owner hosts the Chair
                async with rt.db.read() as r:
                    proposal = await r.one(Proposal, "SELECT * FROM proposals ORDER BY created_at LIMIT 1")
                if proposal is not None and proposal.current_revision:
                    break
                await asyncio.sleep(0.1)
            assert proposal is not None, "the scripted implementer made no proposal"
        finally:
            await team.stop()
        out = await rt.call("test.run", {"command": "make test", "proposal_id": proposal.id}, OPERATOR)
        assert out["test_run"]["status"] == "passed", out["log"]
        assert "Ran 3 tests" in out["log"] and out["test_run"]["sandbox"] in ("bwrap", "landlock")
        assert "def mul" not in (demo_root / "calc" / "ops.py").read_text()  # the tree is untouched
    finally:
        await rt.close()
