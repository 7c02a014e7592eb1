"""A seeded coordination table for console tests: rows written directly, with fixed times."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.sessions import records as sessions

FROZEN_NS = clock.parse("2026-01-15T09:30:00Z")
RUN_ID = "RUN-demo"

DIFF = """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -5,2 +5,6 @@ def add(a: int, b: int) -> int:
 def sub(a: int, b: int) -> int:
     return a - b
+
+
+def mul(a: int, b: int) -> int:
+    return a * b
"""
REVISION = hashlib.sha256(DIFF.encode()).hexdigest()


def at(seconds: float) -> str:
    """A stamp `seconds` after the frozen instant (negative: before)."""
    return clock.format_ns(FROZEN_NS + int(seconds * 1e9))


def frozen_clock() -> int:
    return FROZEN_NS


async def seed(runtime: Runtime, *, claims: int = 4, events: int = 8) -> None:
    await sync_agents(runtime)  # the configured agents, as an owner registers them
    root = runtime.root
    patches = root / ".roundtable" / "patches"
    patches.mkdir(parents=True, exist_ok=True)
    (patches / f"{REVISION}.diff").write_text(DIFF, encoding="utf-8")
    async with runtime.db.write() as tx:
        await tx.insert(
            "runs",
            {
                "id": "RUN-old",
                "goal": "First try",
                "status": "completed",
                "started_at": at(-7200),
                "ended_at": at(-3600),
            },
        )
        await tx.insert(
            "runs", {"id": RUN_ID, "goal": "Improve the calculator", "status": "active", "started_at": at(-600)}
        )
        await tx.insert(
            "tasks",
            {
                "id": "T-1",
                "title": "Add mul()",
                "body_md": "Add a mul function.",
                "status": "in_progress",
                "created_at": at(-590),
                "updated_at": at(-590),
            },
        )
        await tx.insert(
            "proposals",
            {
                "id": "P-1",
                "task_id": "T-1",
                "agent_id": "implementer-1",
                "title": "Add mul() to calc.ops",
                "summary_md": "Adds multiplication.",
                "patch_path": f".roundtable/patches/{REVISION}.diff",
                "status": "in_review",
                "current_revision": REVISION,
                "revision_number": 1,
                "vote_state": "passed",
                "policy_state": "pending",
                "approval_state": "pending",
                "created_at": at(-300),
                "updated_at": at(-200),
            },
        )
        await tx.insert(
            "proposals",
            {
                "id": "P-0",
                "task_id": "T-1",
                "agent_id": "implementer-2",
                "title": "Rewrite everything",
                "summary_md": "Too big.",
                "patch_path": "",
                "status": "rejected",
                "vote_state": "failed",
                "policy_state": "failed",
                "approval_state": "denied",
                "created_at": at(-500),
                "updated_at": at(-450),
            },
        )
        await tx.insert(
            "patch_revisions",
            {
                "proposal_id": "P-1",
                "number": 1,
                "sha256": REVISION,
                "patch_path": f".roundtable/patches/{REVISION}.diff",
                "agent_id": "implementer-1",
                "created_at": at(-300),
            },
        )
        for i, (agent, vote) in enumerate((("reviewer-1", "approve"), ("security", "approve"), ("tester", "reject"))):
            await tx.insert(
                "votes",
                {
                    "id": f"V-{i}",
                    "proposal_id": "P-1",
                    "agent_id": agent,
                    "vote": vote,
                    "revision": REVISION,
                    "created_at": at(-250 + i),
                },
            )
        await tx.insert(
            "human_approvals",
            {
                "id": "H-1",
                "proposal_id": "P-1",
                "subject": "Apply P-1 (touches calc/ops.py)",
                "reason_md": "Policy asks a human for calc/.",
                "status": "requested",
                "requested_by": "chair-1",
                "revision": REVISION,
                "created_at": at(-120),
                "updated_at": at(-120),
            },
        )
        await tx.insert(
            "human_approvals",
            {
                "id": "H-0",
                "proposal_id": "P-0",
                "subject": "Apply P-0",
                "reason_md": "Large change.",
                "status": "denied",
                "requested_by": "chair-1",
                "decided_by": "operator",
                "created_at": at(-480),
                "updated_at": at(-460),
            },
        )
        await tx.insert(
            "transactions",
            {
                "id": "TX-1",
                "proposal_id": "P-9",
                "run_id": "RUN-old",
                "revision": "ab" * 32,
                "before_git_hash": "1" * 40,
                "after_git_hash": "2" * 40,
                "status": "applied",
                "applied_by": "operator",
                "applied_at": at(-3700),
                "created_at": at(-3700),
            },
        )
        for i in range(claims):
            resource = "file:calc/ops.py" if i < 2 else f"file:src/module_{i:05d}.py"
            await tx.insert(
                "claims",
                {
                    "id": f"C-{i:06d}",
                    "resource_id": resource,
                    "agent_id": f"implementer-{i % 3 + 1}",
                    "task_id": "T-1",
                    "claim_type": "write" if i else "read",
                    "status": "active" if i % 7 != 6 else "released",
                    "expires_at": at(900 - i),
                    "fence": i + 1,
                    "created_at": at(-400 + i),
                },
            )
        await tx.insert(
            "claim_contentions",
            {
                "id": "CC-1",
                "resource_id": "file:calc/ops.py",
                "claimant_id": "implementer-3",
                "challenged_claim_id": "C-000001",
                "status": "open",
                "reason": "write conflict",
                "created_at": at(-100),
            },
        )
        types = ["task.created", "claim.granted", "proposal.created", "vote.cast", "human.approval_requested"]
        rows: list[tuple[Any, ...]] = []
        for i in range(events):
            rows.append((RUN_ID, types[i % len(types)], f"agent-{i % 4}", "T-1", json.dumps({"n": i}), at(-590 + i)))
        await tx.executemany(
            "INSERT INTO events (run_id, type, actor_id, task_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        request_id = await tx.execute(
            "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)",
            (
                RUN_ID,
                "agent.turn_requested",
                "implementer-1",
                json.dumps({"agent_id": "implementer-1", "reason_md": "attach revised patch"}),
                at(-110),
            ),
        )
        await tx.execute(
            "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)",
            (
                RUN_ID,
                "agent.turn_scheduled",
                "chair-1",
                json.dumps({"agent_id": "implementer-1", "request_event_id": request_id}),
                at(-100),
            ),
        )
        await tx.execute(
            "INSERT INTO events (run_id, type, actor_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?)",
            (
                RUN_ID,
                "agent.turn_requested",
                "reviewer-1",
                json.dumps({"agent_id": "reviewer-1", "reason_md": "review P-1"}),
                at(-30),
            ),
        )


LIVE_SESSION = "S-live"
FAILED_SESSION = "S-failed"
LOG_LINES = (
    "[scripted] implementer-1 starting on T-1",
    "[scripted] resource.claim file:calc/ops.py -> granted (fence 2)",
    "[scripted] token ROUNDTABLE_MCP_TOKEN=[REDACTED]",
    "[scripted] proposal.attach_patch P-1 (revision 2)",
)


async def seed_live_session(runtime: Runtime) -> None:
    """implementer-1 at work: a live session with a capability for T-1, a log, and a claim it
    just took; tester-1 with one failed session."""
    async with runtime.db.write() as tx:
        for sid, agent, status in ((LIVE_SESSION, "implementer-1", "active"), (FAILED_SESSION, "tester-1", "active")):
            draft = sessions.SessionDraft(
                id=sid, agent_id=agent, run_id=RUN_ID, adapter="scripted", working_directory="/w", status=status
            )
            await sessions.register(tx, draft)
        await sessions.end(tx, FAILED_SESSION, status="failed")
        exited = json.dumps({"exit_code": 1, "exit_reason": "process_exited"})
        await tx.update("agent_sessions", {"id": FAILED_SESSION}, {"metadata_json": exited})
        for sid, started, seen, ended in ((LIVE_SESSION, -240, -5, None), (FAILED_SESSION, -900, -880, at(-880))):
            values = {"started_at": at(started), "last_seen_at": at(seen), "ended_at": ended}
            await tx.update("agent_sessions", {"id": sid}, values)
        await tx.insert(
            "session_capabilities",
            {
                "id": "CAP-live",
                "token_sha256": "e" * 64,
                "session_id": LIVE_SESSION,
                "agent_id": "implementer-1",
                "run_id": RUN_ID,
                "role": "implementer",
                "task_id": "T-1",
                "issued_at": at(-240),
                "expires_at": at(600),
                "max_expires_at": at(3600),
                "created_at": at(-240),
            },
        )
        await tx.execute(
            "INSERT INTO events (run_id, type, actor_id, task_id, payload_json, created_at, principal, transport)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                RUN_ID,
                "claim.granted",
                "implementer-1",
                "T-1",
                json.dumps({"claim_id": "C-000001"}),
                at(-42),
                "agent:implementer-1",
                "session",
            ),
        )
    log = runtime.root / ".roundtable" / "logs" / "sessions" / f"{LIVE_SESSION}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(line + "\n" for line in LOG_LINES), encoding="utf-8")


async def bulk(runtime: Runtime, *, claims: int = 0, events: int = 0, batch: int = 20000) -> None:
    """Many rows fast (benchmarks, large-list tests)."""
    for start in range(0, claims, batch):
        rows = [
            (
                f"C-bulk-{i:08d}",
                f"file:src/pkg_{i % 500:03d}/mod_{i:08d}.py",
                f"agent-{i % 9}",
                "T-1",
                "write",
                "active",
                at(3600),
                i + 10,
            )
            for i in range(start, min(start + batch, claims))
        ]
        async with runtime.db.write() as tx:
            await tx.executemany(
                "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status, expires_at, fence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    for start in range(0, events, batch):
        erows = [
            (RUN_ID, "bulk.event", f"agent-{i % 9}", "T-1", json.dumps({"i": i}), at(i / 1000))
            for i in range(start, min(start + batch, events))
        ]
        async with runtime.db.write() as tx:
            await tx.executemany(
                "INSERT INTO events (run_id, type, actor_id, task_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                erows,
            )


def patch_path(root: Path) -> Path:
    return root / ".roundtable" / "patches" / f"{REVISION}.diff"
