"""`roundtable start [--root DIR] [--interval DURATION]`: the long-running owner.

Takes the project lock, opens the runtime, recovers an interrupted apply, serves Streamable
HTTP and the legacy socket, runs the Chair over every active run, and logs operational lines
on stdout until SIGINT/SIGTERM: the ready line, then one timestamped line
per meaningful event — session launches and failed launches, turns, applies, rollbacks — through
`logging` (configured once at the CLI entry, `roundtable.logs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from roundtable.cli.common import fail, handle_errors, http_address_option, root_option, run_async

if TYPE_CHECKING:
    from roundtable.owner import Owner


@click.command()
@root_option
@click.option("--interval", default="", help="Chair tick interval (e.g. 1s, 500ms); default chair.tick_interval.")
@click.option(
    "--autopilot",
    is_flag=True,
    help="Launch the agents the work calls for (the dispatcher on; default: the config's autopilot.mode).",
)
@click.option("--goal", default="", help="Create an active run with this goal once the owner is ready.")
@http_address_option
@handle_errors
def start(root: Path, interval: str, autopilot: bool, goal: str, http_address: str | None) -> None:
    """Run the owner in the foreground: HTTP, socket and the Chair loop."""
    from roundtable.cli.owner_run import serve_forever
    from roundtable.config import format_duration, load_config, parse_duration

    config = load_config(root)
    tick = config.chair.tick_interval
    if interval:
        try:
            tick = parse_duration(interval)
        except ValueError:
            fail("coordinator interval must be positive")
        if tick <= 0:
            fail("coordinator interval must be positive")

    import logging

    owner_log = logging.getLogger("roundtable.owner")

    def say(line: str) -> None:
        owner_log.info("%s", line)

    def ready(owner: Owner) -> str:
        return (
            f"roundtable coordinator ready; project={root.resolve()} http={owner.http_url} "
            f"socket={config.mcp.socket_path} interval={format_duration(tick)}"
            + (" autopilot=on" if owner.dispatcher is not None and owner.dispatcher.enabled else "")
            + (f" ({owner.address_note}; written to .roundtable/owner.json)" if owner.address_note else "")
        )

    async def about_runs(owner: Owner) -> None:
        """The run `--goal` created (before anything listened); else how to create one when no
        run is active."""
        from roundtable.services.coordination.runs import active_run_ids

        run = owner.created_run
        if run:
            say(f"created run {run['id']} with goal: {run['goal']}")
        elif not await active_run_ids(owner.runtime):
            say("no run is active; create one with `roundtable runs create --goal TEXT` (this owner takes it up)")

    run_async(
        serve_forever(
            root,
            chair=True,
            ready=ready,
            stopped_line="roundtable coordinator stopped",
            log=say,
            chair_interval=tick if interval else None,
            autopilot=True if autopilot else None,
            after_ready=about_runs,
            goal=goal,
            http_address=http_address,
        )
    )
