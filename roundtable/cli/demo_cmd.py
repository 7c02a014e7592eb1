"""`roundtable demo` (what `make run` runs): prepare the demo's project once, then the console.

The project (`roundtable.demo.workspace`) is created under `--root` the first time and brought up
to date after; the console then starts on the demo's run with the autopilot on — created the
first time, resumed after, so a second `make run` never starts a duplicate.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("demo"),
    show_default=True,
    help="Where the demo's project lives (created the first time).",
)
@click.pass_context
def demo(ctx: click.Context, root: Path) -> None:
    """The demo: a small project whose agents are scripted, and the console on its run."""
    from roundtable.cli.run_cmd import run
    from roundtable.demo import workspace

    workspace.prepare(root)
    workspace.configure(root)
    if workspace.has_run(root, workspace.DEMO_RUN):
        ctx.invoke(run, root=root, run_id=workspace.DEMO_RUN, resume=True, demo=True, autopilot=True)
    else:
        ctx.invoke(run, root=root, run_id=workspace.DEMO_RUN, goal=workspace.DEMO_GOAL, demo=True, autopilot=True)
