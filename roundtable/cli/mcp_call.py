"""`roundtable mcp call --tool T (--args JSON | --args-file F) [--socket | --direct]`.

Without a flag the call goes to the running owner's legacy socket when one listens (the
owner serialises it with its own writes) and opens the database in this process only when
none does; `--direct` always opens it here, waiting a bounded time for the write lock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from roundtable.cli.calls import call as call_operation
from roundtable.cli.common import fail, handle_errors, print_json, root_option


def _parse_args(args: str | None, args_file: Path | None) -> dict[str, Any]:
    from roundtable.server.socket import loads_strict  # the socket's strict JSON, for the same inputs

    if args is not None and args_file is not None:
        raise click.UsageError("give --args or --args-file, not both")
    if args_file is not None:
        try:
            text = args_file.read_text(encoding="utf-8")
        except OSError as exc:
            fail(f"read args file {args_file}: {exc.strerror}")
    else:
        text = args if args is not None else "{}"
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as exc:
        fail(f"args: invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
    except ValueError as exc:  # NaN, Infinity, a 5,000-digit number, nesting too deep
        fail(f"args: invalid JSON: {str(exc)[:200]}")
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail("args: must be a JSON object")
    return value


# How long a direct-mode write waits for another process's write lock (SQLite busy_timeout).
DIRECT_BUSY_TIMEOUT_MS = 30_000


def unknown_tool_message(tool: str) -> str:
    """The words an MCP client gets for a tool the server does not have (the MCP adapter's)."""
    shown = tool if len(tool) <= 64 else tool[:63] + "…"
    return f"unknown tool: {shown}"


def _check_known(tool: str) -> None:
    """Refuse a name no transport would call, in the words MCP uses (`unknown tool: X`),
    before opening anything; `roundtable mcp inspect` lists the names."""
    from roundtable.tools.registry import get_registry

    spec = get_registry().lookup(tool)
    if spec is None or spec.handler is None:
        fail(unknown_tool_message(tool))


@click.command()
@root_option
@click.option("--tool", required=True, help="Tool name (dotted or underscore).")
@click.option("--args", "args", default=None, help="Arguments as a JSON object.")
@click.option(
    "--args-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="File holding the JSON arguments.",
)
@click.option(
    "--socket", "use_socket", is_flag=True, help="Send the call to the owner's legacy socket (fail if none listens)."
)
@click.option(
    "--direct",
    "use_direct",
    is_flag=True,
    help=f"Open the database in this process even when an owner runs (waits up to "
    f"{DIRECT_BUSY_TIMEOUT_MS // 1000} s for its write lock).",
)
@handle_errors
def call(root: Path, tool: str, args: str | None, args_file: Path | None, use_socket: bool, use_direct: bool) -> None:
    """Call one tool and print its JSON result (exit 1 with the error on failure).

    Goes through the running owner when one listens on its socket, else opens the database."""
    if use_socket and use_direct:
        raise click.UsageError("give --socket or --direct, not both")
    if not tool.strip():
        fail("tool is required")
    arguments = _parse_args(args, args_file)
    _check_known(tool)
    if not use_direct:
        from roundtable.config import load_config
        from roundtable.server.socket_client import OwnerUnreachable, call_socket

        config = load_config(root)
        try:
            response = call_socket(config.socket_path(root), tool, arguments)
        except OwnerUnreachable:
            if use_socket:
                raise
            response = None  # no owner listens: this process opens the database itself
        if response is not None:
            if not response.get("ok"):
                fail(str(response.get("error", "call failed")))
            print_json(response.get("result"))
            return
    print_json(call_operation(root, tool, arguments, busy_timeout_ms=DIRECT_BUSY_TIMEOUT_MS))
