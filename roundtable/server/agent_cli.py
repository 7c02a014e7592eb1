"""`roundtable agent` (`rt` in a session): an agent's tools as commands in its own shell.

A harness in its workspace already has a shell, an editor and search; what it needs from the
table it can run as commands, with no MCP server configured at all, so its model reads no tool
listing: `rt` prints the tools this credential may call, one line each (the same listing the
MCP endpoint gives it, generated from the same registry), and `rt TOOL ...` calls one and prints
the text an MCP client would hand its model. Usage:

    rt                                  the tools you may call, one line each
    rt TOOL --help                      one tool: its description and each argument
    rt TOOL [VALUE ...] [--NAME VALUE]  call it; VALUEs fill its required arguments in order
                                        (a session's own task or proposal id may come first)

Arguments follow the tool's input schema: `--since-revision 2` (or `--since_revision=2`), a flag
alone for true (`--no-NAME` for false), an array option takes every word up to the next option
(`--paths a.py b.py`), an object or array of objects is JSON (`@FILE` reads it from a file), and a
string value `-` is read from standard input (for long Markdown). A bad argument is refused here,
before anything is sent, naming the tool's arguments.

Where: a supervised session's private socket and token (`ROUNDTABLE_MCP_SOCKET`,
`ROUNDTABLE_MCP_TOKEN`), else `ROUNDTABLE_MCP_URL` with that token (the owner's HTTP endpoint;
`?tools=workspace` names a workspace session's listing). Exit status: 0 done, 1 the tool refused
(its message on standard output, where the model reads it), 2 a usage error, 3 no endpoint.
Standard library only, like the stdio bridge: no MCP SDK, no runtime, no store.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from roundtable.server.oneshot import Endpoint, Refused, Unreachable

PROGRAM = "rt"
SOCKET_ENV = "ROUNDTABLE_MCP_SOCKET"
TOKEN_ENV = "ROUNDTABLE_MCP_TOKEN"
URL_ENV = "ROUNDTABLE_MCP_URL"
USAGE = f"{PROGRAM} TOOL VALUE... [--NAME VALUE]; {PROGRAM} TOOL --help"
# Where the listing names the arguments it leaves out of a tool's schema as rare (`mcp_adapter`).
RARE_ARGS_META = "io.roundtable/rare_args"
OK, REFUSED, USAGE_ERROR, NO_ENDPOINT = 0, 1, 2, 3


class UsageError(Exception):
    """The command line does not fit the tool's schema (nothing was sent)."""


def endpoint_from(environ: dict[str, str]) -> Endpoint:
    """The session's endpoint from its environment; `Unreachable` when there is none."""
    token = environ.get(TOKEN_ENV, "")
    if environ.get(SOCKET_ENV):
        return Endpoint(socket_path=environ[SOCKET_ENV], token=token)
    if environ.get(URL_ENV):
        return Endpoint(url=environ[URL_ENV], token=token)
    raise Unreachable(
        f"no session endpoint: {SOCKET_ENV} or {URL_ENV} is not set ({PROGRAM} runs inside a supervised "
        "session, or with those set to an owner's endpoint and a credential)"
    )


# --- the listing -------------------------------------------------------------------------------


def _kind(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    for option in schema.get("anyOf", []) or []:
        if isinstance(option, dict) and option.get("type") not in (None, "null"):
            return str(option["type"])
    return "object"


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _required(schema: dict[str, Any]) -> list[str]:
    return [str(name) for name in schema.get("required", []) or []]


def _properties(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    props = schema.get("properties", {}) or {}
    return {str(k): v for k, v in props.items() if isinstance(v, dict)}


def _rare(tool: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The tool's rare arguments: accepted, shown by `rt TOOL --help`, not in the one-line listing."""
    meta = tool.get("_meta")
    rare = meta.get(RARE_ARGS_META) if isinstance(meta, dict) else None
    return {str(k): v for k, v in rare.items() if isinstance(v, dict)} if isinstance(rare, dict) else {}


def _placeholder(name: str, prop: dict[str, Any]) -> str:
    choices = prop.get("enum")
    if isinstance(choices, list) and choices:
        return "|".join(str(choice) for choice in choices)
    return name.upper()


def synopsis(tool: dict[str, Any]) -> str:
    """`name REQUIRED... [--optional ...]`: how to call the tool."""
    schema = tool.get("inputSchema", {}) or {}
    props, required = _properties(schema), _required(schema)
    words = [str(tool["name"]), *(_placeholder(name, props.get(name, {})) for name in required)]
    words += [f"[{_option(name)}]" for name in props if name not in required]
    return " ".join(words)


def _first_clause(text: str) -> str:
    """A description's first sentence or clause (up to `. ` or `; `): the rest is `rt TOOL --help`'s."""
    line = text.strip().split("\n", 1)[0]
    cuts = [at for at in (line.find(". "), line.find("; ")) if at >= 0]
    return line[: min(cuts)] if cuts else line.rstrip(".")


def listing(tools: Sequence[dict[str, Any]]) -> str:
    """The help an agent reads once: each tool's synopsis and what it is for, one line each."""
    lines = [f"{synopsis(tool)}: {_first_clause(str(tool.get('description', '')))}" for tool in tools]
    return f"usage: {USAGE}\n" + "\n".join(lines) + "\n"


def tool_help(tool: dict[str, Any]) -> str:
    """One tool in full: its synopsis, description and each argument."""
    schema = tool.get("inputSchema", {}) or {}
    required, rare = _required(schema), _rare(tool)
    lines = [f"usage: {PROGRAM} {synopsis(tool)}", str(tool.get("description", "")).strip()]
    for name, prop in {**_properties(schema), **rare}.items():
        where = "required" if name in required else "rare" if name in rare else "optional"
        about = str(prop.get("description", "")).strip()
        lines.append(f"  {_option(name)} ({_kind(prop)}, {where}){': ' + about if about else ''}")
    return "\n".join(lines) + "\n"


# --- the arguments -------------------------------------------------------------------------------


def _read_stdin(stdin: TextIO) -> str:
    return stdin.read()


def _scalar(name: str, prop: dict[str, Any], word: str, stdin: Callable[[], str]) -> Any:
    kind = _kind(prop)
    if kind == "integer":
        try:
            return int(word)
        except ValueError:
            raise UsageError(f"{_option(name)}: {word!r} is not an integer") from None
    if kind == "number":
        try:
            return float(word)
        except ValueError:
            raise UsageError(f"{_option(name)}: {word!r} is not a number") from None
    if kind == "boolean":
        lowered = word.lower()
        if lowered in ("true", "yes", "1"):
            return True
        if lowered in ("false", "no", "0"):
            return False
        raise UsageError(f"{_option(name)}: {word!r} is not true or false")
    if kind in ("object", "array"):
        return _json_value(name, word)
    return stdin() if word == "-" else word


def _json_value(name: str, word: str) -> Any:
    text = word
    if word.startswith("@"):
        try:
            text = Path(word[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{_option(name)}: cannot read {word[1:]}: {exc.strerror}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{_option(name)}: not JSON ({exc})") from None


def _is_scalar_array(prop: dict[str, Any]) -> bool:
    items = prop.get("items", {})
    return _kind(prop) == "array" and isinstance(items, dict) and _kind(items) in ("string", "integer", "number")


# The ids a session's capability names (its task, its proposal): not required in the session's
# schema, yet where an unbound credential's schema has them first (`workspace_propose TASK_ID`,
# `vote_cast PROPOSAL_ID VOTE REASON_MD`), and the ids its prompt gives it.
BOUND_IDS = ("task_id", "proposal_id")


def _positional_slots(
    props: dict[str, dict[str, Any]], missing: list[str], taken: Sequence[str], given: int
) -> list[str]:
    """The arguments `given` positional values fill: the missing required ones, in order; when
    there are more values than those, first the optional `BOUND_IDS` (a session's task or proposal,
    named anyway: `rt proposal_get P-1`, `rt workspace_propose T-1`), in the schema's order."""
    extra = given - len(missing)
    if extra <= 0 or any(_is_scalar_array(props.get(name, {})) for name in missing):
        return missing
    ids = [name for name in props if name in BOUND_IDS and name not in missing and name not in taken][:extra]
    return [name for name in props if name in missing or name in ids] if ids else missing


def arguments(tool: dict[str, Any], words: Sequence[str], stdin: Callable[[], str]) -> dict[str, Any]:
    """The tool's arguments from the command line, checked against its schema's names and types."""
    schema = tool.get("inputSchema", {}) or {}
    props, required = {**_properties(schema), **_rare(tool)}, _required(schema)
    by_option = {_option(name): name for name in props} | {"--" + name: name for name in props}
    out: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("--") or word == "--":
            positional.append(word)
            continue
        flag, eq, value = word.partition("=")
        negated = flag.startswith("--no-") and flag not in by_option and "--" + flag[5:] in by_option
        name = by_option.get("--" + flag[5:] if negated else flag)
        if name is None:
            known = ", ".join(_option(n) for n in props) or "none"
            raise UsageError(f"{tool['name']} has no {flag} (its arguments: {known})")
        prop = props[name]
        if negated or (_kind(prop) == "boolean" and not eq):
            if negated and _kind(prop) != "boolean":
                raise UsageError(f"{flag}: {_option(name)} is not a flag")
            out[name] = not negated if not eq else _scalar(name, prop, value, stdin)
            continue
        if _is_scalar_array(prop) and not eq:
            items: list[Any] = []
            while i < len(words) and not words[i].startswith("--"):
                items.append(_scalar(name, prop["items"], words[i], stdin))
                i += 1
            if not items:
                raise UsageError(f"{flag} needs at least one value")
            out[name] = [*out.get(name, []), *items]
            continue
        if not eq:
            if i >= len(words):
                raise UsageError(f"{flag} needs a value")
            value = words[i]
            i += 1
        if _is_scalar_array(prop):
            out[name] = [*out.get(name, []), _scalar(name, prop["items"], value, stdin)]
        else:
            out[name] = _scalar(name, prop, value, stdin)
    missing = [name for name in required if name not in out]
    for name in _positional_slots(props, missing, list(out), len(positional)):
        if not positional:
            break
        prop = props.get(name, {})
        if _is_scalar_array(prop):
            out[name] = [_scalar(name, prop["items"], word, stdin) for word in positional]
            positional = []
        else:
            out[name] = _scalar(name, prop, positional.pop(0), stdin)
    if positional:
        raise UsageError(f"{tool['name']}: too many values ({' '.join(positional)}); usage: {synopsis(tool)}")
    still = [name for name in required if name not in out]
    if still:
        raise UsageError(f"{tool['name']} needs {', '.join(n.upper() for n in still)}; usage: {synopsis(tool)}")
    return out


# --- the command -----------------------------------------------------------------------------------


def result_text(result: dict[str, Any]) -> str:
    """What an MCP client hands its model: the text blocks, in order."""
    parts = [str(block.get("text", "")) for block in result.get("content", []) if isinstance(block, dict)]
    text = "".join(parts)
    if not parts and "structuredContent" in result:
        text = json.dumps(result["structuredContent"], ensure_ascii=False, indent=1)
    return text if text.endswith("\n") or not text else text + "\n"


def run(argv: Sequence[str], environ: dict[str, str], out: TextIO, err: TextIO, stdin: TextIO) -> int:
    """`rt ARGV` against the session's endpoint; the exit status."""
    try:
        endpoint = endpoint_from(environ)
        if argv and argv[0] not in ("-h", "--help", "help"):
            name = argv[0]
            tools = {str(t.get("name")): t for t in endpoint.list_tools(meta={RARE_ARGS_META: True})}
            tool = tools.get(name)
            if tool is None:
                err.write(f"{PROGRAM}: you have no tool {name!r}; `{PROGRAM}` lists yours\n")
                return USAGE_ERROR
            if any(word in ("-h", "--help") for word in argv[1:]):
                out.write(tool_help(tool))
                return OK
            args = arguments(tool, argv[1:], lambda: _read_stdin(stdin))
            result = endpoint.call_tool(name, args)
            out.write(result_text(result))
            return REFUSED if result.get("isError") else OK
        out.write(listing(endpoint.list_tools()))
        return OK
    except UsageError as exc:
        err.write(f"{PROGRAM}: {exc}\n")
        return USAGE_ERROR
    except Refused as exc:
        out.write(f"{exc}\n")
        return REFUSED
    except Unreachable as exc:
        err.write(f"{PROGRAM}: {exc}\n")
        return NO_ENDPOINT


def main(argv: Sequence[str]) -> int:
    return run(argv, dict(os.environ), sys.stdout, sys.stderr, sys.stdin)
