"""`roundtable mcp serve [--root DIR]`: headless tool server (HTTP + legacy socket, no Chair)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from roundtable.cli.common import handle_errors, http_address_option, root_option, run_async

if TYPE_CHECKING:
    from roundtable.owner import Owner


@click.command()
@root_option
@http_address_option
@handle_errors
def serve(root: Path, http_address: str | None) -> None:
    """Serve the tools over Streamable HTTP and the legacy socket until SIGINT/SIGTERM."""
    from roundtable.cli.owner_run import serve_forever
    from roundtable.config import load_config

    config = load_config(root)

    def ready(owner: Owner) -> str:
        return (
            f"roundtable mcp serve listening on {owner.http_url} and {config.mcp.transport}://{config.mcp.socket_path}"
            + (f" ({owner.address_note}; written to .roundtable/owner.json)" if owner.address_note else "")
        )

    run_async(
        serve_forever(
            root, chair=False, ready=ready, stopped_line="roundtable mcp serve stopped", http_address=http_address
        )
    )
