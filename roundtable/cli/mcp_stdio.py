"""`roundtable mcp stdio [--root DIR] [--url URL] [--socket PATH]`: the stdio ↔ HTTP bridge.

Kept light on purpose (no runtime, no store, no MCP SDK): a harness spawns this for every
agent, so its start-up time is paid each time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from roundtable.cli.common import handle_errors, root_option


@click.command()
@root_option
@click.option("--url", default="", help="MCP endpoint (default: from the project's config).")
@click.option(
    "--socket",
    "socket_path",
    default="",
    help="Per-session Unix socket to reach instead of the HTTP address (or ROUNDTABLE_MCP_SOCKET).",
)
@handle_errors
def stdio(root: Path, url: str, socket_path: str) -> None:
    """Relay MCP between stdin/stdout and the running owner (`start`, `run` or `mcp serve`)."""
    from roundtable.entry import _run_bridge

    sys.exit(_run_bridge({"root": str(root), "url": url, "socket": socket_path}))
