"""`roundtable mcp stdio [--root DIR] [--agent ID] [--url URL] [--socket PATH] [--tools KIND]`: the stdio ↔ HTTP bridge.

Kept light on purpose (no runtime, no store, no MCP SDK): a harness spawns this for every
agent, so its start-up time is paid each time. The console script parses these options
itself (`roundtable.entry`); this click command gives `--help` and the same behaviour.
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
@click.option(
    "--agent",
    default="",
    help="Present this agent's credential (.roundtable/credentials/agents/ID.token); "
    "default: the project's. ROUNDTABLE_MCP_TOKEN, when set, wins.",
)
@click.option(
    "--tools",
    default="",
    help="The kind of session, which names its tool listing: workspace (a harness with its own editor in its workspace).",
)
@handle_errors
def stdio(root: Path, url: str, socket_path: str, agent: str, tools: str) -> None:
    """Relay MCP between stdin/stdout and the running owner (`start`, `run` or `mcp serve`).

    Before relaying anything it checks that the owner serves this project (its /healthz);
    with no owner it prints one line and exits 1.
    """
    from roundtable.entry import _run_bridge

    sys.exit(_run_bridge({"root": str(root), "url": url, "socket": socket_path, "agent": agent, "tools": tools}))
