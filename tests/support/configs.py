"""Configurations tests start from: the defaults, with one setting fixed where a test is about it."""

from __future__ import annotations

from roundtable.config import Config


def mcp_sessions(config: Config | None = None) -> Config:
    """`config` (the defaults) with `sessions.tools: mcp`: a session's harness gets roundtable's
    MCP server (the tests of that mode; the default is `shell`)."""
    base = config or Config()
    return base.model_copy(update={"sessions": base.sessions.model_copy(update={"tools": "mcp"})})
