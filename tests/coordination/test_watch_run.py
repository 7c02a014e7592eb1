"""`table.watch` (and `roundtable watch --run`) with a run lists that run's rows — blocked tasks,
open proposals, approvals, transactions — and those of no run, never another run's."""

from __future__ import annotations

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination import runs

pytestmark = pytest.mark.anyio


async def test_watch_of_a_run_lists_only_its_rows(runtime: Runtime, run_id: str) -> None:
    other = (await runs.create_run(runtime, "other", run_id="RUN-other")).id
    async with runtime.db.write() as tx:
        for run, suffix in ((run_id, "mine"), (other, "theirs"), ("", "nobody")):
            await tx.insert(
                "tasks", {"id": f"T-{suffix}", "title": suffix, "body_md": "b", "status": "blocked", "run_id": run}
            )
            await tx.insert(
                "proposals",
                {
                    "id": f"P-{suffix}",
                    "task_id": f"T-{suffix}",
                    "agent_id": "implementer-1",
                    "title": suffix,
                    "summary_md": "s",
                    "patch_path": "x.diff",
                    "status": "pending",
                    "run_id": run,
                },
            )
            await tx.insert(
                "human_approvals",
                {
                    "id": f"H-{suffix}",
                    "proposal_id": f"P-{suffix}",
                    "subject": suffix,
                    "reason_md": "r",
                    "status": "requested",
                },
            )
    page = await runtime.call("table.watch", {"run_id": run_id})
    assert [t["id"] for t in page["blocked_tasks"]] == ["T-mine", "T-nobody"]
    assert [p["id"] for p in page["pending_proposals"]] == ["P-mine", "P-nobody"]
    assert [a["id"] for a in page["required_approvals"]] == ["H-mine", "H-nobody"]
    everything = await runtime.call("table.watch", {})
    assert {t["id"] for t in everything["blocked_tasks"]} == {"T-mine", "T-theirs", "T-nobody"}
