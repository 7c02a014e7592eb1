"""`patch.validate`: one report over every gate of a proposal's current revision (spec §3.5).

The dry run (`git apply --check` against the tree) runs outside any database transaction; the
gates are then read from one snapshot. Unlike the reference, validation changes nothing but
the event log (`patch.validated`): it never suspends claims or rewrites resource hashes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.errors import NotFound, ToolError
from roundtable.services import git
from roundtable.services.evidence import event_run_id
from roundtable.services.gates import evaluate
from roundtable.services.patches import ParsedPatch, parse_patch, read_patch
from roundtable.services.policy import ensure_policy
from roundtable.services.proposals import links, proposal_dict
from roundtable.store.records import Proposal

if TYPE_CHECKING:
    from roundtable.runtime import Runtime


async def validate(runtime: Runtime, proposal_id: str, *, actor: str) -> dict[str, Any]:
    root = runtime.root
    policy = ensure_policy(runtime.policy)
    async with runtime.db.read() as r:
        proposal = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
    if proposal is None:
        raise NotFound("proposal", proposal_id)
    parsed: ParsedPatch | None = None
    parse_error = ""
    patch_exists = False
    dry_run: str | None = None
    if proposal.current_revision:
        try:
            text = await asyncio.to_thread(read_patch, root, proposal.current_revision)
            patch_exists = True
            parsed = await asyncio.to_thread(parse_patch, text, root)
        except ToolError as exc:
            parse_error = str(exc)
        if parsed is not None:
            dry_run = await git.apply_check(root, parsed.text.encode("utf-8"))
    async with runtime.db.read() as r:
        current = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
        assert current is not None
        if current.current_revision != proposal.current_revision:
            raise ToolError(f"proposal {proposal_id} was revised during validation; validate again")
        report = await evaluate(r, root, policy, current, clock.now(), dry_run_error=dry_run, parsed=parsed)
        resources = [link.to_dict() for link in await links(r, proposal_id)]
    claims = report.gate("claims")
    security = report.gate("security")
    tests = report.gate("tests")
    claim_error = "" if claims is None or claims.passed else claims.reason
    valid = patch_exists and parsed is not None and not claim_error and dry_run == ""
    result = report.policy
    out: dict[str, Any] = {
        "proposal": proposal_dict(current),
        "proposal_resources": resources,
        "revision": current.current_revision,
        "revision_number": current.revision_number,
        "patch_exists": patch_exists,
        "patch_files": list(parsed.touched) if parsed else [],
        "patch_parse_error": parse_error,
        "claims_valid": not claim_error and parsed is not None,
        "claim_error": claim_error,
        "stale_claims": [],
        "resource_coverage": not claim_error,
        "resource_error": claim_error,
        "temp_apply_error": dry_run or "",
        "policy": result.to_dict() if result else None,
        "votes": [v.to_dict() for v in report.votes],
        "human_approvals": [a.to_dict() for a in report.approvals],
        "human_approval": report.approval.to_dict() if report.approval else None,
        "human_approval_applied": report.approval is not None,
        "security_reviews": [s.to_dict() for s in report.reviews],
        "security_review": report.review.to_dict() if report.review else None,
        "security_review_required": bool(result and result.security_review_required),
        "security_review_satisfied": bool(security and security.passed),
        "tests_required": bool(result and result.tests_required),
        "tests_satisfied": bool(tests and tests.passed),
        "test_runs": [t.to_dict() for t in report.test_runs],
        "valid": valid,
        "applicable": report.ok,
        "gates": [g.to_dict() for g in report.gates],
    }
    async with runtime.db.write(tool="patch.validate") as tx:
        await tx.append_event(
            await event_run_id(tx),
            "patch.validated",
            {
                "proposal_id": proposal_id,
                "revision": current.current_revision,
                "valid": valid,
                "applicable": report.ok,
                "failed_gates": [g.name for g in report.failures()],
            },
            actor_id=actor,
            task_id=current.task_id,
        )
    return out
