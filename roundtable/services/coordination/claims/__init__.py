"""The claims service: resource identity, overlap, the mode conflict matrix, and claim lifecycle.

A claim is an advisory lease an agent takes on a file, directory or symbol before proposing a
change. What we do differently from the reference:

- the conflict check and the acquisition run in one write transaction (`acquire` takes a `Tx`),
  so two concurrent claimants can never both win; each grant gets a fencing number
  (`claims.fence`, strictly increasing across the project);
- a claim past `expires_at` is expired *now*, on every read: it never conflicts, never covers
  a patch, and listings report it as `expired` even before a sweep writes that status;
- an agent's own claims never conflict with its new claims; re-claiming the same resource in
  the same mode extends the existing claim (`claim.extended`) instead of failing;
- only the claim's owner or the operator may release it, and releasing a claim that is no
  longer active changes nothing;
- a refused claim changes nothing, except that its contention rows are recorded afterwards in
  their own transaction (`record_contentions`), with the *requesting* agent as `claimant_id`.

Timestamps are ours (UTC, nine fractional digits, `Z`), so SQL string comparison is time order.

The package holds one job per module — `model` (vocabulary and pure rules), `queries` (reads and
coverage), `acquire` (conflict check and grant), `transitions` (release, revoke, suspend, expire)
and `reconcile` (stale claims) — and this module re-exports their public names, so callers
import `roundtable.services.coordination.claims` as one service. Two modules run their own
transactions and are imported by name: `grant` (a grant and its contentions) and `claiming`
(`resource.claim`, from its arguments to grants).
"""

from __future__ import annotations

from roundtable.services.coordination.claims.acquire import (
    ClaimConflict,
    ClaimRequest,
    Granted,
    acquire,
    record_contentions,
)
from roundtable.services.coordination.claims.model import (
    DEFAULT_TTL_SECONDS,
    FENCE_COUNTER,
    MAX_TTL_SECONDS,
    MODES,
    WRITE_MODES,
    ResourceRef,
    check_resource_id,
    effective,
    expiry_after,
    modes_conflict,
    overlaps,
    parse_resource_id,
    resource_id_for,
    within,
)
from roundtable.services.coordination.claims.queries import (
    covering_write_claims,
    expired_note,
    get_claim,
    list_claims,
    live_claims_overlapping,
    own_write_claims,
    readable_by_claim,
    search_resources,
    symbol_write_claims,
    unclaimed_resources,
)
from roundtable.services.coordination.claims.reconcile import STALE_REASON, ReconcileArgs, reconcile
from roundtable.services.coordination.claims.transitions import RevokeArgs, expire_due, revoke, transition

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "FENCE_COUNTER",
    "MAX_TTL_SECONDS",
    "MODES",
    "STALE_REASON",
    "WRITE_MODES",
    "ClaimConflict",
    "ClaimRequest",
    "Granted",
    "ReconcileArgs",
    "ResourceRef",
    "RevokeArgs",
    "acquire",
    "check_resource_id",
    "covering_write_claims",
    "effective",
    "expire_due",
    "expired_note",
    "expiry_after",
    "get_claim",
    "list_claims",
    "live_claims_overlapping",
    "modes_conflict",
    "overlaps",
    "own_write_claims",
    "parse_resource_id",
    "readable_by_claim",
    "reconcile",
    "record_contentions",
    "resource_id_for",
    "revoke",
    "search_resources",
    "symbol_write_claims",
    "transition",
    "unclaimed_resources",
    "within",
]
