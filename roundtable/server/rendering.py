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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

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


def readable(value: Any) -> str:
    """`value` (a tool's result: JSON types only) as the compact YAML a model reads; an empty
    mapping reads `{}`."""
    if value == {}:
        return "{}\n"
    text: str = yaml.dump(
        value,
        Dumper=_ReadableDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1 << 30,  # never fold a long line: a folded string reads as two
    )
    return text


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
