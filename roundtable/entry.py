"""The `roundtable` console script: a fast path for `roundtable mcp stdio`, click for the rest.

A harness spawns the stdio bridge once per agent and waits for it, so its start-up is paid
every time; the bridge path therefore skips click and the command registry and imports only
the config loader and the bridge itself. Anything unusual (help, an unknown option) falls
through to the full command line, which gives the same behaviour and messages.
"""

from __future__ import annotations

import os
import sys

_BRIDGE_OPTIONS = {"--root": "root", "--url": "url", "--socket": "socket"}


def _bridge_options(argv: list[str]) -> dict[str, str] | None:
    """Parse `mcp stdio [--root R] [--url U] [--socket S]` (both `--k v` and `--k=v`)."""
    if argv[:2] != ["mcp", "stdio"]:
        return None
    options = {"root": ".", "url": "", "socket": ""}
    rest = argv[2:]
    i = 0
    while i < len(rest):
        word = rest[i]
        name, eq, value = word.partition("=")
        if name not in _BRIDGE_OPTIONS:
            return None  # help, typos, anything else: let click explain
        if not eq:
            if i + 1 >= len(rest):
                return None
            value = rest[i + 1]
            i += 1
        options[_BRIDGE_OPTIONS[name]] = value
        i += 1
    return options


def _run_bridge(options: dict[str, str]) -> int:
    from roundtable.config import load_config
    from roundtable.errors import RoundtableError
    from roundtable.server.stdio import main as bridge

    uds = options["socket"] or os.environ.get("ROUNDTABLE_MCP_SOCKET", "")
    if uds and not options["url"]:
        # Per-session socket mode (§6.4.4) needs nothing from the configuration, and a
        # sandboxed session cannot see `.roundtable/` at all (§8.4.2 step 5).
        return bridge("http://localhost/mcp", token=os.environ.get("ROUNDTABLE_MCP_TOKEN", ""), uds=uds)
    try:
        config = load_config(options["root"])  # required even with --url (system.md §6.4.1)
    except RoundtableError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    token = os.environ.get("ROUNDTABLE_MCP_TOKEN", "")
    uds = options["socket"] or os.environ.get("ROUNDTABLE_MCP_SOCKET", "")
    url = options["url"] or ("http://localhost/mcp" if uds else config.http_url())
    return bridge(url, token=token, uds=uds)


def main() -> None:
    options = _bridge_options(sys.argv[1:])
    if options is not None:
        sys.exit(_run_bridge(options))
    from roundtable.cli import main as cli_main

    cli_main()
