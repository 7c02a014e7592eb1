"""`roundtable mcp stdio [--root DIR] [--url URL] [--socket PATH]`: the stdio ↔ HTTP bridge.

Kept light on purpose (no runtime, no store, no MCP SDK): a harness spawns this for every
agent, so its start-up time is paid each time.
"""

from __future__ import annotations

import os
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
    from roundtable.config import load_config
    from roundtable.server.stdio import main

    config = load_config(root)  # required even with --url (system.md §6.4.1)
    token = os.environ.get("ROUNDTABLE_MCP_TOKEN", "")
    uds = socket_path or os.environ.get("ROUNDTABLE_MCP_SOCKET", "")
    if not url:
        url = "http://localhost/mcp" if uds else config.http_url()
    sys.exit(main(url, token=token, uds=uds))
