"""The JSON Schemas the registry advertises.

An input schema is generated from the operation's `Args` model (`input_schema`), in the compact
form clients are given: no titles or defaults, enums and nested objects inlined (no `$defs`),
an optional argument as its own type (not `anyOf … null`). It is a closed object
(`additionalProperties: false`): unknown arguments are refused with the list of allowed keys.
Output schemas describe the top-level result keys (`result`, with the small builders below).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

Schema = dict[str, Any]


def input_schema(model: type[BaseModel]) -> Schema:
    """The advertised JSON Schema of an operation's arguments."""
    raw = model.model_json_schema(mode="validation")
    defs: dict[str, Schema] = raw.pop("$defs", {})
    raw.pop("description", None)  # the model's docstring is for readers of the code
    return _compact(raw, defs)


def _compact(schema: Schema, defs: dict[str, Schema]) -> Schema:
    options = schema.get("anyOf")
    if isinstance(options, list):  # `X | None`: null means absent, so advertise X
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            schema = {**kept[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    ref = schema.get("$ref")
    if isinstance(ref, str):  # an enum or a nested model: inline it, keeping the field's own keys
        target = defs[ref.rsplit("/", 1)[-1]]
        target = {k: v for k, v in target.items() if k != "description"}  # a docstring, for code readers
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    out: Schema = {}
    for key, value in schema.items():
        if key in ("title", "default"):
            continue
        if key == "additionalProperties" and value is True:
            continue
        if key == "properties":
            out[key] = {name: _compact(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _compact(value, defs)
        else:
            out[key] = value
    return out


def string(description: str = "", **extra: Any) -> Schema:
    out: Schema = {"type": "string"}
    if description:
        out["description"] = description
    out.update(extra)
    return out


def integer(description: str = "") -> Schema:
    out: Schema = {"type": "integer"}
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


RECORD: Schema = {"type": "object"}
RECORDS: Schema = {"type": "array", "items": {"type": "object"}}


def result(properties: dict[str, Schema], required: list[str] | None = None) -> Schema:
    """An output schema: the listed top-level keys (all present unless `required` says less)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required if required is not None else properties),
    }


# What a list tool's page adds to its result (`services.paging`).
PAGE_RESULT: dict[str, Schema] = {"has_more": boolean(), "next_cursor": string()}
