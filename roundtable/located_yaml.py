"""YAML settings files read into plain data, with the line of every key and value, and pydantic
validation errors reported at those lines as `file:line: key: problem`.

`config.yaml` and the fenced blocks of `POLICIES.ROUNDTABLE.md` are validated by pydantic models
(`extra="forbid"`). pydantic reports where a problem is as a location tuple (`("mcp",
"tool_names")`); `validation_error` turns each into the file, the line (from the YAML nodes'
marks) and the dotted key, and says what is allowed in words a user of the file knows:

    config.yaml:12: mcp.tool_names: must be one of underscore, dotted (got 'camel')
    POLICIES.ROUNDTABLE.md:9: consensus.default.approval_required: unknown key (allowed: ...)

Validators of the models raise `ValueError` with a message in that style; its text is used as
the problem as it is.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from roundtable.errors import ConfigError

Path = tuple[str | int, ...]
KEY_PART = "[key]"  # pydantic's location part for a problem with a mapping's key, not its value


@dataclass
class Located:
    """Data read from YAML (dicts, lists, scalars) and, for each path into it, the line of its
    key and the line where its value starts (1-based; the same line for a list entry)."""

    label: str
    data: Any = None
    lines: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def line(self, loc: Iterable[str | int], *, of_key: bool = False) -> int:
        """The line of the longest prefix of `loc` the file holds (0 when it holds none)."""
        path = tuple(loc)
        while path:
            found = self.lines.get(path)
            if found is not None:
                return found[0] if of_key else found[1]
            path = path[:-1]
        return self.lines.get((), (0, 0))[1]

    def where(self, loc: Iterable[str | int], *, of_key: bool = False) -> str:
        """`label:line`, or the label alone when the file holds no part of `loc`."""
        line = self.line(loc, of_key=of_key)
        return f"{self.label}:{line}" if line else self.label

    def error(self, loc: Iterable[str | int], problem: str) -> ConfigError:
        """`label:line: key: problem` for a problem found after validation (a reference, say)."""
        path = tuple(loc)
        return ConfigError(f"{self.where(path)}: {dotted(path)}: {problem}")


def dotted(loc: Iterable[str | int]) -> str:
    """The key as users write it: `agents.chair.adapter` (list positions are left out; the line
    points at the entry; a key with spaces or dots is quoted: `tests.commands[' unit']`)."""
    out = ""
    for part in loc:
        if not isinstance(part, str) or part == KEY_PART:
            continue
        plain = bool(part) and part.isprintable() and not any(c.isspace() or c in ".[]'\"" for c in part)
        out += (f".{part}" if out else part) if plain else f"[{part!r}]"
    return out


def load_yaml(text: str, label: str, *, first_line: int = 1) -> Located:
    """Read one YAML document (`yaml.safe_load` semantics) keeping lines. `first_line` is the
    file line of the text's first line (a fenced block inside Markdown starts further down).
    Invalid YAML and keys that are not strings are `ConfigError`s naming the line."""
    offset = first_line - 1
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{label}:{offset + mark.line + 1}" if mark is not None else label
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    located = Located(label)
    if node is None:
        return located
    constructor = yaml.constructor.SafeConstructor()
    try:
        located.data = _walk(node, (), offset, constructor, located)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{label}:{offset + mark.line + 1}" if mark is not None else label
        raise ConfigError(f"{where}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    return located


def _walk(node: yaml.Node, path: Path, offset: int, constructor: yaml.constructor.SafeConstructor, out: Located) -> Any:
    line = offset + node.start_mark.line + 1
    if path not in out.lines:
        out.lines[path] = (line, line)
    if isinstance(node, yaml.MappingNode):
        constructor.flatten_mapping(node)  # `<<: *anchor` merge keys, as safe_load reads them
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = constructor.construct_object(key_node, deep=True)
            key_line = offset + key_node.start_mark.line + 1
            if not isinstance(key, str):
                raise ConfigError(f"{out.label}:{key_line}: keys must be strings (got {key!r})")
            child = (*path, key)
            out.lines[child] = (key_line, offset + value_node.start_mark.line + 1)
            mapping[key] = _walk(value_node, child, offset, constructor, out)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            item_line = offset + item.start_mark.line + 1
            out.lines[(*path, index)] = (item_line, item_line)
            items.append(_walk(item, (*path, index), offset, constructor, out))
        return items
    return constructor.construct_object(node, deep=True)


def merge(base: Located | None, extra: Located) -> Located:
    """`extra` deep-merged over `base` (maps merge, later scalars and lists replace), lines
    following the values: how the fenced blocks of one Markdown file combine."""
    if base is None or not isinstance(base.data, dict) or not isinstance(extra.data, dict):
        return extra
    lines = dict(base.lines)
    for path in extra.lines:
        if path and not _merges(extra.data, path):
            # A replaced value: its old entries (a longer list, say) must not keep their lines.
            for old in [p for p in lines if p[: len(path)] == path]:
                del lines[old]
    lines.update({p: v for p, v in extra.lines.items() if p})
    lines.setdefault((), extra.lines.get((), (0, 0)))
    return Located(extra.label, overlay(base.data, extra.data), lines)


def _merges(data: Any, path: Path) -> bool:
    """Does the value at `path` merge into what was there (a map, or an empty section)?"""
    for part in path:
        data = data[part]
    return data is None or isinstance(data, dict)


def overlay(base: Any, extra: Any) -> Any:
    """`extra` over `base`: maps merge key by key, anything else replaces, and an empty section
    (`storage:` with nothing under it, read as null) keeps what `base` has."""
    if isinstance(base, Mapping) and extra is None:
        return dict(base)
    if isinstance(base, Mapping) and isinstance(extra, Mapping):
        out = dict(base)
        for key, value in extra.items():
            out[key] = overlay(base[key], value) if key in base else value
        return out
    return extra


# --- pydantic errors → file:line: key: problem ---------------------------------------------------

_EXPECTED = {
    "bool_type": "true or false",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "tuple_type": "a list",
    "list_type": "a list",
}


def type_name(value: object) -> str:
    """What a YAML value is, in the file's words."""
    if value is None:
        return "null"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
    return names.get(type(value), type(value).__name__)


def validation_error(exc: ValidationError, located: Located, model: type[BaseModel]) -> ConfigError:
    """One `ConfigError` for every problem pydantic found, each `label:line: key: problem`,
    ordered by line."""
    found: list[tuple[int, str]] = []
    for error in exc.errors(include_url=False):
        line, message = describe(error, located, model)
        if message not in (m for _, m in found):
            found.append((line, message))
    found.sort(key=lambda item: item[0])
    return ConfigError("\n".join(message for _, message in found))


def describe(error: ErrorDetails, located: Located, model: type[BaseModel]) -> tuple[int, str]:
    """(line, `label:line: key: problem`) for one pydantic error."""
    loc = tuple(error["loc"])
    kind = error["type"]
    value = error.get("input")
    if kind == "extra_forbidden":
        allowed = sorted(_fields(annotation_at(model, loc[:-1])))
        problem = f"unknown key (allowed: {', '.join(allowed)})" if allowed else "unknown key"
        line = located.line(loc, of_key=True)
    else:
        problem = _problem(error, annotation_at(model, loc), value)
        line = located.line(loc, of_key=loc[-1:] == (KEY_PART,))
    where = f"{located.label}:{line}" if line else located.label
    key = dotted(loc)
    return line, f"{where}: {key}: {problem}" if key else f"{where}: {problem}"


def _problem(error: ErrorDetails, annotation: Any, value: object) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    if kind == "literal_error":
        choices = [str(c) for c in _literal_choices(annotation)] or [str(ctx.get("expected", ""))]
        return f"must be one of {', '.join(choices)} (got {value!r})"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {type_name(value)}"
    if kind == "missing":
        return "required key is missing"
    text = error["msg"]
    return text[:1].lower() + text[1:]


def _unwrap(annotation: Any) -> Any:
    """The type under `Annotated[...]` and `X | None`."""
    while True:
        origin = get_origin(annotation)
        if origin is typing.Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def annotation_at(model: type[BaseModel], loc: Iterable[str | int]) -> Any:
    """The declared type at `loc` inside `model` (None when `loc` leaves the declared shape)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        origin = get_origin(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(part) if isinstance(part, str) else None
            if info is None:
                return None
            current = info.annotation
        elif origin in (dict, Mapping):
            current = get_args(current)[1]
        elif origin in (tuple, list) and isinstance(part, int):
            current = get_args(current)[0]
        else:
            return None
    return _unwrap(current)


def _fields(annotation: Any) -> list[str]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [name for name, info in annotation.model_fields.items() if not info.exclude]
    return []


def _literal_choices(annotation: Any) -> tuple[Any, ...]:
    return get_args(annotation) if get_origin(annotation) is Literal else ()
