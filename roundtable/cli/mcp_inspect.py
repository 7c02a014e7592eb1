"""`roundtable mcp inspect [--write]`."""

from __future__ import annotations

from pathlib import Path

import click

from roundtable.cli.common import handle_errors, root_option


@click.command()
@root_option
@click.option("--write", is_flag=True, help="Regenerate the manifest, tools.schema.json and server.json.")
@handle_errors
def inspect(root: Path, write: bool) -> None:
    """Print the exposed tool names, sorted, one per line."""
    from roundtable.assets import write_assets
    from roundtable.config import load_config
    from roundtable.tools.registry import get_registry

    config = load_config(root)
    if write:
        write_assets(root, config)
    for name in sorted(spec.name for spec in get_registry().exposed()):
        click.echo(name)
