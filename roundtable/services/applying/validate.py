"""`patch.validate`: one report over every gate of a proposal's current revision.

The stored patch is parsed as git reads it (and cross-checked with `git apply --numstat
--summary`); the dry run (`git apply --check` against the tree) runs outside any database
transaction; the gates are then read from one snapshot.

Stale claims (the reference's step 1, narrowed): the author's live write/exclusive claims that
bear on this proposal — on a linked resource, or covering a touched path — are re-hashed; one
whose resource changed since it was claimed is suspended (`claim.suspended`, reason `base hash
changed`), reported in `stale_claims`, and makes the report invalid (`stale claim base hash:
<resource id>`). The author's unrelated claims are left alone (the reference suspended all of
them, silently).

Stale base: a proposal made from a workspace records the workspace's base tree
(`base_revision`); a touched path whose content in the working tree is no longer the base's is
listed in `stale_base` and makes the report invalid (`base_error`) until the author brings the
workspace onto the new tree (`workspace.sync`) and proposes again. The `patch.validated` event goes to the proposal's run unless the call names one
(`services.run_scope`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.domain import EventType
from roundtable.errors import NotFound, ToolError
from roundtable.services.coordination import claims as claims_service
from roundtable.services.governance.gates import evaluate
from roundtable.services.governance.proposals import links, proposal_dict
from roundtable.services.repository import git
from roundtable.services.repository.patches import (
    ParsedPatch,
    allowances,
    git_cross_check,
    parse_patch,
    read_patch,
    tree_problems,
)
from roundtable.services.run_scope import NO_HINT, RunHint, resolve
from roundtable.services.sessions import usage
from roundtable.services.workspaces import worktrees as workspaces
from roundtable.store.db import Reader
from roundtable.store.records import Claim, Proposal

if TYPE_CHECKING:
    from roundtable.services.project import Project


async def _bearing_claims(r: Reader, proposal: Proposal, parsed: ParsedPatch | None, now: str) -> list[str]:
    """Ids of the author's live write/exclusive claims on a linked resource or overlapping a
    touched path (one query for the claims, the overlap decided here)."""
    linked = {link.resource_id for link in await links(r, proposal.id)}
    touched = [claims_service.ResourceRef(f"file:{path}", "file", path) for path in (parsed.touched if parsed else ())]
    ids: list[str] = []
    for claim, res in await claims_service.own_write_claims(r, proposal.agent_id, now):
        ref = claims_service.ResourceRef.of(res)
        if res.id in linked or any(claims_service.overlaps(ref, t) for t in touched):
            ids.append(claim.id)
    return ids


async def validate(runtime: Project, proposal_id: str, *, actor: str, runs: RunHint = NO_HINT) -> dict[str, Any]:
    root = runtime.root
    policy = runtime.policy
    async with runtime.db.read() as r:
        proposal = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
    if proposal is None:
        raise NotFound("proposal", proposal_id)
    parsed: ParsedPatch | None = None
    parse_error = ""
    patch_exists = False
    dry_run: str | None = None
    allow = allowances(policy)
    if proposal.current_revision:
        try:
            text = await asyncio.to_thread(read_patch, root, proposal.current_revision)
            patch_exists = True
            parsed = await asyncio.to_thread(parse_patch, text, root, allow)
            await git_cross_check(root, parsed)
        except ToolError as exc:
            parse_error = str(exc)
            parsed = None
        if parsed is not None:
            problems = await asyncio.to_thread(tree_problems, root, parsed, allow)
            dry_run = problems[0] if problems else await git.apply_check(root, parsed.text.encode("utf-8"))
    stale_base: list[str] = []
    if parsed is not None and proposal.base_revision:
        stale_base = await workspaces.stale_paths(root, proposal.base_revision, parsed.touched)
    base_error = (
        f"stale base: {stale_base[0]} changed in the tree since the workspace's base; workspace_sync "
        "brings the workspace onto the new tree, then propose again"
        if stale_base
        else ""
    )
    async with runtime.db.read() as r:
        bearing = await _bearing_claims(r, proposal, parsed, clock.now())
        run = await resolve(r, runs, owner=proposal.run_id) if bearing else ""
    stale: list[Claim] = []
    if bearing:
        who = claims_service.ReconcileArgs(agent_id=proposal.agent_id, actor_id=actor or "patch.validate", run_id=run)
        stale = await claims_service.reconcile(runtime.db, root, who, claim_ids=bearing)
    stale_error = f"stale claim base hash: {stale[0].resource_id}" if stale else ""
    async with runtime.db.read() as r:
        current = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
        assert current is not None
        if current.current_revision != proposal.current_revision:
            raise ToolError(f"proposal {proposal_id} was revised during validation; validate again")
        report = await evaluate(r, root, policy, current, clock.now(), dry_run_error=dry_run, parsed=parsed)
        resources = [link.to_dict() for link in await links(r, proposal_id)]
        cost = await usage.by_revision(r, proposal_id)
    claims = report.gate("claims")
    security = report.gate("security")
    tests = report.gate("tests")
    coverage_error = "" if claims is None or claims.passed else claims.reason
    claim_error = stale_error or coverage_error
    valid = patch_exists and parsed is not None and not claim_error and dry_run == "" and not base_error
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
        "stale_claims": [c.to_dict() for c in stale],
        "resource_coverage": not coverage_error,
        "resource_error": coverage_error,
        "temp_apply_error": dry_run or "",
        "stale_base": stale_base,
        "base_error": base_error,
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
        # What the supervised sessions that made and reviewed each revision spent (not a gate:
        # the budgets stop spending before it happens).
        "cost": {
            "by_revision": cost,
            "tokens": sum(c["tokens"] for c in cost),
            "cost_usd": round(sum(c["cost_usd"] for c in cost), 6),
        },
    }
    async with runtime.db.write(tool="patch.validate") as tx:
        await tx.append_event(
            await resolve(tx, runs, owner=current.run_id),
            EventType.PATCH_VALIDATED,
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
