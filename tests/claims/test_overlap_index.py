"""The conflict check finds overlapping claims through the resource-id index: for
every pair of a mixed set of resources, what `live_claims_overlapping` returns from the store
equals what the overlap table (`overlaps`) says, so narrowing by id ranges loses nothing."""

from __future__ import annotations

import pytest

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.coordination.claims import ResourceRef, live_claims_overlapping, overlaps, resource_id_for

pytestmark = pytest.mark.anyio

FAR = "2099-01-01T00:00:00.000000000Z"
PAST = "2000-01-01T00:00:00.000000000Z"

# (type, path, symbol): the root, nested directories, look-alike prefixes, files, symbols and a
# resource type without path semantics that still carries a path.
RESOURCES = [
    ("directory", "", ""),
    ("directory", "src", ""),
    ("directory", "src/pkg", ""),
    ("directory", "src2", ""),
    ("file", "src", ""),
    ("file", "src/a.py", ""),
    ("file", "src/pkg/b.py", ""),
    ("file", "src2/a.py", ""),
    ("file", "srcx.py", ""),
    ("symbol", "src/a.py", "f"),
    ("symbol", "src/a.py", "g"),
    ("symbol", "src/a.pyx", "f"),
    ("symbol", "src/pkg/b.py", "K.m"),
    ("test", "src/a.py", ""),
]


def _ref(kind: str, path: str, symbol: str) -> ResourceRef:
    return ResourceRef(resource_id_for(kind, path, symbol), kind, path, symbol)


async def test_indexed_candidates_match_the_overlap_table(runtime: Runtime) -> None:
    refs = [_ref(*r) for r in RESOURCES]
    async with runtime.db.write() as tx:
        for i, ref in enumerate(refs):
            await tx.insert(
                "resources",
                {"id": ref.id, "type": ref.type, "path": ref.path, "symbol": ref.symbol, "metadata_json": "{}"},
            )
            for suffix, status, expires in (
                ("live", "active", FAR),
                ("old", "active", PAST),
                ("gone", "released", FAR),
            ):
                await tx.insert(
                    "claims",
                    {
                        "id": f"C-{i:02d}-{suffix}",
                        "resource_id": ref.id,
                        "agent_id": "implementer-1",
                        "task_id": "T-1",
                        "claim_type": "write",
                        "status": status,
                        "expires_at": expires,
                    },
                )
    now = clock.now()
    async with runtime.db.read() as r:
        for ref in refs:
            found = sorted(claim.id for claim, _ in await live_claims_overlapping(r, ref, now))
            expected = sorted(f"C-{i:02d}-live" for i, other in enumerate(refs) if overlaps(ref, other))
            assert found == expected, ref
    # The root directory overlaps every path resource; the other type only itself.
    assert sum(overlaps(refs[0], other) for other in refs) == len(refs) - 1


async def test_the_own_claim_lookup_goes_through_the_resource_index(runtime: Runtime) -> None:
    """A claimant's own live claim on the resource is found through the resource's index, not by
    scanning every live claim (a claim's cost would grow with the claims held)."""
    from roundtable.services.coordination.claims.acquire import _SAME_CLAIM

    async with runtime.db.read() as r:
        plan = " ".join(
            str(row[3]) for row in await r.fetchall(f"EXPLAIN QUERY PLAN {_SAME_CLAIM}", ("a", "b", "c", "d"))
        )
    assert "idx_claims_resource_status" in plan, plan
