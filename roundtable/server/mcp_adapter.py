"""The MCP SDK's low-level `Server` bound to `Runtime.call` (the only module that speaks MCP types).

`tools/list` comes from the registry (names in the configured style, description, input and
output schemas, annotations); `tools/call` accepts both spellings. A tool failure is a result
with `is_error=True` and the (redacted) message; an unknown tool is a JSON-RPC invalid-params
error; any other exception is logged and answered with a generic text — the SDK would
otherwise send the exception text to handshake-era clients (notes §2.4).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from roundtable import __version__
from roundtable.errors import RoundtableError
from roundtable.server.guard import CALLER_SCOPE_KEY, HTTP_CALLER
from roundtable.services.redact import redact
from roundtable.tools.context import Caller
from roundtable.tools.registry import ToolSpec

log = logging.getLogger("roundtable.server.mcp")

SERVER_NAME = "roundtable"
INTERNAL_ERROR_TEXT = "internal error; the owner's log has details"


def _callable_specs(runtime: Any) -> dict[str, ToolSpec]:
    """Every tool an MCP caller may name, by both spellings."""
    specs: dict[str, ToolSpec] = {}
    for spec in runtime.registry.exposed():
        specs[spec.name] = spec
        specs[spec.mcp_name] = spec
    for spec in runtime.registry:
        if spec.operator_only:  # reachable by operator tokens only; runtime refuses agents
            specs.setdefault(spec.name, spec)
            specs.setdefault(spec.mcp_name, spec)
    return specs


def _tool(spec: ToolSpec, style: str) -> types.Tool:
    return types.Tool(
        name=spec.advertised_name(style),
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema or None,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def _caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER_SCOPE_KEY) if isinstance(scope, dict) else None
    return caller if isinstance(caller, Caller) else HTTP_CALLER


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def build_server(runtime: Any, *, tool_names: str | Callable[[], str] = "underscore") -> Server[Any]:
    """A low-level MCP server whose tools are `runtime`'s registry."""

    def style() -> str:
        return tool_names() if callable(tool_names) else tool_names

    def tool_list() -> list[types.Tool]:
        chosen = style()
        exposed = sorted(runtime.registry.exposed(), key=lambda s: s.advertised_name(chosen))
        return [_tool(spec, chosen) for spec in exposed]

    def input_schema(name: str) -> dict[str, Any] | None:
        spec = _callable_specs(runtime).get(name)
        return spec.input_schema if spec is not None else None

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            return types.ListToolsResult(tools=tool_list())
        except Exception:
            log.exception("tools/list failed")
            raise MCPError(types.INTERNAL_ERROR, INTERNAL_ERROR_TEXT) from None

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = _callable_specs(runtime).get(params.name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        try:
            result = await runtime.call(spec.name, params.arguments or {}, _caller_of(ctx))
        except RoundtableError as exc:
            return _error_result(redact(str(exc)))
        except Exception as exc:
            log.exception("tools/call %s failed", spec.name)
            return _error_result(f"{spec.name} failed ({type(exc).__name__}); {INTERNAL_ERROR_TEXT}")
        try:
            text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            log.error("encode %s result failed: %s", spec.name, type(exc).__name__)
            return _error_result(f"encode tool result: {type(exc).__name__}")
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)

    return Server(
        SERVER_NAME,
        version=__version__,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        get_tool_input_schema=input_schema,
    )
