"""`roundtable mcp`: inspect, serve, stdio, call (each in its own module, loaded lazily)."""

from __future__ import annotations

import click

from roundtable.cli import CONTEXT, LazyGroup

SUBCOMMANDS = {
    "inspect": ("roundtable.cli.mcp_inspect", "inspect", "Print the exposed tool names; --write regenerates assets."),
    "serve": ("roundtable.cli.mcp_serve", "serve", "Serve the tools over HTTP and the socket (no Chair)."),
    "stdio": ("roundtable.cli.mcp_stdio", "stdio", "Relay MCP between stdio and the running owner."),
    "call": ("roundtable.cli.mcp_call", "call", "Call one tool (in-process, or through the socket)."),
}


@click.group(cls=LazyGroup, lazy=SUBCOMMANDS, context_settings=CONTEXT)
def mcp() -> None:
    """MCP tools: inspect, serve, stdio bridge, call."""
