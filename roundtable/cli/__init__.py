"""The `roundtable` command line (click). Thin: parse, call or read through `cli/calls.py` (the
one way commands reach the project's state), print.

Subcommands are loaded lazily so `roundtable --help` and the stdio bridge start fast: each
command lives in its own module and heavy imports (the MCP SDK, Textual) happen inside it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import click

from roundtable.cli.common import keep_group_root

# name -> (module, attribute, one-line help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("roundtable.cli.init_cmd", "init", "Scaffold .roundtable/, config, policies and MCP assets."),
    "run": ("roundtable.cli.run_cmd", "run", "Chair a run from the operator's console (or --headless)."),
    "demo": (
        "roundtable.cli.demo_cmd",
        "demo",
        "The demo: a small project of scripted agents, and the console on its run.",
    ),
    "start": ("roundtable.cli.start_cmd", "start", "Run the long-lived owner: HTTP, socket, Chair, supervisor."),
    "table": ("roundtable.cli.table_cmd", "table", "Print a compact summary of the coordination table."),
    "status": (
        "roundtable.cli.status_cmd",
        "status",
        "What needs you, the running sessions and their spend, the runs — in one screen.",
    ),
    "runs": ("roundtable.cli.runs_cmd", "runs", "List runs, create one, resume, end or archive one."),
    "watch": ("roundtable.cli.watch_cmd", "watch", "Print events (follow with --follow)."),
    "claims": ("roundtable.cli.claims_cmd", "claims", "List, release or expire claims."),
    "symbols": ("roundtable.cli.symbols_cmd", "symbols", "List the symbols declared in one file."),
    "mcp": ("roundtable.cli.mcp_cmd", "mcp", "MCP tools: inspect, serve, stdio bridge, call."),
    "transactions": ("roundtable.cli.transactions_cmd", "transactions", "List or roll back applied patches."),
    "sessions": ("roundtable.cli.sessions_cmd", "sessions", "List, show, launch or revoke agent sessions."),
    "resume": ("roundtable.cli.sessions_cmd", "resume", "Print the resume briefing for an agent or session."),
    "connect": (
        "roundtable.cli.connect_cmd",
        "connect",
        "Add this project's server to a harness's MCP config (--trust for Codex, --approve for Claude).",
    ),
    "doctor": (
        "roundtable.cli.connect_cmd",
        "doctor",
        "Check the setup end to end (config, policy, owner, harness configs, a bridge round trip).",
    ),
    "tokens": ("roundtable.cli.tokens_cmd", "tokens", "Create or revoke HTTP bearer tokens."),
    "approvals": ("roundtable.cli.approvals_cmd", "approvals", "List approvals waiting for you; approve or deny one."),
    "apply": ("roundtable.cli.approvals_cmd", "apply", "Apply an approved proposal (every gate checked again)."),
    "land": (
        "roundtable.cli.landing_cmd",
        "land",
        "Bring a proposal's landing branch and pull request to its current revision; show its checks.",
    ),
    "proposals": (
        "roundtable.cli.proposals_cmd",
        "proposals",
        "Comment on a line of a proposal's diff, or list the comments.",
    ),
    "agent": (
        "roundtable.cli.agent_cmd",
        "agent",
        "An agent's tools as commands in its own shell (`rt` in a session): list them, call one.",
    ),
    "wait": ("roundtable.cli.wait_cmd", "wait", "Wait until this project's owner answers (--ready; for CI)."),
    "workspaces": (
        "roundtable.cli.workspaces_cmd",
        "workspaces",
        "List, create, remove, propose or sync agents' workspaces (git worktrees).",
    ),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy:
            module_name, attr, _help = self._lazy[cmd_name]
            command = getattr(importlib.import_module(module_name), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self._lazy[name][2]) for name in self.list_commands(ctx) if name in self._lazy]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings=CONTEXT)
@click.version_option(package_name="roundtable", prog_name="roundtable")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    expose_value=False,
    callback=keep_group_root,
    help="Project root for the command that follows (every command also takes --root itself).",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """roundtable: coordinate a team of AI coding agents on one repository."""
    from roundtable.logs import configure

    configure(ctx.invoked_subcommand)  # the one logging configuration of this process


def main() -> None:
    try:
        cli.main(prog_name="roundtable")
    except KeyboardInterrupt:
        sys.exit(130)
