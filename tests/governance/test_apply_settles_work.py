"""An apply settles the work it finishes (reference weakness 70: "claims are not released and
the task is not updated"): the claims that covered the patch are released, the task is completed
once none of its proposals is open; a rollback makes the task open work again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from tests.governance.conftest import AUTHOR, Flow, make_patch

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")


async def _events(rt: Runtime, kind: str) -> list[dict]:  # type: ignore[type-arg]
    async with rt.db.read() as r:
        rows = await r.fetchall("SELECT actor_id, payload_json FROM events WHERE type = ? ORDER BY id", (kind,))
    return [{"actor": row[0], **json.loads(row[1])} for row in rows]


async def test_apply_releases_the_covering_claims_and_completes_the_task(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(PATCH)
    other = await flow.claim("README.txt")  # the author's claim on a file the patch does not touch
    out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    tx_id = out["transaction"]["id"]

    released = await _events(flow.rt, "claim.released")
    assert [(e["reason"], e["actor"]) for e in released] == [(f"applied in {tx_id}", "operator")]
    async with flow.rt.db.read() as r:
        statuses = dict(await r.fetchall("SELECT resource_id, status FROM claims WHERE agent_id = ?", (AUTHOR,)))
        task_status = await r.scalar("SELECT status FROM tasks WHERE id = ?", (flow.task_id,))
    assert statuses[other["claim"]["resource_id"]] == "active"  # not the patch's: kept
    assert sorted(statuses.values()) == ["active", "released"]
    assert task_status == "completed"
    (updated,) = await _events(flow.rt, "task.updated")
    assert (updated["status"], updated["previous_status"]) == ("completed", "open")

    await flow.call("patch.rollback", {"transaction_id": tx_id, "reason_md": "not yet"})
    async with flow.rt.db.read() as r:
        assert await r.scalar("SELECT status FROM tasks WHERE id = ?", (flow.task_id,)) == "in_progress"


async def test_a_task_with_another_open_proposal_stays_open(flow: Flow, repo: Path) -> None:
    first = await flow.ready(PATCH)
    await flow.claim("README.txt")
    await flow.propose(make_patch("README.txt", "hello", "hello, world"))
    await flow.call("patch.apply", {"proposal_id": first["id"]})
    async with flow.rt.db.read() as r:
        assert await r.scalar("SELECT status FROM tasks WHERE id = ?", (flow.task_id,)) == "open"
