"""`roundtable symbols --path FILE [--json]`: the declarations in one file (no project needed).

The path is used as given (relative to the current directory) and printed with `/` separators;
a file without declarations says so (exit 0); an unsupported language says which ones are
supported (exit 1; `--json` still prints an empty list, exit 0); a syntax error exits 1 with the
message.
"""

from __future__ import annotations

import os

import click

from roundtable.cli.common import fail, handle_errors, json_option, print_json


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--path", "path", default="", help="The file to index.")
@json_option
@handle_errors
def symbols(path: str, as_json: bool) -> None:
    """Print one line per symbol: <kind> <name> <path> <start_line> <end_line>."""
    from roundtable.services.repository.symbols import index_file

    if not path.strip():
        raise click.UsageError("symbols requires --path")
    label = path.replace("\\", "/")
    found = index_file(os.path.realpath(path), label)  # the user's own path: follow its symlinks
    if as_json:
        print_json({"symbols": [s.to_dict() for s in found]})
        return
    if not found:
        from roundtable.services.repository.symbols import _EXTENSIONS, detect_language

        if not detect_language(label):
            supported = ", ".join(sorted(_EXTENSIONS))
            fail(f"no symbols: {label} is not in a supported language (supported extensions: {supported})")
        click.echo(f"no symbols in {label}", err=True)
        return
    for s in found:
        click.echo(f"{s.kind} {s.name} {s.path} {s.start_line} {s.end_line}")
