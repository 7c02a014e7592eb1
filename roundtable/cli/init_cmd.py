"""`roundtable init`: scaffold a project (private `.roundtable/`, its project id, starter files)."""

from __future__ import annotations

from pathlib import Path

import click

from roundtable.cli.common import handle_errors, root_option


@click.command()
@root_option
@click.option("--force", is_flag=True, help="Overwrite existing starter files.")
@handle_errors
def init(root: Path, force: bool) -> None:
    """Scaffold .roundtable/, the config, policies, protocol files and MCP assets."""
    from roundtable.scaffold import init_project

    root.mkdir(parents=True, exist_ok=True)
    init_project(root, force=force)
    click.echo(f"initialized roundtable in {root}")
