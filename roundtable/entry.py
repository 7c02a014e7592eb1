"""The `roundtable` console script: fast paths for `roundtable mcp stdio` and `roundtable agent`, click for the rest.

A harness spawns the stdio bridge once per agent and waits for it, so its start-up is paid
every time; the bridge path therefore skips click and the command registry and imports only
the config loader, the credential files and the bridge itself. Anything unusual (help, an
unknown option) falls through to the full command line, which gives the same behaviour and
messages. `roundtable agent` (`rt` in a session, `server.agent_cli`) is an agent's command,
run once per governance step, so it never loads click either.
"""

from __future__ import annotations

import os
import sys

_BRIDGE_OPTIONS = {"--root": "root", "--url": "url", "--socket": "socket", "--agent": "agent", "--tools": "tools"}
TOKEN_ENV = "ROUNDTABLE_MCP_TOKEN"
SOCKET_ENV = "ROUNDTABLE_MCP_SOCKET"


def _bridge_options(argv: list[str]) -> dict[str, str] | None:
    """Parse `mcp stdio [--root R] [--url U] [--socket S] [--agent A] [--tools KIND]` (`--k v` and
    `--k=v`)."""
    if argv[:2] != ["mcp", "stdio"]:
        return None
    options = {"root": ".", "url": "", "socket": "", "agent": "", "tools": ""}
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
    """Resolve the endpoint, the project's identity and its credential; run the bridge."""
    from roundtable.server.stdio import PREFIX, Identity
    from roundtable.server.stdio import main as bridge

    uds = options["socket"] or os.environ.get(SOCKET_ENV, "")
    env_token = os.environ.get(TOKEN_ENV, "")
    if uds and not options["url"]:
        # Per-session socket mode needs nothing from the configuration, and a
        # sandboxed session cannot see `.roundtable/` at all. The socket is the
        # session's own (in a 0700 directory), so there is no project to confirm.
        return bridge("http://localhost/mcp", token=env_token, uds=uds)

    from roundtable import credentials
    from roundtable.endpoint import bridge_url
    from roundtable.errors import RoundtableError

    root = os.path.realpath(os.path.abspath(options["root"]))
    agent = options["agent"]
    try:
        configured_url = bridge_url(root)  # the config is required even with --url
        if agent:
            credentials.credential_path(root, agent_id=agent)  # validates the id
    except (RoundtableError, ValueError) as exc:
        print(PREFIX + str(exc), file=sys.stderr)
        return 1
    url = options["url"] or ("http://localhost/mcp" if uds else configured_url)
    if options.get("tools"):
        # The kind of session names its tool listing (`/mcp?tools=workspace`: a harness in its workspace).
        url += ("&" if "?" in url else "?") + "tools=" + options["tools"]
    if env_token:
        token, hint, fix = env_token, f"the token in {TOKEN_ENV}", f"unset {TOKEN_ENV} or set it to a live token"
    else:
        token = credentials.read_credential(root, agent_id=agent) or ""
        path = credentials.credential_path(root, agent_id=agent)
        who = f"agent {agent}'s credential" if agent else "the project's credential"
        hint = f"{who} ({path}{'' if token else ', which does not exist'})"
        fix = (
            f"roundtable connect HARNESS --agent {agent} --force --root {root}, or start the owner "
            "(it writes the credential of every configured agent)"
            if agent
            else f"roundtable start --root {root} (the owner writes it)"
        )
    identity = None if uds else Identity(root, credentials.read_project_id(root))
    return bridge(url, token=token, uds=uds, identity=identity, credential_hint=hint, credential_fix=fix)


def main() -> None:
    if sys.argv[1:2] == ["agent"]:  # an agent's tools as commands (`rt`): as light as the bridge
        from roundtable.server.agent_cli import main as agent_main

        sys.exit(agent_main(sys.argv[2:]))
    options = _bridge_options(sys.argv[1:])
    if options is not None:
        sys.exit(_run_bridge(options))
    from roundtable.cli import main as cli_main

    cli_main()
