"""Keyset paging for the list tools (`task.list`, `proposal.list`, `resource.claim_status`, …).

A list answers at most `limit` rows (default `DEFAULT_LIMIT`, at most `MAX_LIMIT`), so what one
call reads and returns does not grow with the project's history. When more rows follow, the
answer carries `has_more: true` and `next_cursor`: an opaque token naming the tool, the filters
it was issued for and the sort key of the last row returned. The next call passes it back with
the same filters and continues strictly after that row (keyset, not offset: rows inserted or
removed meanwhile never shift a page).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from roundtable.errors import ValidationError

T = TypeVar("T")

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_VERSION = 1


@dataclass(frozen=True)
class PageRequest:
    """What a list call asked for: its tool, filters, page size and where to continue."""

    tool: str
    filters: tuple[Any, ...]
    limit: int
    key: tuple[Any, ...] | None  # the sort key to continue after (None: the first page)


class Paged(Protocol):
    """A list call's paging arguments (`args.PageArgs`: `limit` is 1 to `MAX_LIMIT` when given)."""

    @property
    def limit(self) -> int | None: ...

    @property
    def cursor(self) -> str: ...


def request(tool: str, filters: Sequence[Any], width: int, args: Paged) -> PageRequest:
    """The page a list call's `limit` and `cursor` arguments ask for; `width` is how many
    columns its sort key has."""
    limit = DEFAULT_LIMIT if args.limit is None else args.limit
    key = decode(tool, args.cursor, list(filters), width) if args.cursor else None
    return PageRequest(tool, tuple(filters), limit, key)


def encode(tool: str, filters: list[Any], key: Sequence[Any]) -> str:
    raw = json.dumps({"v": _VERSION, "t": tool, "f": filters, "k": list(key)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(tool: str, cursor: str, filters: list[Any], width: int) -> tuple[Any, ...]:
    """The sort key a cursor this tool issued for the same filters continues after."""
    not_ours = ValidationError(f"{tool}: cursor is not one this tool issued (pass next_cursor unchanged)")
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        key = data["k"]
        ok = data.get("v") == _VERSION and data.get("t") == tool and isinstance(key, list) and len(key) == width
    except (ValueError, TypeError, KeyError, AttributeError):
        ok = False
    if not ok:
        raise not_ours
    if data.get("f") != filters:
        raise ValidationError(f"{tool}: cursor was issued for other filters; pass the same filters with it")
    if not all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in key):
        raise not_ours
    return tuple(key)


def after(columns: Sequence[str], key: Sequence[Any]) -> tuple[str, list[Any]]:
    """SQL selecting rows strictly after `key` in the ascending order of `columns` (an OR over
    the order's prefixes), with positional parameters."""
    terms: list[str] = []
    params: list[Any] = []
    for i, column in enumerate(columns):
        terms.append("(" + " AND ".join([*(f"{c} = ?" for c in columns[:i]), f"{column} > ?"]) + ")")
        params.extend([*key[:i], key[i]])
    return "(" + " OR ".join(terms) + ")", params


def after_named(columns: Sequence[str], key: Sequence[Any], prefix: str = "page") -> tuple[str, dict[str, Any]]:
    """`after` with named parameters `:<prefix>0`, `:<prefix>1`, … (for queries that use names)."""
    terms: list[str] = []
    for i, column in enumerate(columns):
        parts = [*(f"{c} = :{prefix}{j}" for j, c in enumerate(columns[:i])), f"{column} > :{prefix}{i}"]
        terms.append("(" + " AND ".join(parts) + ")")
    return "(" + " OR ".join(terms) + ")", {f"{prefix}{i}": value for i, value in enumerate(key)}


def finish(page: PageRequest, rows: list[T], key_of: Callable[[T], Sequence[Any]]) -> tuple[list[T], dict[str, Any]]:
    """The rows of the page (`rows` was read with `LIMIT page.limit + 1`) and the paging fields
    of the answer: `has_more` and `next_cursor` ('' on the last page)."""
    more = len(rows) > page.limit
    shown = rows[: page.limit]
    cursor = encode(page.tool, list(page.filters), key_of(shown[-1])) if more and shown else ""
    return shown, {"has_more": more, "next_cursor": cursor}
