"""One clear sentence for arguments an operation's `Args` model refused.

`Runtime.call` validates every call through the operation's model; when it refuses, `refusal`
words the first problem the way a caller can act on it: unknown arguments (naming the allowed
ones) first, then missing ones, then the first bad argument by name. A sentence never echoes the
offending value (it may be megabytes long, or a secret): only its size, and at most 64
characters of a key.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as ModelError
from pydantic_core import ErrorDetails

from roundtable.services.args import FLOAT_MAX

# The argument types' own checks (`services/args.py`): their messages finish "argument X …".
_OWN = frozenset({"record_id", "unique", "null", "one_line"})
_TYPES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}


def refusal(tool: str, schema: dict[str, Any], exc: ModelError) -> str:
    """The sentence for the first problem in `exc` (raised validating `tool`'s arguments
    against the model `schema` was generated from)."""
    errors = exc.errors(include_url=False, include_context=True, include_input=True)
    extra = [e for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if extra:
        allowed = ", ".join(sorted(schema.get("properties", {}))) or "none"
        names = sorted(str(e["loc"][0]) for e in extra)
        shown = ", ".join(_clip(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return f"{tool}: unknown argument {shown} (allowed: {allowed})"
    missing = [e for e in errors if e["type"] == "missing" and len(e["loc"]) == 1]
    if missing:
        return f"{tool}: missing required argument {missing[0]['loc'][0]}"
    first = min(errors, key=lambda e: tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in e["loc"]))
    return f"{tool}: {_sentence(first, schema)}"


def _sentence(error: ErrorDetails, schema: dict[str, Any]) -> str:
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    loc = error["loc"] or ((ctx["field"],) if "field" in ctx else ())
    path = _path(loc)
    value = error.get("input")
    arg = f"argument {path}" if path else "arguments"
    if kind == "blank":
        return f"{arg} must not be empty"
    if kind == "extra_forbidden":
        return f"{arg} is not allowed here"
    if kind == "missing":
        return f"{arg} is missing"
    if kind in _TYPES:
        return f"{arg} must be {_TYPES[kind]}"
    if kind in ("enum", "literal_error"):
        choices = _choices(schema, loc)
        return f"{arg} must be one of {', '.join(choices)}" if choices else f"{arg} is not an allowed value"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        bound = next(iter(ctx.values()), None)
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            return f"{arg} must be a finite number"
        if isinstance(bound, float) and abs(bound) == FLOAT_MAX:
            return f"{arg} must be a finite number"
        word = "at least" if kind.startswith("greater") else "at most"
        return f"{arg} must be {word} {_number(bound)}"
    if kind in ("finite_number",):
        return f"{arg} must be a finite number"
    if kind == "string_too_long":
        size = len(value) if isinstance(value, str) else 0
        return f"{arg} is too long: {size} characters, at most {ctx.get('max_length')} allowed"
    if kind == "string_too_short":
        return f"{arg} is too short: at least {_plural(int(ctx.get('min_length', 1)), 'character')} required"
    if kind == "too_long":
        size = len(value) if isinstance(value, list | dict) else 0
        return f"{arg} has too many items: {size}, at most {ctx.get('max_length')} allowed"
    if kind == "too_short":
        return f"{arg} needs at least {_plural(int(ctx.get('min_length', 1)), 'item')}"
    if kind == "string_pattern_mismatch":
        return f"{arg} has an invalid format: it must match the pattern {ctx.get('pattern')}"
    if kind in _OWN:
        return f"{arg} {error['msg']}"
    return f"{arg} is invalid: {_clip(error['msg'], 200)}"


def _choices(schema: dict[str, Any], loc: tuple[int | str, ...]) -> list[str]:
    """The allowed values of the argument at `loc`, from the advertised schema."""
    node: Any = schema
    for part in loc:
        if not isinstance(node, dict):
            return []
        node = node.get("items") if isinstance(part, int) else node.get("properties", {}).get(part)
    if isinstance(node, dict) and isinstance(node.get("items"), dict) and "enum" not in node:
        node = node["items"]
    return [str(v) for v in node.get("enum", ())] if isinstance(node, dict) else []


def _path(loc: tuple[int | str, ...]) -> str:
    """`readable_paths[3]`, `edits[0].path` (a key cut to 64 characters)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + _clip(str(part))
    return out


def _number(bound: Any) -> str:
    if isinstance(bound, float) and bound.is_integer():
        return str(int(bound))
    return str(bound)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def _clip(text: str, limit: int = 64) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
