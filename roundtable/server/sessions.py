"""The per-session MCP endpoint: Streamable HTTP over a private Unix socket (spec §8.4.3).

One endpoint serves one supervised session. Every HTTP request must carry
`Authorization: Bearer <capability>` whose hash belongs to this session's capability, else
`401 unauthorized` (the token is never logged). On `tools/list` and `tools/call` the capability
and all state it depends on are re-read from the database (`capabilities.check_call`): a
known-but-expired or revoked token lists no tools and every call answers
`capability expired or revoked`; other refusals are tool errors plus a `capability.denied`
event. Calls that pass are dispatched through `runtime.call` with an agent caller derived from
the capability, never from headers or arguments.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Hashable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from roundtable.errors import PermissionDenied, ToolError
from roundtable.runtime import Runtime
from roundtable.server import mcp_adapter, prompts, resources
from roundtable.services import capabilities
from roundtable.services.redact import redact
from roundtable.store.records import SessionCapability
from roundtable.tools.context import Caller
from roundtable.tools.registry import SESSION_AUDIENCES

log = logging.getLogger("roundtable.server.sessions")


class BearerGuard:
    """Pure-ASGI guard: only this session's capability token gets through (401 otherwise)."""

    def __init__(self, app: ASGIApp, runtime: Runtime, capability_id: str) -> None:
        self.app = app
        self.runtime = runtime
        self.capability_id = capability_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                header = value
                break
        token = ""
        text = header.decode("latin-1")
        if text[:7].lower() == "bearer ":
            token = text[7:].strip()
        cap = None
        if token:
            async with self.runtime.db.read() as reader:
                cap = await capabilities.lookup(reader, token)
        if cap is None or cap.id != self.capability_id:
            log.info("session endpoint refused a request: unauthorized")
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        await self.app(scope, receive, send)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=redact(text))], is_error=True)


class SessionAccess:
    """The principal of a session endpoint: its capability. Every call is checked by
    `capabilities.check_call` (re-reading all state it depends on) and then dispatched through
    `Runtime.call` with an agent caller derived from the capability; a refusal is recorded as a
    `capability.denied` event. Resources, prompts and completion read through this too."""

    def __init__(self, runtime: Runtime, capability_id: str) -> None:
        self.runtime = runtime
        self.capability_id = capability_id
        self.caller = Caller("agent", "session")
        self.bound: resources.Bound | None = None

    async def current(self) -> SessionCapability | None:
        async with self.runtime.db.read() as reader:
            return await reader.one(
                capabilities.SessionCapability,
                "SELECT * FROM session_capabilities WHERE id = ?",
                (self.capability_id,),
            )

    async def _checked(self, tool: str, args: dict[str, Any]) -> capabilities.Checked:
        spec = self.runtime.registry.lookup(tool)
        if spec is None or spec.handler is None or spec.audience not in SESSION_AUDIENCES:
            raise ToolError(f"unknown tool: {tool}")
        try:
            async with self.runtime.db.read() as reader:
                checked = await capabilities.check_call(
                    reader,
                    self.runtime.root,
                    self.capability_id,
                    spec.name,
                    dict(args),
                    frozenset(spec.input_schema.get("properties", {})),
                )
        except capabilities.Denied as exc:
            cap = await self.current()  # only needed to attribute the denial
            if cap is not None:
                await capabilities.record_denial(self.runtime.db, cap, spec.name, exc.reason_code)
            raise
        self._learn(checked)
        return checked

    def _learn(self, checked: capabilities.Checked) -> None:
        cap = checked.capability
        self.caller = Caller("agent", "session", agent_id=cap.agent_id, session_id=cap.session_id, capability=cap)

    async def check(self, tool: str, args: dict[str, Any]) -> None:
        await self._checked(tool, args)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        checked = await self._checked(tool, args)
        result: dict[str, Any] = await self.runtime.call(tool, checked.args, self.caller)
        return result

    async def live(self) -> bool:
        """Whether the capability still passes every state check (steps 1-5)."""
        return await self.tool_state() != ()

    async def tool_state(self) -> Hashable:
        """The tools this session may call now: its role's set while the capability, session,
        run, agent and task pass the checks; () once any of them does not."""
        try:
            async with self.runtime.db.read() as reader:
                checked = await capabilities.check_call(
                    reader, self.runtime.root, self.capability_id, "table.get_state", {}, frozenset()
                )
        except PermissionDenied:
            return ()
        self._learn(checked)
        return (checked.capability.role, capabilities.allowed_tools(checked.capability.role))

    async def load_bound(self) -> resources.Bound | None:
        cap = await self.current()
        if cap is None:
            return None
        async with self.runtime.db.read() as reader:
            raw = await reader.scalar("SELECT readable_paths_json FROM tasks WHERE id = ?", (cap.task_id,))
        try:
            readable = json.loads(raw or "[]")
        except ValueError:
            readable = []
        paths = tuple(str(p) for p in readable if isinstance(p, str)) if isinstance(readable, list) else ()
        self.bound = resources.Bound(
            agent_id=cap.agent_id,
            run_id=cap.run_id,
            task_id=cap.task_id,
            proposal_id=cap.proposal_id,
            session_id=cap.session_id,
            readable=paths,
        )
        self.caller = Caller("agent", "session", agent_id=cap.agent_id, session_id=cap.session_id, capability=cap)
        return self.bound


def build_server(runtime: Runtime, capability_id: str, *, page_size: int = mcp_adapter.PAGE_SIZE) -> Server[Any]:
    """The low-level MCP server for one capability (tools filtered by role, calls checked;
    resources, prompts and completion limited to what the capability may read)."""
    registry = runtime.registry
    style = runtime.config.mcp.tool_names
    access = SessionAccess(runtime, capability_id)

    async def bound_access(ctx: Any) -> SessionAccess:
        if access.bound is None:
            await access.load_bound()
        return access

    async def list_tools(ctx: Any) -> list[types.Tool]:
        cap = await access.current()
        if cap is None or not capabilities.is_live(cap) or await access.tool_state() == ():
            return []
        allowed = capabilities.allowed_tools(cap.role)
        tools = []
        for spec in registry:
            if spec.name not in allowed or spec.handler is None or spec.audience not in SESSION_AUDIENCES:
                continue
            tools.append(mcp_adapter.tool_model(spec, style, capabilities.session_schema(spec.input_schema, cap)))
        return tools

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = registry.lookup(params.name)
        if spec is None or spec.handler is None or spec.audience not in SESSION_AUDIENCES:
            return _error(f"unknown tool: {params.name}")
        try:
            result = await access.call(spec.name, dict(params.arguments or {}))
        except (capabilities.Denied, capabilities.Expired) as exc:
            return _error(str(exc))
        except ToolError as exc:
            return _error(str(exc))
        except Exception:  # never let exception text reach the client
            log.exception("session call %s failed", spec.name)
            return _error(f"{spec.name} failed with an internal error; the owner's log has details")
        return mcp_adapter.tool_result(spec.name, result)

    def instructions() -> str:
        return prompts.instructions(style, access.bound)

    surface = mcp_adapter.Surface(
        access=lambda ctx: access,
        list_tools=list_tools,
        call_tool=call_tool,
        instructions=instructions,
        style=lambda: style,
        tool_state=access.tool_state,
        list_changes=False,
        version="0.1.0",
    )
    server = mcp_adapter.make_server(runtime, surface, page_size=page_size)
    # The bound ids (run, task, proposal, readable paths) are loaded before the first request.
    inner = server.lifespan

    @contextlib.asynccontextmanager
    async def lifespan(srv: Any) -> AsyncIterator[Any]:
        with contextlib.suppress(Exception):
            await bound_access(None)
        async with inner(srv) as state:
            yield state

    server.lifespan = lifespan
    return server


def build_app(runtime: Runtime, capability_id: str) -> ASGIApp:
    server = build_server(runtime, capability_id)
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        # Not network-reachable: the socket's directory is 0700, so no Host/Origin checks.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host="localhost",
        max_request_body_size=runtime.config.mcp.http_max_body_bytes,
    )
    guard = BearerGuard(app, runtime, capability_id)
    guard.hub = server.hub  # type: ignore[attr-defined]  # SessionEndpoint.close ends listen streams
    return guard


def bind_private_socket(path: Path) -> socket.socket:
    """Bind a Unix socket at `path` with mode 0600 (created under a tight umask, then chmod)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    sock.setblocking(False)
    return sock


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside the owner: the owner handles signals, not each session endpoint."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class SessionEndpoint:
    """A running per-session endpoint; `await endpoint.close()` stops it and removes the socket."""

    def __init__(self, runtime: Runtime, capability_id: str, socket_path: Path) -> None:
        self.runtime = runtime
        self.capability_id = capability_id
        self.socket_path = socket_path
        self._server: uvicorn.Server | None = None
        self._task: Any = None
        self._app: Any = None

    async def start(self) -> None:
        import asyncio

        sock = bind_private_socket(self.socket_path)
        self._app = build_app(self.runtime, self.capability_id)
        config = uvicorn.Config(
            self._app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._server = _EmbeddedServer(config)
        self._task = asyncio.create_task(
            self._server.serve(sockets=[sock]), name=f"session-endpoint:{self.socket_path}"
        )
        for _ in range(200):
            if self._server.started or self._task.done():
                break
            await asyncio.sleep(0.01)
        if self._task.done():
            self._task.result()  # raise the start-up failure
        if not self._server.started:
            raise ToolError("session endpoint did not start")

    async def close(self) -> None:
        hub = getattr(self._app, "hub", None)
        if hub is not None:
            hub.end_listens()
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = False
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()


@contextlib.asynccontextmanager
async def serve(runtime: Runtime, capability_id: str, socket_path: Path) -> AsyncIterator[SessionEndpoint]:
    endpoint = SessionEndpoint(runtime, capability_id, socket_path)
    await endpoint.start()
    try:
        yield endpoint
    finally:
        await endpoint.close()
