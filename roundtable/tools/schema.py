"""Small builders for the JSON Schemas the registry advertises.

Every input schema is a closed object (`additionalProperties: false`) so unknown arguments are
rejected with the list of allowed keys; output schemas describe the top-level result keys.
"""

from __future__ import annotations

from typing import Any

from roundtable.services import paging

Schema = dict[str, Any]


def string(description: str = "", **extra: Any) -> Schema:
    out: Schema = {"type": "string"}
    if description:
        out["description"] = description
    out.update(extra)
    return out


def integer(description: str = "", *, minimum: int | None = None, maximum: int | None = None) -> Schema:
    out: Schema = {"type": "integer"}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    if description:
        out["description"] = description
    return out


def number(description: str = "", *, minimum: float | None = None, maximum: float | None = None) -> Schema:
    out: Schema = {"type": "number"}
    if minimum is not None:
        out["minimum"] = minimum
    if maximum is not None:
        out["maximum"] = maximum
    if description:
        out["description"] = description
    return out


def boolean(description: str = "") -> Schema:
    out: Schema = {"type": "boolean"}
    if description:
        out["description"] = description
    return out


def strings(description: str = "") -> Schema:
    out: Schema = {"type": "array", "items": {"type": "string"}}
    if description:
        out["description"] = description
    return out


def obj(properties: dict[str, Schema] | None = None, required: list[str] | None = None) -> Schema:
    """A closed input object; `required` keeps the order given."""
    out: Schema = {"type": "object", "properties": dict(properties or {}), "additionalProperties": False}
    if required:
        out["required"] = list(required)
    return out


RECORD: Schema = {"type": "object"}
RECORDS: Schema = {"type": "array", "items": {"type": "object"}}


def result(properties: dict[str, Schema], required: list[str] | None = None) -> Schema:
    """An output schema: the listed top-level keys (all present unless `required` says less)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required if required is not None else properties),
    }


# Keyset paging of the list tools (`services.paging`): what a call may pass and what it gets.
PAGE_ARGS: dict[str, Schema] = {
    "limit": integer(f"Rows per page: default {paging.DEFAULT_LIMIT}, at most {paging.MAX_LIMIT}.", minimum=1),
    "cursor": string("next_cursor of the previous page (same filters).", maxLength=4096),
}
PAGE_RESULT: dict[str, Schema] = {"has_more": boolean(), "next_cursor": string()}
