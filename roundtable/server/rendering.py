"""How a tool result reads for the model of an agent: one compact text, not JSON twice.

MCP lets a result carry `structuredContent` beside its text blocks, and the specification
(2025-06-18 and 2025-11-25) asks a server that sends it to repeat it as serialized JSON in a text
block. What a harness hands its model is one of the two, never both: Claude Code 2.1 gives the
model the JSON of `structuredContent` whenever it is present and drops the text blocks (measured
against a stub of the model API). So for an agent the result is text alone, written to be read:
YAML in block style (keys bare, strings unquoted where YAML allows, no braces or commas), a
multi-line string as a literal block instead of an escaped one-line string. It parses back with
any YAML loader (`yaml.safe_load`) into the very same value, so programs driving an agent
credential lose nothing. No agent is shown an output schema, so nothing obliges
`structuredContent`; callers with operator authority (the CLI, scripts, the console) keep
`structuredContent` and its JSON text, as the specification describes (see `mcp_adapter`).

What an agent reads leaves out what it said itself (`unechoed`): a field that repeats an argument
it sent, the id of the record it named, and in the record it acted on the ids its credential
filled in (itself as `agent_id`, `decided_by`, ...). Everything it did not say stays, ids of new
records first among them.

Nor does it read what says nothing (`unempty`): a field that is null, empty (`''`, `[]`, `{}`)
or the default of its name (`DEFAULTS`: a task's priority 100, a normal risk, a current vote, a
text file, a whole page) at any depth is left out, unless that would leave the result saying nothing at all (`votes: []` is
the answer "no votes", and stays).

`readable` hands libyaml's emitter the events of the value itself (`_events`) instead of going
through `yaml.dump`: the dump builds a node per value with PyYAML's Python representer and asks
its Python resolver twice per scalar what the text would read back as — 17 ms of the event loop
for a page of 100 tasks, a quarter of the soak owner's Python time. The events are the ones the
dump's serializer would emit (same tags, implicit flags and styles), so the text is the same byte
for byte; a value the walk does not know (another type, or one list or mapping object reached
twice, which the dump writes as an anchor and an alias) goes through `yaml.dump` as before.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from roundtable.domain import Risk
from roundtable.services.coordination.tasks import DEFAULT_PRIORITY

_Dumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # type: ignore[assignment]


class _ReadableDumper(_Dumper):  # type: ignore[misc,valid-type]
    """A safe dumper that writes multi-line strings as literal blocks."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    plain = str(value)
    if "\n" in plain.rstrip("\n"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", plain, style="|")
    return dumper.represent_str(plain)


# Results hold the vocabulary's `StrEnum`s and some tuples, which `json.dumps` writes as strings
# and arrays: so does this.
_ReadableDumper.add_representer(str, _string)
_ReadableDumper.add_multi_representer(str, _string)
_ReadableDumper.add_representer(tuple, _Dumper.represent_list)
_ReadableDumper.add_multi_representer(
    int, lambda d, v: d.represent_bool(v) if isinstance(v, bool) else d.represent_int(int(v))
)
_ReadableDumper.add_multi_representer(float, lambda d, v: d.represent_float(float(v)))


_SETTINGS: dict[str, Any] = {
    "sort_keys": False,
    "allow_unicode": True,
    "default_flow_style": False,
    "width": 1 << 30,  # never fold a long line: a folded string reads as two
}


def readable(value: Any) -> str:
    """`value` (a tool's result: JSON types only) as the compact YAML a model reads; an empty
    mapping reads `{}`."""
    if value == {}:
        return "{}\n"
    stream = io.StringIO()
    dumper = _ReadableDumper(stream, **_SETTINGS)
    try:
        emit: Callable[[Event], None] = dumper.emit
        emit(StreamStartEvent())
        emit(DocumentStartEvent())
        _events(value, emit, set())
        emit(DocumentEndEvent())
        emit(StreamEndEvent())
    except _Unusual:
        text: str = yaml.dump(value, Dumper=_ReadableDumper, **_SETTINGS)
        return text
    finally:
        dumper.dispose()
    return stream.getvalue()


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP_START = MappingStartEvent(None, "tag:yaml.org,2002:map", True, flow_style=False)
_SEQ_START = SequenceStartEvent(None, "tag:yaml.org,2002:seq", True, flow_style=False)
_MAP_END = MappingEndEvent()
_SEQ_END = SequenceEndEvent()
_IMPLICIT = _ReadableDumper.yaml_implicit_resolvers
# A short string's event, reused: keys and most values (states, ids, times) recur on every row
# and in the next page; emptied when full, so the strings of past results do not pile up.
_STRINGS: dict[str, ScalarEvent] = {}
_STRINGS_MAX = 4096
_STRING_CACHED_LEN = 200


class _Unusual(Exception):
    """A value `_events` leaves to `yaml.dump`."""


def _read_back(text: str) -> str:
    """The tag `text` reads back as, written plain (`BaseResolver.resolve` for a plain scalar)."""
    for tag, regexp in _IMPLICIT.get(text[0] if text else "", []) + _IMPLICIT.get(None, []):
        if regexp.match(text):
            return str(tag)
    return _STR


def _scalar(tag: str, text: str, style: str | None = None) -> ScalarEvent:
    """The serializer's event for a scalar node: written plain only where it reads back as `tag`,
    quoted only where a quoted scalar's default tag (str) is `tag`."""
    return ScalarEvent(None, tag, (_read_back(text) == tag, tag == _STR), text, style=style)


def _string_event(value: str) -> ScalarEvent:
    """The event of `_string`'s node: a multi-line string as a literal block."""
    text = str(value)
    return _scalar(_STR, text, "|" if "\n" in text.rstrip("\n") else None)


def _float_text(value: float) -> str:
    """`SafeRepresenter.represent_float`'s text."""
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


def _events(value: Any, emit: Callable[[Event], None], seen: set[int]) -> None:
    """Emit the events `yaml.dump` with `_ReadableDumper` would for `value` (the same dispatch:
    exact types first, then `str`, `int` and `float` subclasses); raises `_Unusual` for what it
    does not write."""
    kind = type(value)
    if kind is str:
        event = _STRINGS.get(value)
        if event is None:
            event = _string_event(value)
            if len(value) <= _STRING_CACHED_LEN:
                if len(_STRINGS) >= _STRINGS_MAX:
                    _STRINGS.clear()
                _STRINGS[value] = event
        emit(event)
    elif kind is dict or kind is list or (kind is tuple and value):
        if id(value) in seen:
            raise _Unusual  # the dump writes an anchor and an alias
        seen.add(id(value))
        if kind is dict:
            emit(_MAP_START)
            for key, item in value.items():
                _events(key, emit, seen)
                _events(item, emit, seen)
            emit(_MAP_END)
        else:
            emit(_SEQ_START)
            for item in value:
                _events(item, emit, seen)
            emit(_SEQ_END)
    elif kind is tuple:
        emit(_SEQ_START)
        emit(_SEQ_END)
    elif value is None:
        emit(_scalar(_NULL, "null"))
    elif kind is bool:
        emit(_scalar(_BOOL, "true" if value else "false"))
    elif isinstance(value, str):
        emit(_string_event(value))
    elif isinstance(value, int):
        emit(_scalar(_INT, str(int(value))))
    elif isinstance(value, float):
        emit(_scalar(_FLOAT, _float_text(float(value))))
    else:
        raise _Unusual


def _said(value: Any, sent: Any) -> bool:
    """Whether a result's `value` repeats the scalar argument `sent` (a flag only a flag)."""
    if isinstance(sent, bool) or isinstance(value, bool):
        return isinstance(sent, bool) and isinstance(value, bool) and value == sent
    return isinstance(sent, (str, int, float)) and sent != "" and isinstance(value, (str, int, float)) and value == sent


def _record_unechoed(
    record: Mapping[str, Any], args: Mapping[str, Any], own_id: str | None, who: Iterable[str], agent_id: str
) -> dict[str, Any]:
    """`record` without the fields that repeat an argument of the same name, its `id` when that is
    `own_id` (the id the caller named) and the identity fields in `who` naming the caller."""
    return {
        key: value
        for key, value in record.items()
        if not (key in args and _said(value, args[key]))
        and not (key == "id" and own_id is not None and _said(value, own_id))
        and not (agent_id and key in who and value == agent_id)
    }


def unechoed(
    result: Mapping[str, Any], args: Mapping[str, Any], agent_id: str, identity: Iterable[str] = ()
) -> dict[str, Any]:
    """What an agent reads of `result` (a call with `args`, by `agent_id`): without what it said.

    At the top level a field repeating an argument goes (`since_revision`). In a record (a mapping
    under a top-level key `thing`), a field repeating an argument of its name goes, so does its
    `id` when the caller named it as `thing_id`, and so do the `identity` fields (`agent_id`, ...)
    naming the caller. In a list of records only the fields repeating an argument go (what the
    caller filtered by, a claim's mode): the caller's own id stays there, where it tells its rows
    from others'."""
    who = frozenset(identity)
    out: dict[str, Any] = {}
    for key, value in result.items():
        if key in args and _said(value, args[key]):
            continue
        if isinstance(value, Mapping):
            value = _record_unechoed(value, args, args.get(f"{key}_id"), who, agent_id)
        elif isinstance(value, list) and value and all(isinstance(row, Mapping) for row in value):
            value = [_record_unechoed(row, args, None, (), "") for row in value]
        out[key] = value
    return out


# Fields whose value, wherever they are, is what the reader assumes when they are not there: the
# usual priority and risk, a vote that counts and states no confidence, a file that is text, a
# list or page that is whole.
DEFAULTS: dict[str, Any] = {
    "priority": DEFAULT_PRIORITY,
    "risk": Risk.NORMAL.value,
    "current": True,
    "confidence": 0.0,
    "binary": False,
    "truncated": False,
    "has_more": False,
    "has_more_events": False,
}


def _says_nothing(key: str, value: Any) -> bool:
    if value is None or (isinstance(value, (str, list, tuple, Mapping)) and len(value) == 0):
        return True
    default = DEFAULTS.get(key)
    return default is not None and type(value) is type(default) and value == default


def _lean(value: Any) -> Any:
    """`value` with every mapping's fields that say nothing (`_says_nothing`) left out, at any
    depth (a list keeps its items, each leaned)."""
    if isinstance(value, Mapping):
        leaned = {key: _lean(item) for key, item in value.items()}
        return {key: item for key, item in leaned.items() if not _says_nothing(str(key), item)}
    if isinstance(value, (list, tuple)):
        return [_lean(item) for item in value]
    return value


def unempty(result: Mapping[str, Any]) -> dict[str, Any]:
    """What an agent reads of `result`: without its fields that are null, empty or their
    default (`_lean`), unless nothing would be left; then the result as it is, whose empty
    fields are the answer."""
    leaned: dict[str, Any] = _lean(result)
    return leaned if leaned or not result else dict(result)
