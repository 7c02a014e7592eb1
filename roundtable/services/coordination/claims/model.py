"""Claim vocabulary and pure rules: modes and their conflict matrix, resource identity, overlap,
and how a claim reads at a given instant (expiry evaluated on every read).

Nothing here touches the database; the queries, acquisition, transitions and reconciliation
modules beside it build on these rules.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from roundtable import clock
from roundtable.domain import ClaimStatus
from roundtable.errors import ValidationError
from roundtable.store.records import Claim, Resource

MODES: tuple[str, ...] = ("read", "write", "review", "exclusive")
WRITE_MODES: tuple[str, ...] = ("write", "exclusive")
DEFAULT_TTL_SECONDS = 900
MAX_TTL_SECONDS = 30 * 24 * 3600
FENCE_COUNTER = "claim_fence"

# (requested, existing) pairs that conflict when the resources overlap.
_CONFLICTS: frozenset[tuple[str, str]] = frozenset(
    {("read", "exclusive"), ("write", "write"), ("write", "exclusive"), ("review", "exclusive")}
    | {("exclusive", mode) for mode in MODES}
)


def modes_conflict(requested: str, existing: str) -> bool:
    """The mode conflict matrix: exclusive conflicts with everything, write with write."""
    return (requested, existing) in _CONFLICTS


# --- identity ------------------------------------------------------------------------------


def resource_id_for(resource_type: str, path: str, symbol: str = "") -> str:
    """The canonical id of a resource: `symbol:<path>#<name>` for a named symbol,
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


def norm_path(path: str) -> str:
    """A repository-relative path in normal form (`""` for the root)."""
    cleaned = posixpath.normpath(path) if path else ""
    return "" if cleaned == "." else cleaned


def within(path: str, directory: str) -> bool:
    """Whether `path` equals or lies beneath `directory` (`""` is the root: contains all)."""
    directory = norm_path(directory)
    path = norm_path(path)
    if not directory or not path:
        return not directory
    return path == directory or path.startswith(directory + "/")


def overlaps(a: ResourceRef, b: ResourceRef) -> bool:
    """The overlap table of resources (symmetric)."""
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


def ancestors(path: str) -> list[str]:
    """The path itself and every directory above it, down to the root `""`."""
    out = [""]
    if path:
        parts = path.split("/")
        out.extend("/".join(parts[: i + 1]) for i in range(len(parts)))
    return out


# --- a claim at an instant ------------------------------------------------------------------

EFFECTIVE_STATUS_SQL = "CASE WHEN c.status = 'active' AND c.expires_at <= :now THEN 'expired' ELSE c.status END"


def effective(claim: Claim, now: str) -> Claim:
    """The claim as of `now`: an active claim past its expiry reads as `expired`."""
    if claim.status == ClaimStatus.ACTIVE and claim.expires_at <= now:
        return dataclasses.replace(claim, status=ClaimStatus.EXPIRED)
    return claim


def expiry_after(now: str, ttl_seconds: int) -> str:
    """The expiry stamp `ttl_seconds` after `now`."""
    return clock.format_ns(clock.parse(now) + ttl_seconds * 1_000_000_000)


def resource_from_row(row: Any, prefix: str = "") -> Resource:
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
