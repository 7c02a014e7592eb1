"""`roundtable agent [TOOL ...]`: an agent's tools as shell commands (`rt` in a session).

The console script runs `server.agent_cli` before click is loaded (`roundtable.entry`); this
command is what `roundtable --help` lists, and forwards every word to the same function.
"""

from __future__ import annotations

import sys

import click


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
def agent(words: tuple[str, ...]) -> None:
    """Call your tools from your shell: `rt` lists them, `rt TOOL --help` explains one."""
    from roundtable.server.agent_cli import main

    sys.exit(main(list(words)))
