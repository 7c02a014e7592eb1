"""Two applies of proposals touching one file cannot both succeed — in one process and
through two runtimes (separate SQLite connections, as two processes would have)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from tests.governance.conftest import Flow, make_patch

pytestmark = pytest.mark.anyio


async def two_ready(flow: Flow) -> tuple[str, str]:
    await flow.task()
    await flow.claim("src/app.py")
    a = await flow.propose(make_patch("src/app.py", "print('v1')", "print('A')"))
    b = await flow.propose(make_patch("src/app.py", "print('v1')", "print('B')"))
    for p in (a, b):
        await flow.approve_votes(p["id"])
        await flow.test_run(p["id"])
    return a["id"], b["id"]


def outcome(results: list[object]) -> tuple[int, list[str]]:
    ok = sum(1 for r in results if isinstance(r, dict))
    errors = [str(r) for r in results if isinstance(r, BaseException)]
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, ToolError):
            raise r
    return ok, errors


async def test_concurrent_applies_same_runtime(flow: Flow, repo: Path) -> None:
    a, b = await two_ready(flow)
    results = await asyncio.gather(
        flow.call("patch.apply", {"proposal_id": a}),
        flow.call("patch.apply", {"proposal_id": b}),
        return_exceptions=True,
    )
    ok, errors = outcome(list(results))
    assert ok == 1, errors
    assert (repo / "src" / "app.py").read_text() in ("print('A')\n", "print('B')\n")
    async with flow.rt.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM transactions WHERE status = 'applied'") == 1


async def test_concurrent_applies_two_runtimes(flow: Flow, repo: Path) -> None:
    a, b = await two_ready(flow)
    other = await Runtime.open(repo)
    try:
        results = await asyncio.gather(
            flow.call("patch.apply", {"proposal_id": a}),
            other.call("patch.apply", {"proposal_id": b}),
            return_exceptions=True,
        )
    finally:
        await other.close()
    ok, errors = outcome(list(results))
    assert ok == 1, errors
    winner = "A" if isinstance(results[0], dict) else "B"
    assert (repo / "src" / "app.py").read_text() == f"print('{winner}')\n"
    # The loser can never be applied over the winner's change.
    loser = b if winner == "A" else a
    with pytest.raises(ToolError):
        await flow.call("patch.apply", {"proposal_id": loser})
