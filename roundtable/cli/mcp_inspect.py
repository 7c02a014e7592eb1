"""`roundtable mcp inspect [--write]`: the tool names as MCP clients see them (`mcp.tool_names`:
underscore by default, so `task_create`; Claude Code shows them as `mcp__roundtable__task_create`)."""

from __future__ import annotations

from pathlib import Path

import click

from roundtable.cli.common import handle_errors, root_option


@click.command()
@root_option
@click.option("--write", is_flag=True, help="Regenerate the manifest, tools.schema.json and server.json.")
@handle_errors
def inspect(root: Path, write: bool) -> None:
    """Print the tool names MCP clients are given (mcp.tool_names), sorted, one per line."""
    from roundtable.assets import write_assets
    from roundtable.config import load_config
    from roundtable.tools.registry import get_registry

    config = load_config(root)
    if write:
        write_assets(root, config)
    style = config.mcp.tool_names
    for name in sorted(spec.advertised_name(style) for spec in get_registry().exposed()):
        click.echo(name)
