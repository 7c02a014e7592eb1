"""Claim reads: listings, resources, the indexed overlap lookup, and coverage (which of an
agent's live claims cover a path, a symbol, or a set of resources).

Every read evaluates expiry against the `now` it is given: a claim past `expires_at` never
conflicts and never covers, even before a sweep writes its status.
"""

from __future__ import annotations

from typing import Any

from roundtable.services.coordination.claims.model import (
    EFFECTIVE_STATUS_SQL,
    ResourceRef,
    ancestors,
    effective,
    norm_path,
    overlaps,
    parse_resource_id,
    resource_from_row,
    resource_id_for,
    within,
)
from roundtable.services.paging import PageRequest, after, after_named
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Claim, Resource


async def get_claim(q: Reader | Tx, claim_id: str, now: str) -> Claim:
    """One claim as of `now` (raises `NotFound`)."""
    claim = await q.get(Claim, claim_id)
    return effective(claim, now)


CLAIM_ORDER = ("c.created_at", "c.id")


async def list_claims(
    q: Reader | Tx,
    now: str,
    *,
    resource_id: str = "",
    agent_id: str = "",
    status: str = "",
    page: PageRequest | None = None,
) -> list[Claim]:
    """Claims matching every non-empty filter (status is the effective one), oldest first. With
    `page`: at most one more than its limit, after its key (`services.paging`)."""
    where = ["1 = 1"]
    params: dict[str, Any] = {"now": now}
    if resource_id:
        where.append("c.resource_id = :resource_id")
        params["resource_id"] = resource_id
    if agent_id:
        where.append("c.agent_id = :agent_id")
        params["agent_id"] = agent_id
    if status:
        where.append(f"({EFFECTIVE_STATUS_SQL}) = :status")
        params["status"] = status
    limit = ""
    if page is not None:
        if page.key is not None:
            after_sql, after_params = after_named(CLAIM_ORDER, page.key)
            where.append(after_sql)
            params.update(after_params)
        limit = f" LIMIT {page.limit + 1}"
    claims = await q.all(
        Claim, f"SELECT c.* FROM claims c WHERE {' AND '.join(where)} ORDER BY {', '.join(CLAIM_ORDER)}{limit}", params
    )
    return [effective(c, now) for c in claims]


async def search_resources(
    q: Reader | Tx, query: str, resource_type: str = "", page: PageRequest | None = None
) -> list[Resource]:
    """Resources whose id, type, path, symbol or language contains `query` (case-insensitive;
    empty matches all), optionally of one exact type, ordered by id. With `page`: at most one
    more than its limit, after its key (`services.paging`)."""
    where: list[str] = []
    params: list[Any] = []
    needle = query.lower()
    if needle:
        fields = ("id", "type", "path", "symbol", "language")
        where.append("(" + " OR ".join(f"instr(lower(coalesce({f}, '')), ?) > 0" for f in fields) + ")")
        params.extend([needle] * len(fields))
    if resource_type:
        where.append("type = ?")
        params.append(resource_type)
    limit = ""
    if page is not None:
        if page.key is not None:
            after_sql, after_params = after(("id",), page.key)
            where.append(after_sql)
            params.extend(after_params)
        limit = f" LIMIT {page.limit + 1}"
    filtered = f" WHERE {' AND '.join(where)}" if where else ""
    return await q.all(Resource, f"SELECT * FROM resources{filtered} ORDER BY id{limit}", params)


def _candidate_ranges(ref: ResourceRef) -> tuple[list[str], list[tuple[str, str]]]:
    """Resource ids (exact, and half-open ranges) of every stored resource that can overlap `ref`.

    Stored path resources carry canonical ids (`resource_id_for`), so each row `overlaps` could
    accept is found through the claims' resource-id index — a claim costs the same with ten or
    ten thousand live claims; `overlaps` still decides exactly.
    """
    exact = [ref.id]
    ranges: list[tuple[str, str]] = []
    if ref.type not in ("file", "symbol", "directory"):
        return exact, ranges
    path = ref.path
    exact.extend(resource_id_for("directory", a) for a in ancestors(path))
    if ref.type in ("file", "directory"):
        exact.append(resource_id_for("file", path))
        ranges.append((f"symbol:{path}#", f"symbol:{path}$"))  # the file's symbols ('$' follows '#')
    if ref.type == "symbol":
        exact.append(resource_id_for("file", path))
        exact.append(resource_id_for("symbol", path, ref.symbol))
    if ref.type == "directory":
        if path:
            for kind in ("directory", "file", "symbol"):
                ranges.append((f"{kind}:{path}/", f"{kind}:{path}0"))  # beneath it ('0' follows '/')
        else:
            for kind in ("directory", "file", "symbol"):
                ranges.append((f"{kind}:", f"{kind};"))  # the root holds every path resource
    return exact, ranges


def overlap_query(ref: ResourceRef, now: str) -> tuple[str, list[Any]]:
    """SQL and parameters selecting the live claims (joined with their resources, columns
    prefixed `r_`) that may overlap `ref`; `overlapping` keeps the ones that do."""
    exact, ranges = _candidate_ranges(ref)
    exact = list(dict.fromkeys(exact))
    parts = [f"SELECT rowid FROM claims WHERE resource_id IN ({', '.join('?' for _ in exact)})"]
    params: list[Any] = list(exact)
    for low, high in ranges:
        parts.append("SELECT rowid FROM claims WHERE resource_id >= ? AND resource_id < ?")
        params.extend([low, high])
    sql = (
        "SELECT c.*, r.id AS r_id, r.type AS r_type, r.path AS r_path, r.symbol AS r_symbol, "
        "r.language AS r_language, r.start_line AS r_start_line, r.end_line AS r_end_line, "
        "r.current_hash AS r_current_hash, r.metadata_json AS r_metadata_json "
        "FROM claims c JOIN resources r ON r.id = c.resource_id "
        f"WHERE c.rowid IN ({' UNION ALL '.join(parts)}) AND +c.status = 'active' AND +c.expires_at > ? "
        "ORDER BY c.created_at, c.id"
    )
    return sql, [*params, now]


def overlapping(ref: ResourceRef, rows: list[Any]) -> list[tuple[Claim, Resource]]:
    """The (claim, resource) pairs among `overlap_query`'s rows whose resource overlaps `ref`."""
    out = []
    for row in rows:
        claim = Claim.from_row(row)
        resource = resource_from_row(row, prefix="r_")
        if overlaps(ref, ResourceRef.of(resource)):
            out.append((claim, resource))
    return out


async def live_claims_overlapping(q: Reader | Tx, ref: ResourceRef, now: str) -> list[tuple[Claim, Resource]]:
    """Active, unexpired claims whose resource overlaps `ref` (with their resources).

    The SQL narrows candidates by path (same id, the path's ancestors, or — for a directory —
    anything beneath it); `overlaps` then decides exactly. Claims whose resource row is missing
    are skipped, as in the reference.
    """
    sql, params = overlap_query(ref, now)
    return overlapping(ref, await q.fetchall(sql, params))


# --- coverage (used by proposals and patch validation) --------------------------------------


async def covering_write_claims(q: Reader | Tx, agent_id: str, rel_paths: list[str], now: str) -> dict[str, Claim]:
    """For each repository-relative file path, one active, unexpired `write`/`exclusive` claim
    held by `agent_id` that covers the whole file: a `file:<path>` claim, else the deepest
    `directory:<dir>` claim containing it (`directory:` covers everything). Paths without such
    a claim are absent from the result.

    Symbol claims are deliberately *not* whole-file coverage: a symbol claim covers only the
    lines of its declaration, so a patch relying on one must be checked hunk by hunk against
    the span — use `symbol_write_claims` for that.
    """
    if not rel_paths:
        return {}
    rows = await _own_write_claims(q, agent_id, now, ("file", "directory"))
    files: dict[str, Claim] = {}
    dirs: list[tuple[str, Claim]] = []
    for claim, resource in rows:
        if resource.type == "file":
            files.setdefault(norm_path(resource.path), claim)
        else:
            dirs.append((norm_path(resource.path), claim))
    # Deepest directory first, so the nearest grant is the one recorded.
    dirs.sort(key=lambda item: (-len(item[0]), item[1].created_at))
    out: dict[str, Claim] = {}
    for raw in rel_paths:
        path = norm_path(raw)
        if path in files:
            out[raw] = files[path]
            continue
        for directory, claim in dirs:
            if within(path, directory):
                out[raw] = claim
                break
    return out


async def symbol_write_claims(q: Reader | Tx, agent_id: str, rel_path: str, now: str) -> list[tuple[Claim, Resource]]:
    """The agent's active, unexpired `write`/`exclusive` symbol claims in one file, with their
    resources (whose `start_line`/`end_line` hold the span recorded at claim time)."""
    path = norm_path(rel_path)
    rows = await _own_write_claims(q, agent_id, now, ("symbol",))
    return [(c, r) for c, r in rows if norm_path(r.path) == path]


async def unclaimed_resources(q: Reader | Tx, agent_id: str, resource_ids: list[str], now: str) -> list[str]:
    """The ids among `resource_ids` that no live write/exclusive claim of `agent_id` covers: the
    same id, a directory claim containing the path, or (for a symbol) a claim on its file."""
    if not resource_ids:
        return []
    rows = await _own_write_claims(q, agent_id, now, ("file", "directory"))
    held = {
        str(row[0])
        for row in await q.fetchall(
            "SELECT resource_id FROM claims WHERE agent_id = ? AND status = 'active' AND expires_at > ? "
            "AND claim_type IN ('write', 'exclusive')",
            (agent_id, now),
        )
    }
    files = {norm_path(r.path) for _c, r in rows if r.type == "file"}
    dirs = [norm_path(r.path) for _c, r in rows if r.type == "directory"]
    missing = []
    for rid in resource_ids:
        if rid in held:
            continue
        kind, path, _symbol = parse_resource_id(rid)
        path = norm_path(path)
        if kind in ("file", "symbol", "directory") and any(within(path, d) for d in dirs):
            continue
        if kind == "symbol" and path in files:
            continue
        missing.append(rid)
    return missing


async def expired_note(q: Reader | Tx, agent_id: str, resource_id: str, now: str) -> str:
    """For a refusal over an unclaimed resource: `"; your write claim C-… on it expired at T —
    claim it again …"` when the agent's newest write claim on it ran out, else `""`."""
    row = await q.fetchone(
        "SELECT id, expires_at FROM claims WHERE agent_id = ? AND resource_id = ? "
        "AND claim_type IN ('write', 'exclusive') AND status IN ('active', 'expired') AND expires_at <= ? "
        "ORDER BY expires_at DESC, id DESC LIMIT 1",
        (agent_id, resource_id, now),
    )
    if row is None:
        return ""
    return f"; your claim {row[0]} on it expired at {row[1]} — claim it again (resource_claim) and repeat this call"


async def own_write_claims(q: Reader | Tx, agent_id: str, now: str) -> list[tuple[Claim, Resource]]:
    """The agent's active, unexpired write/exclusive claims on files, directories and symbols."""
    return await _own_write_claims(q, agent_id, now, ("file", "directory", "symbol"))


async def _own_write_claims(
    q: Reader | Tx, agent_id: str, now: str, types: tuple[str, ...]
) -> list[tuple[Claim, Resource]]:
    marks = ", ".join("?" for _ in types)
    rows = await q.fetchall(
        "SELECT c.id AS claim_id, r.* FROM claims c JOIN resources r ON r.id = c.resource_id "
        "WHERE c.agent_id = ? AND +c.status = 'active' AND +c.expires_at > ? "
        f"AND c.claim_type IN ('write', 'exclusive') AND r.type IN ({marks}) ORDER BY c.created_at, c.id",
        (agent_id, now, *types),
    )
    if not rows:
        return []
    ids = [row["claim_id"] for row in rows]
    claims = {
        c.id: c for c in await q.all(Claim, f"SELECT * FROM claims WHERE id IN ({', '.join('?' for _ in ids)})", ids)
    }
    return [(claims[row["claim_id"]], resource_from_row(row)) for row in rows]


async def readable_by_claim(q: Reader | Tx, agent_id: str, rel_path: str, now: str) -> bool:
    """Whether `agent_id` holds an active, unexpired claim (any mode) whose resource contains
    `rel_path` (a file or symbol claim on that file, or a directory claim above it) —
    the claim half of readable-path scoping."""
    above = ancestors(norm_path(rel_path))
    marks = ", ".join("?" for _ in above)
    rows = await q.fetchall(
        "SELECT r.type, r.path FROM claims c JOIN resources r ON r.id = c.resource_id "
        "WHERE c.agent_id = ? AND +c.status = 'active' AND +c.expires_at > ? "
        f"AND r.path IN ({marks})",
        (agent_id, now, *above),
    )
    path = norm_path(rel_path)
    for row in rows:
        kind, rpath = row[0], norm_path(row[1] or "")
        if kind == "directory" and within(path, rpath):
            return True
        if kind in ("file", "symbol") and rpath == path:
            return True
    return False
