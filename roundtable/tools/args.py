"""Argument helpers for handlers. Arguments are already schema-validated when a handler runs, so
these only supply defaults for absent optional keys and check rules a schema cannot express."""

from __future__ import annotations

from typing import Any

from roundtable.clock import is_valid_id
from roundtable.errors import ValidationError


def opt_str(args: dict[str, Any], key: str, default: str = "") -> str:
    value = args.get(key)
    return value if isinstance(value, str) and value != "" else default


def opt_int(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def opt_float(args: dict[str, Any], key: str, default: float) -> float:
    value = args.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def opt_bool(args: dict[str, Any], key: str, default: bool) -> bool:
    value = args.get(key)
    return value if isinstance(value, bool) else default


def opt_list(args: dict[str, Any], key: str) -> list[str]:
    value = args.get(key)
    return list(value) if isinstance(value, list) else []


def record_id(args: dict[str, Any], key: str, default: str = "") -> str:
    """A caller-supplied record id (it may become a file name): validated, or `default`."""
    value = opt_str(args, key)
    if not value:
        return default
    if not is_valid_id(value):
        raise ValidationError(f"{key} must be 1-128 letters, digits, '.', '_' or '-' and must not start with '.'")
    return value


def identity(args: dict[str, Any], key: str, tool: str) -> str:
    """An identity argument (`agent_id`, `decided_by`): `Runtime.call` fills it from an agent's
    credential, so only a caller without one (the operator) can leave it out — and must not."""
    value = opt_str(args, key).strip()
    if not value:
        raise ValidationError(f"{tool}: missing {key} (an agent's credential fills it; the operator must name one)")
    return value
