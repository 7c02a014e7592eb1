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
"""

from __future__ import annotations

from typing import Any

import yaml

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
