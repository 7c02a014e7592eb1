"""Floor: a bare MCP SDK low-level server (stateful, SSE replies) with one echo tool."""

from __future__ import annotations

import json
import sys
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False}


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name="bench_echo", input_schema=SCHEMA, output_schema={"type": "object"})]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(args))], structured_content=args)


def main(port: int) -> None:
    server = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool, get_tool_input_schema=lambda n: SCHEMA)
    security = TransportSecuritySettings(allowed_hosts=["127.0.0.1:*"], allowed_origins=["http://127.0.0.1:*"])
    app = server.streamable_http_app(transport_security=security)
    print("ready", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main(int(sys.argv[1]))
