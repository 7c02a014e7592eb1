"""What a tool result says, read back the way a program reads it.

An agent's result is one compact text (YAML, `server/rendering.py`) with no `structuredContent`;
an operator's carries `structuredContent`. `value_of` gives the same dict for either, from the
SDK's `CallToolResult` or from the wire's JSON `result` object."""

from __future__ import annotations

from typing import Any

import yaml


def value_of(result: Any) -> Any:
    """The result's value: `structuredContent` when sent, else its first text block parsed."""
    if isinstance(result, dict):
        structured = result.get("structuredContent")
        text = (result.get("content") or [{}])[0].get("text", "")
    else:
        structured = result.structured_content
        text = result.content[0].text if result.content else ""
    if structured is not None:
        return structured
    return yaml.safe_load(text)
