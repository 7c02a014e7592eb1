"""`roundtable mcp call --tool T (--args JSON | --args-file F) [--socket]`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from roundtable.cli.common import fail, handle_errors, print_json, root_option, run_async


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


async def _direct(root: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    from roundtable.runtime import Runtime

    runtime = await Runtime.open(root)
    try:
        return await runtime.call(tool, args)
    finally:
        await runtime.close()


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
@click.option("--socket", "use_socket", is_flag=True, help="Send the call to the owner's legacy socket.")
@handle_errors
def call(root: Path, tool: str, args: str | None, args_file: Path | None, use_socket: bool) -> None:
    """Call one tool and print its JSON result (exit 1 with the error on failure)."""
    if not tool.strip():
        fail("tool is required")
    arguments = _parse_args(args, args_file)
    _check_known(tool)
    if use_socket:
        from roundtable.config import load_config
        from roundtable.server.socket_client import call_socket

        config = load_config(root)
        response = call_socket(config.socket_path(root), tool, arguments)
        if not response.get("ok"):
            fail(str(response.get("error", "call failed")))
        print_json(response.get("result"))
        return
    print_json(run_async(_direct(root, tool, arguments)))
