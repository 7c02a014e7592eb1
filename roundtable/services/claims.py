"""The claims service: resource identity, overlap, the mode conflict matrix, and claim lifecycle.

A claim is an advisory lease an agent takes on a file, directory or symbol before proposing a
change (spec/tools.md §3.1). What we do differently from the reference (DESIGN §4.6):

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
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roundtable import clock
from roundtable.errors import NotFound, PermissionDenied, ToolError, ValidationError
from roundtable.services.hashing import resource_hash
from roundtable.store.db import Database, Reader, Tx
from roundtable.store.records import Claim, ClaimContention, Resource

MODES: tuple[str, ...] = ("read", "write", "review", "exclusive")
WRITE_MODES: tuple[str, ...] = ("write", "exclusive")
DEFAULT_TTL_SECONDS = 900
MAX_TTL_SECONDS = 30 * 24 * 3600
FENCE_COUNTER = "claim_fence"

# (requested, existing) pairs that conflict when the resources overlap (spec §3.1.4).
_CONFLICTS: frozenset[tuple[str, str]] = frozenset(
    {("read", "exclusive"), ("write", "write"), ("write", "exclusive"), ("review", "exclusive")}
    | {("exclusive", mode) for mode in MODES}
)


def modes_conflict(requested: str, existing: str) -> bool:
    """The mode conflict matrix: exclusive conflicts with everything, write with write."""
    return (requested, existing) in _CONFLICTS


# --- identity ------------------------------------------------------------------------------


def resource_id_for(resource_type: str, path: str, symbol: str = "") -> str:
    """The canonical id of a resource (§3.1.1): `symbol:<path>#<name>` for a named symbol,
    else `<type>:<path>` (`directory:` alone is the repository root)."""
    if resource_type == "symbol" and symbol:
        return f"symbol:{path}#{symbol}"
    return f"{resource_type}:{path}"


# Any C0 control, DEL or C1 control: `Dockerfile\r` is not `Dockerfile`, so it is refused.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_resource_id(resource_id: str, *, what: str = "resource id") -> None:
    """Refuse a resource id (or path, or symbol) carrying a control character."""
    if _CONTROL.search(resource_id):
        shown = repr(resource_id)[1:-1][:120]
        raise ValidationError(f"{what} {shown} contains a control character")


def parse_resource_id(resource_id: str) -> tuple[str, str, str]:
    """(type, path, symbol) from an id: `symbol:<path>#<name>`, `<type>:<rest>`, or a bare path
    (type `file`)."""
    if resource_id.startswith("symbol:"):
        rest = resource_id[len("symbol:") :]
        path, _, symbol = rest.partition("#")
        return "symbol", path, symbol
    if ":" in resource_id:
        kind, _, rest = resource_id.partition(":")
        return kind, rest, ""
    return "file", resource_id, ""


@dataclass(frozen=True)
class ResourceRef:
    """The identity fields of a resource, enough to decide overlap."""

    id: str
    type: str
    path: str
    symbol: str = ""

    @classmethod
    def of(cls, resource: Resource) -> ResourceRef:
        return cls(resource.id, resource.type, resource.path, resource.symbol)


def _norm_dir(path: str) -> str:
    cleaned = posixpath.normpath(path) if path else ""
    return "" if cleaned == "." else cleaned


def within(path: str, directory: str) -> bool:
    """Whether `path` equals or lies beneath `directory` (`""` is the root: contains all)."""
    directory = _norm_dir(directory)
    path = _norm_dir(path)
    if not directory or not path:
        return not directory
    return path == directory or path.startswith(directory + "/")


def overlaps(a: ResourceRef, b: ResourceRef) -> bool:
    """The overlap table of spec §3.1.3 (symmetric)."""
    if a.id and a.id == b.id:
        return True
    kinds = {a.type, b.type}
    if kinds == {"symbol", "file"}:
        return bool(a.path) and a.path == b.path
    if kinds == {"symbol"}:
        return bool(a.path) and a.path == b.path and a.symbol == b.symbol
    if kinds in ({"symbol", "directory"}, {"file", "directory"}):
        inner, outer = (a, b) if b.type == "directory" else (b, a)
        return within(inner.path, outer.path)
    if kinds == {"directory"}:
        return within(a.path, b.path) or within(b.path, a.path)
    return False


async def _rows(q: Reader | Tx, sql: str, params: Any = ()) -> list[Any]:
    """All rows in one round trip to the connection's thread (claims are on the hot path)."""
    return await q.fetchall(sql, params)


def _ancestors(path: str) -> list[str]:
    """The path itself and every directory above it, down to the root `""`."""
    out = [""]
    if path:
        parts = path.split("/")
        out.extend("/".join(parts[: i + 1]) for i in range(len(parts)))
    return out


# --- reads (expiry evaluated against `now`) -------------------------------------------------

_EFFECTIVE = "CASE WHEN c.status = 'active' AND c.expires_at <= :now THEN 'expired' ELSE c.status END"


def effective(claim: Claim, now: str) -> Claim:
    """The claim as of `now`: an active claim past its expiry reads as `expired`."""
    if claim.status == "active" and claim.expires_at <= now:
        return _replace(claim, status="expired")
    return claim


def _replace(claim: Claim, **changes: Any) -> Claim:
    import dataclasses

    return dataclasses.replace(claim, **changes)


async def get_claim(q: Reader | Tx, claim_id: str, now: str) -> Claim:
    claim = await q.get(Claim, claim_id)
    return effective(claim, now)


async def list_claims(
    q: Reader | Tx, now: str, *, resource_id: str = "", agent_id: str = "", status: str = ""
) -> list[Claim]:
    """Claims matching every non-empty filter (status is the effective one), oldest first."""
    where = ["1 = 1"]
    params: dict[str, Any] = {"now": now}
    if resource_id:
        where.append("c.resource_id = :resource_id")
        params["resource_id"] = resource_id
    if agent_id:
        where.append("c.agent_id = :agent_id")
        params["agent_id"] = agent_id
    if status:
        where.append(f"({_EFFECTIVE}) = :status")
        params["status"] = status
    claims = await q.all(
        Claim, f"SELECT c.* FROM claims c WHERE {' AND '.join(where)} ORDER BY c.created_at, c.id", params
    )
    return [effective(c, now) for c in claims]


async def get_resource(q: Reader | Tx, resource_id: str) -> Resource:
    resource = await q.get(Resource, resource_id)
    return resource


async def search_resources(q: Reader | Tx, query: str, resource_type: str = "") -> list[Resource]:
    """Resources whose id, type, path, symbol or language contains `query` (case-insensitive;
    empty matches all), optionally of one exact type, ordered by id."""
    needle = query.lower()
    resources = await q.all(Resource, "SELECT * FROM resources ORDER BY id")
    out = []
    for res in resources:
        if resource_type and res.type != resource_type:
            continue
        fields = (res.id, res.type, res.path, res.symbol, res.language)
        if not needle or any(needle in f.lower() for f in fields):
            out.append(res)
    return out


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
    exact.extend(resource_id_for("directory", a) for a in _ancestors(path))
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


def _overlap_query(ref: ResourceRef, now: str) -> tuple[str, list[Any]]:
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


def _overlapping(ref: ResourceRef, rows: list[Any]) -> list[tuple[Claim, Resource]]:
    out = []
    for row in rows:
        claim = Claim.from_row(row)
        resource = _resource_from(row, prefix="r_")
        if overlaps(ref, ResourceRef.of(resource)):
            out.append((claim, resource))
    return out


async def live_claims_overlapping(q: Reader | Tx, ref: ResourceRef, now: str) -> list[tuple[Claim, Resource]]:
    """Active, unexpired claims whose resource overlaps `ref` (with their resources).

    The SQL narrows candidates by path (same id, the path's ancestors, or — for a directory —
    anything beneath it); `overlaps` then decides exactly. Claims whose resource row is missing
    are skipped, as in the reference.
    """
    sql, params = _overlap_query(ref, now)
    return _overlapping(ref, await _rows(q, sql, params))


# --- coverage (used by proposals and patch validation) --------------------------------------


async def covering_write_claims(q: Reader | Tx, agent_id: str, rel_paths: list[str], now: str) -> dict[str, Claim]:
    """For each repository-relative file path, one active, unexpired `write`/`exclusive` claim
    held by `agent_id` that covers the whole file: a `file:<path>` claim, else the deepest
    `directory:<dir>` claim containing it (`directory:` covers everything). Paths without such
    a claim are absent from the result.

    Symbol claims are deliberately *not* whole-file coverage: a symbol claim covers only the
    lines of its declaration, so a patch relying on one must be checked hunk by hunk against
    the span (spec §3.5.3) — use `symbol_write_claims` for that.
    """
    if not rel_paths:
        return {}
    rows = await _own_write_claims(q, agent_id, now, ("file", "directory"))
    files: dict[str, Claim] = {}
    dirs: list[tuple[str, Claim]] = []
    for claim, resource in rows:
        if resource.type == "file":
            files.setdefault(_norm_dir(resource.path), claim)
        else:
            dirs.append((_norm_dir(resource.path), claim))
    # Deepest directory first, so the nearest grant is the one recorded.
    dirs.sort(key=lambda item: (-len(item[0]), item[1].created_at))
    out: dict[str, Claim] = {}
    for raw in rel_paths:
        path = _norm_dir(raw)
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
    path = _norm_dir(rel_path)
    rows = await _own_write_claims(q, agent_id, now, ("symbol",))
    return [(c, r) for c, r in rows if _norm_dir(r.path) == path]


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
    files = {_norm_dir(r.path) for _c, r in rows if r.type == "file"}
    dirs = [_norm_dir(r.path) for _c, r in rows if r.type == "directory"]
    missing = []
    for rid in resource_ids:
        if rid in held:
            continue
        kind, path, _symbol = parse_resource_id(rid)
        path = _norm_dir(path)
        if kind in ("file", "symbol", "directory") and any(within(path, d) for d in dirs):
            continue
        if kind == "symbol" and path in files:
            continue
        missing.append(rid)
    return missing


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
    return [(claims[row["claim_id"]], _resource_from(row)) for row in rows]


def _resource_from(row: Any, prefix: str = "") -> Resource:
    """A resource from a joined row whose resource columns carry `prefix`."""
    return Resource(
        id=row[prefix + "id"],
        type=row[prefix + "type"],
        path=row[prefix + "path"] or "",
        symbol=row[prefix + "symbol"] or "",
        language=row[prefix + "language"] or "",
        start_line=int(row[prefix + "start_line"] or 0),
        end_line=int(row[prefix + "end_line"] or 0),
        current_hash=row[prefix + "current_hash"] or "",
        metadata_json=row[prefix + "metadata_json"] or "{}",
    )


async def readable_by_claim(q: Reader | Tx, agent_id: str, rel_path: str, now: str) -> bool:
    """Whether `agent_id` holds an active, unexpired claim (any mode) whose resource contains
    `rel_path` (a file or symbol claim on that file, or a directory claim above it) —
    the claim half of readable-path scoping (spec §3.1.8, §3.15.2)."""
    ancestors = _ancestors(_norm_dir(rel_path))
    marks = ", ".join("?" for _ in ancestors)
    rows = await q.fetchall(
        "SELECT r.type, r.path FROM claims c JOIN resources r ON r.id = c.resource_id "
        "WHERE c.agent_id = ? AND +c.status = 'active' AND +c.expires_at > ? "
        f"AND r.path IN ({marks})",
        (agent_id, now, *ancestors),
    )
    path = _norm_dir(rel_path)
    for row in rows:
        kind, rpath = row[0], _norm_dir(row[1] or "")
        if kind == "directory" and within(path, rpath):
            return True
        if kind in ("file", "symbol") and rpath == path:
            return True
    return False


# --- acquisition ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimRequest:
    """A validated claim request. `resource` carries the normalised identity, the language and
    (for symbols) the span; `base_hash` is already computed when the caller sent none."""

    agent_id: str
    task_id: str
    claim_type: str
    resource: Resource
    ttl_seconds: int = DEFAULT_TTL_SECONDS
    rationale: str = ""
    run_id: str = ""
    claim_id: str = ""
    base_hash: str = ""
    renewable: bool = True
    resume_policy: str = "hold"
    raw_path: str = ""


class ClaimConflict(ToolError):
    """A refused claim: the message describes the first conflict; `contentions` are the rows
    to record (one per conflicting claim) once the refused transaction has rolled back."""

    def __init__(self, text: str, contentions: list[dict[str, Any]]) -> None:
        super().__init__(text)
        self.contentions = contentions


@dataclass(frozen=True)
class Granted:
    claim: Claim
    resource: Resource
    extended: bool


def _describe(resource: Resource) -> str:
    if resource.type == "symbol" and resource.symbol:
        return f"{resource.path}#{resource.symbol}"
    return resource.path or resource.id


def _conflict_text(claim: Claim, resource: Resource) -> str:
    """A refusal that names who holds the resource, not only the claim id."""
    return (
        f"claim conflict: {claim.claim_type} claim {claim.id} already holds overlapping {resource.type} "
        f"resource {_describe(resource)} (held by agent {claim.agent_id} until {claim.expires_at})"
    )


def expiry_after(now: str, ttl_seconds: int) -> str:
    return clock.format_ns(clock.parse(now) + ttl_seconds * 1_000_000_000)


async def acquire(tx: Tx, req: ClaimRequest, now: str) -> Granted:
    """Grant `req` inside the write transaction `tx`, or raise `ClaimConflict` (nothing written).

    Order: a caller-supplied claim id must be new (or the caller's own live claim on the same
    resource and mode, which is then extended); the caller's own live claim on the same
    resource and mode is extended; otherwise every overlapping live claim of another agent is
    checked against the matrix, then the resource is upserted and the claim inserted with the
    next fence, with a `claim.created` event.

    Every read and write runs in ONE hop to the writer's thread (`Tx.run`): a claim is on the
    hot path, and each hop costs more than the SQLite work of its statement (issue 19).
    """
    res = req.resource
    for value, what in (
        (res.id, "resource id"),
        (res.path, "path"),
        (res.symbol, "symbol"),
        (req.raw_path, "path"),
    ):
        check_resource_id(value or "", what=what)
    granted: Granted = await tx.run(_acquire_sync, tx, req, now)
    return granted


_SAME_CLAIM = (
    "SELECT * FROM claims WHERE agent_id = ? AND resource_id = ? AND claim_type = ? "
    "AND status = 'active' AND expires_at > ? ORDER BY created_at DESC, id DESC LIMIT 1"
)
_UPSERT_RESOURCE = (
    "INSERT INTO resources (id, type, path, symbol, language, start_line, end_line, current_hash, "
    "metadata_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
    "type = excluded.type, path = excluded.path, symbol = excluded.symbol, "
    "language = excluded.language, start_line = excluded.start_line, end_line = excluded.end_line, "
    "current_hash = excluded.current_hash"
)
_NEXT_COUNTER = "INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET value = value + 1"


def _acquire_sync(conn: sqlite3.Connection, tx: Tx, req: ClaimRequest, now: str) -> Granted:
    """`acquire` on the writer's thread, inside `tx`."""
    res = req.resource
    refs = conn.execute(
        "SELECT (SELECT 1 FROM tasks WHERE id = ?), (SELECT 1 FROM runs WHERE id = ?), "
        "(SELECT 1 FROM claims WHERE id = ?)",
        (req.task_id, req.run_id, req.claim_id),
    ).fetchone()
    task_found, run_found, id_taken = refs[0], refs[1], refs[2]
    if task_found is None:
        raise NotFound("task", req.task_id)
    if req.run_id and run_found is None:
        raise NotFound("run", req.run_id)
    same_row = conn.execute(_SAME_CLAIM, (req.agent_id, res.id, req.claim_type, now)).fetchone()
    same = Claim.from_row(same_row) if same_row is not None else None
    if req.claim_id and id_taken is not None:
        if same is None or same.id != req.claim_id:
            raise ToolError(f"claim {req.claim_id} already exists; choose another claim_id or omit it")
    if same is not None:
        return _extend_sync(conn, tx, same, req, now)

    ref = ResourceRef.of(res)
    sql, params = _overlap_query(ref, now)
    conflicts = [
        (claim, resource)
        for claim, resource in _overlapping(ref, conn.execute(sql, params).fetchall())
        if claim.agent_id != req.agent_id and modes_conflict(req.claim_type, claim.claim_type)
    ]
    if conflicts:
        first, first_res = conflicts[0]
        text = _conflict_text(first, first_res)
        rows = []
        for claim, resource in conflicts:
            reason = _conflict_text(claim, resource)
            rows.append(
                {
                    "id": clock.new_id("contention"),
                    "resource_id": res.id,
                    "claimant_id": req.agent_id,
                    "challenged_claim_id": claim.id,
                    "status": "open",
                    "reason": reason,
                    "requested_resource_id": res.id,
                    "requested_agent_id": req.agent_id,
                    "requested_task_id": req.task_id,
                    "requested_mode": req.claim_type,
                    "requested_path": req.raw_path,
                    "created_at": now,
                }
            )
        raise ClaimConflict(text, rows)

    resource = Resource(
        id=res.id,
        type=res.type,
        path=res.path,
        symbol=res.symbol,
        language=res.language,
        start_line=res.start_line,
        end_line=res.end_line,
        current_hash=req.base_hash,
        metadata_json=res.metadata_json or "{}",
    )
    conn.execute(_UPSERT_RESOURCE, _resource_values(resource)).close()
    conn.execute(_NEXT_COUNTER, (FENCE_COUNTER,)).close()
    fence = int(conn.execute("SELECT value FROM counters WHERE name = ?", (FENCE_COUNTER,)).fetchone()[0])
    claim = Claim(
        id=req.claim_id or clock.new_id("C"),
        resource_id=res.id,
        agent_id=req.agent_id,
        task_id=req.task_id,
        claim_type=req.claim_type,
        base_hash=req.base_hash,
        status="active",
        expires_at=expiry_after(now, req.ttl_seconds),
        heartbeat_at="",
        renewable=req.renewable,
        resume_policy=req.resume_policy,
        rationale_md=req.rationale,
        fence=fence,
        created_at=now,
        workspace_id="",
    )
    values = claim.to_dict()
    for key in ("heartbeat_at", "workspace_id"):
        values[key] = None
    values["renewable"] = 1 if claim.renewable else 0
    conn.execute(
        f"INSERT INTO claims ({', '.join(values)}) VALUES ({', '.join('?' for _ in values)})", list(values.values())
    ).close()
    tx.tables.update(("resources", "counters", "claims"))
    tx.emit(
        conn,
        req.run_id,
        "claim.created",
        {
            "claim_id": claim.id,
            "resource_id": claim.resource_id,
            "claim_type": claim.claim_type,
            "expires_at": claim.expires_at,
            "resource_type": resource.type,
            "path": resource.path,
            "fence": fence,
        },
        actor_id=req.agent_id,
        task_id=req.task_id,
    )
    return Granted(claim, resource, extended=False)


def _resource_values(resource: Resource) -> tuple[Any, ...]:
    return (
        resource.id,
        resource.type,
        resource.path,
        resource.symbol,
        resource.language,
        resource.start_line,
        resource.end_line,
        resource.current_hash,
        resource.metadata_json or "{}",
    )


def _extend_sync(conn: sqlite3.Connection, tx: Tx, claim: Claim, req: ClaimRequest, now: str) -> Granted:
    if not claim.renewable:
        raise ToolError(f"claim {claim.id} is not renewable; release it and claim again")
    expires_at = expiry_after(now, req.ttl_seconds)
    conn.execute("UPDATE claims SET expires_at = ?, heartbeat_at = ? WHERE id = ?", (expires_at, now, claim.id)).close()
    tx.tables.add("claims")
    tx.emit(
        conn,
        req.run_id,
        "claim.extended",
        {"claim_id": claim.id, "expires_at": expires_at},
        actor_id=req.agent_id,
        task_id=claim.task_id,
    )
    extended = _replace(claim, expires_at=expires_at, heartbeat_at=now)
    row = conn.execute("SELECT * FROM resources WHERE id = ?", (claim.resource_id,)).fetchone()
    if row is None:
        raise NotFound("resource", claim.resource_id)
    return Granted(extended, Resource.from_row(row), extended=True)


async def record_contentions(tx: Tx, rows: list[dict[str, Any]]) -> list[ClaimContention]:
    """Insert the contention rows of a refused claim (in a transaction of their own)."""
    for row in rows:
        await tx.insert("claim_contentions", row)
    if not rows:
        return []
    ids = [row["id"] for row in rows]
    return await tx.all(
        ClaimContention, f"SELECT * FROM claim_contentions WHERE id IN ({', '.join('?' for _ in ids)})", ids
    )


# --- transitions ----------------------------------------------------------------------------

_VERBS = {"released": "release", "revoked": "revoke", "suspended": "suspend", "expired": "expire"}


async def transition(
    tx: Tx,
    claim_id: str,
    status: str,
    now: str,
    *,
    actor_id: str,
    reason: str = "",
    run_id: str = "",
    operator: bool = False,
) -> tuple[Claim, bool]:
    """Move an active claim to `released`, `revoked`, `suspended` or `expired`, with its
    `claim.<status>` event. Returns (claim, changed).

    Only the owner (`actor_id` equal to the claim's agent) or the operator (`operator=True`)
    may do it; a claim that is no longer active (including one past its expiry, unless the
    transition is itself `expired`) is returned unchanged.
    """
    stored = await tx.get(Claim, claim_id)
    if not operator and actor_id != stored.agent_id:
        who = actor_id or "an anonymous caller"
        verb = _VERBS.get(status, "change")
        raise PermissionDenied(
            f"claim {claim_id} belongs to {stored.agent_id}; {who} may not {verb} it "
            "(only the claim's agent or the operator may)"
        )
    current = effective(stored, now)
    if stored.status != "active" or (current.status != "active" and status != "expired"):
        return current, False
    await tx.update("claims", {"id": claim_id}, {"status": status})
    await tx.append_event(
        run_id,
        f"claim.{status}",
        {"claim_id": claim_id, "resource_id": stored.resource_id, "status": status, "reason": reason},
        actor_id=actor_id,
        task_id=stored.task_id,
    )
    return _replace(stored, status=status), True


async def expire_due(tx: Tx, now: str, *, run_id: str = "", actor_id: str = "system") -> list[Claim]:
    """Sweep every active claim whose expiry is at or before `now` to `expired`, one
    `claim.expired` event each (reason `ttl elapsed`). Returns the claims swept."""
    due = await tx.all(
        Claim,
        "SELECT * FROM claims WHERE status = 'active' AND expires_at <= ? ORDER BY expires_at, id",
        (now,),
    )
    out = []
    for claim in due:
        updated, changed = await transition(
            tx, claim.id, "expired", now, actor_id=actor_id, reason="ttl elapsed", run_id=run_id, operator=True
        )
        if changed:
            out.append(updated)
    return out


# --- stale-claim reconciliation -------------------------------------------------------------

STALE_REASON = "base hash changed"


async def reconcile(
    db: Database,
    root: Path,
    *,
    agent_id: str = "",
    actor: str = "system",
    run_id: str = "",
    now: str | None = None,
    claim_ids: Collection[str] | None = None,
) -> list[Claim]:
    """Suspend every active claim whose resource changed since it was claimed (spec/system.md
    §7.7, tools.md §3.1.6): active, unexpired claims (of `agent_id` when given) with a base hash,
    except `read`/`review` claims, whose resource hash recomputed under `root` is non-empty and
    differs from the base hash. Each becomes `suspended` with a `claim.suspended` event (actor
    `actor`, labelled with `run_id`). Returns the suspended claims.

    It takes the database rather than a transaction because hashing is file I/O: the candidates
    are read in one snapshot, hashed in a worker thread with no transaction open, and suspended
    in one write transaction that re-checks each claim is still active with the same base hash
    (a claim released or re-based meanwhile is left alone). Recomputed hashes are also stored as
    the resources' `current_hash`. A resource whose hash cannot be computed (e.g. a claimed file
    that became a directory, or a path the guard refuses) counts as unknown: its claim stays.
    `claim_ids` limits the pass to those claims (patch validation looks only at the claims that
    bear on the proposal, not at everything the author holds).
    """
    at = now or clock.now()
    where = "c.status = 'active' AND c.expires_at > ? AND c.base_hash != '' AND c.claim_type NOT IN ('read', 'review')"
    params: list[Any] = [at]
    if agent_id:
        where += " AND c.agent_id = ?"
        params.append(agent_id)
    if claim_ids is not None:
        if not claim_ids:
            return []
        where += f" AND c.id IN ({', '.join('?' for _ in claim_ids)})"
        params.extend(claim_ids)
    async with db.read() as r:
        rows = await r.fetchall(
            f"SELECT c.id AS claim_id, c.base_hash AS claim_base_hash, r.* FROM claims c "
            f"JOIN resources r ON r.id = c.resource_id WHERE {where} ORDER BY c.created_at, c.id",
            params,
        )
    if not rows:
        return []
    candidates = [(str(row["claim_id"]), str(row["claim_base_hash"]), _resource_from(row)) for row in rows]
    current = await asyncio.to_thread(_current_hashes, root, [res for _, _, res in candidates])
    stale = [
        (claim_id, base, current[res.id])
        for claim_id, base, res in candidates
        if current.get(res.id) and current[res.id] != base
    ]
    stored = {res.id: res.current_hash for _, _, res in candidates}
    refreshed = {rid: h for rid, h in current.items() if h and h != stored.get(rid)}
    if not refreshed and not stale:
        return []  # nothing to record: no write transaction
    out: list[Claim] = []
    async with db.write(tool="claims.reconcile") as tx:
        for rid, digest in refreshed.items():
            await tx.execute(
                "UPDATE resources SET current_hash = ? WHERE id = ? AND current_hash != ?", (digest, rid, digest)
            )
        for claim_id, base, digest in stale:
            still = await tx.scalar(
                "SELECT 1 FROM claims WHERE id = ? AND status = 'active' AND base_hash = ?", (claim_id, base)
            )
            if still is None:
                continue
            reason = f"{STALE_REASON}: claimed {base} current {digest}"
            updated, changed = await transition(
                tx, claim_id, "suspended", at, actor_id=actor, reason=reason, run_id=run_id, operator=True
            )
            if changed:
                out.append(updated)
    return out


def _current_hashes(root: Path, resources: list[Resource]) -> dict[str, str]:
    """The current hash of each distinct resource (blocking: run in a worker thread); `""` when
    it is missing or cannot be hashed."""
    out: dict[str, str] = {}
    for res in resources:
        if res.id in out:
            continue
        try:
            out[res.id] = resource_hash(root, res.type, res.path, res.symbol, (res.start_line, res.end_line))
        except (ToolError, OSError):
            out[res.id] = ""
    return out
