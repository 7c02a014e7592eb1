"""Every lazily loaded subcommand resolves to its click command, and `--help` lists them all,
`demo` (what `make run` runs) included."""

from __future__ import annotations

import re

import click
from click.testing import CliRunner

from roundtable.cli import COMMANDS, cli


def test_every_lazy_command_loads() -> None:
    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert isinstance(command, click.Command), name
    assert cli.get_command(ctx, "no-such-command") is None


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    rows = result.output.split("Commands:")[1].splitlines()
    listed = {m.group(1) for line in rows if (m := re.match(r"  (\S+) ", line))}
    assert listed == set(COMMANDS)
    assert "demo" in listed
