"""The per-session MCP endpoint: Streamable HTTP over a private Unix socket.

One endpoint serves one supervised session. Every HTTP request must carry
`Authorization: Bearer <capability>` whose hash belongs to this session's capability, else
`401 unauthorized` (`guard.CapabilityBackend`; the token is never logged). The MCP server is
the one `mcp_adapter.build_server`, with `CapabilityPrincipal`: on `tools/list` and
`tools/call` the capability and all state it depends on are re-read from the database
(`capabilities.check_call`): a known-but-expired or revoked token lists no tools and every call
answers `capability expired or revoked`; other refusals are tool errors plus a
`capability.denied` event. Calls that pass are dispatched through `runtime.call` with an agent
caller derived from the capability, never from headers or arguments. uvicorn runs embedded
(`server.embedded`) on a socket bound 0600 in a 0700 directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable, Coroutine, Hashable
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from roundtable.errors import NotYet, PermissionDenied, RoundtableError, ToolError
from roundtable.runtime import Runtime
from roundtable.server import mcp_adapter, push, resources
from roundtable.server.embedded import Embedded, EmbeddedStartError
from roundtable.server.guard import CapabilityBackend, authenticated
from roundtable.services.coordination import session_scope
from roundtable.services.redact import redact
from roundtable.services.sessions import capabilities
from roundtable.store.db import ACTING
from roundtable.store.records import SessionCapability
from roundtable.tools import roles
from roundtable.tools.context import SUPERVISOR, Caller
from roundtable.tools.registry import SESSION_AUDIENCES, ToolSpec

log = logging.getLogger("roundtable.server.sessions")

OnLimit = Callable[[str], Coroutine[Any, Any, None]]
START_TIMEOUT = 10.0  # seconds for the endpoint to listen
STOP_TIMEOUT = 5.0  # seconds for it to finish (uvicorn's own graceful shutdown is 2 s)


class CapabilityPrincipal:
    """The principal of a session endpoint — its capability — as `mcp_adapter.Principals` (which
    tools it is shown) and as `resources.Access` (every request's principal). Every call is
    checked by `capabilities.check_call` (re-reading all state it depends on) and then
    dispatched through `Runtime.call` with an agent caller derived from the capability; a
    refusal is recorded as a `capability.denied` event. Resources, prompts and completion read
    through this too."""

    list_changes = False
    tool_tables = push.CAPABILITY_TABLES

    def __init__(self, runtime: Runtime, capability_id: str, on_limit: OnLimit | None = None) -> None:
        self.runtime = runtime
        self.capability_id = capability_id
        self.caller = Caller("agent", "session")
        self.bound: resources.Bound | None = None
        # The session's limits (`limits.session_*`): calls counted, refusals in a row, and why it
        # was stopped once one was passed (every later call is refused with that reason).
        self.calls = 0
        self.refused_in_a_row = 0
        self.stopped = ""
        self._on_limit = on_limit
        self._stopping: set[asyncio.Task[None]] = set()

    # -- mcp_adapter.Principals --

    def access(self, ctx: mcp_adapter.Ctx) -> CapabilityPrincipal:
        return self

    async def tools(self, ctx: mcp_adapter.Ctx) -> list[tuple[ToolSpec, dict[str, Any]]]:
        """What the session is shown: its role's listing (`roles.listed_for`, of kind `WORKSPACE`
        when the session has a workspace) cut to its capability's set. A listing, not an
        authority: every tool of the capability's set stays callable (`capabilities.check_call`
        decides), listed or not."""
        cap = await self.current()
        if cap is None or not capabilities.is_live(cap) or await self.tool_state() == ():
            return []
        # What the role may call, cut to what it usefully calls. A session in a workspace has its
        # own editor, shell and search: it is listed as `?tools=workspace` is on the shared
        # endpoint (none of the tools those replace, and what only a session there does).
        kind = roles.WORKSPACE if await self._has_workspace(cap) else ""
        allowed = {name for name in capabilities.allowed_tools(cap.role) if roles.shows(cap.role, name, kind)}
        return [
            # As on the shared endpoint, an agent is not shown who acts: its capability decides.
            (spec, capabilities.session_schema(mcp_adapter.agent_schema(spec), cap))
            for spec in self.runtime.registry
            if spec.name in allowed and self._nameable(spec)
        ]

    async def _has_workspace(self, cap: SessionCapability) -> bool:
        async with self.runtime.db.read() as reader:
            # The supervisor names the session's workspace (its working directory) in its metadata.
            found = await reader.scalar(
                "SELECT coalesce(nullif(workspace_id, ''), json_extract(metadata_json, '$.workspace'), '')"
                " FROM agent_sessions WHERE id = ?",
                (cap.session_id,),
            )
        return bool(found)

    def listing_key(self, ctx: mcp_adapter.Ctx) -> None:
        """Never kept: the listing follows the capability's state, read per request."""
        return None

    def nameable(self, name: str) -> ToolSpec | None:
        spec = self.runtime.registry.lookup(name)
        return spec if spec is not None and self._nameable(spec) else None

    @staticmethod
    def _nameable(spec: ToolSpec) -> bool:
        return spec.handler is not None and spec.audience in SESSION_AUDIENCES

    async def prepare(self) -> None:
        """The bound ids (run, task, proposal, readable paths), loaded before the first request."""
        await self.load_bound()

    # -- resources.Access --

    async def current(self) -> SessionCapability | None:
        async with self.runtime.db.read() as reader:
            return await reader.one(
                capabilities.SessionCapability,
                "SELECT * FROM session_capabilities WHERE id = ?",
                (self.capability_id,),
            )

    async def _checked(self, tool: str, args: dict[str, Any]) -> capabilities.Checked:
        spec = self.nameable(tool)
        if spec is None:
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
                await self.runtime.call(
                    "capability.record_denial",
                    {"capability_id": cap.id, "tool": spec.name, "reason_code": exc.reason_code},
                    SUPERVISOR,
                )
            # The check names the refused path or id as given: not from Runtime.call, so redacted here.
            text = redact(str(exc))
            if text != str(exc):
                raise capabilities.Denied(exc.reason_code, text) from None
            raise
        self._learn(checked)
        return checked

    def _learn(self, checked: capabilities.Checked) -> None:
        cap = checked.capability
        self.caller = Caller("agent", "session", agent_id=cap.agent_id, session_id=cap.session_id, capability=cap)

    async def check(self, tool: str, args: dict[str, Any]) -> None:
        await self._checked(tool, args)

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.stopped:
            raise PermissionDenied(f"this session was stopped by a limit: {self.stopped}")
        self.calls += 1
        try:
            checked = await self._checked(tool, args)
            result: dict[str, Any] = await self.runtime.call(tool, checked.args, self.caller)
        except RoundtableError as exc:
            if not isinstance(exc, NotYet):  # waiting for a turn is not a refusal
                self.refused_in_a_row += 1
            if isinstance(exc, capabilities.Expired) and exc.budget_reason:
                self._stop(exc.budget_reason)  # over its task's budget: stopped at this call
            self._enforce()
            raise
        self.refused_in_a_row = 0
        self._enforce()
        return result

    def _enforce(self) -> None:
        """Past a limit: refuse every later call and hand the stop to the supervisor (in the
        background: stopping the session closes this endpoint, which waits for this request)."""
        if self.stopped:
            return
        limits = self.runtime.config.limits
        if self.refused_in_a_row >= limits.session_refused_in_a_row:
            reason = (
                f"{self.refused_in_a_row} refused tool calls in a row "
                f"(limits.session_refused_in_a_row is {limits.session_refused_in_a_row})"
            )
        elif self.calls >= limits.session_tool_calls:
            reason = f"{self.calls} tool calls (limits.session_tool_calls is {limits.session_tool_calls})"
        else:
            return
        self._stop(reason)

    def _stop(self, reason: str) -> None:
        """Refuse every later call with `reason` and hand the stop to the supervisor (once)."""
        if self.stopped:
            return
        self.stopped = reason
        log.warning("session capability %s stopped: %s", self.capability_id, self.stopped)
        if self._on_limit is not None:
            task = asyncio.get_running_loop().create_task(self._on_limit(self.stopped), name="session-limit")
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

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
            self.bound = await session_scope.load(reader, cap)
        self.caller = Caller("agent", "session", agent_id=cap.agent_id, session_id=cap.session_id, capability=cap)
        return self.bound


def build_server(
    runtime: Runtime,
    capability_id: str,
    *,
    page_size: int = mcp_adapter.PAGE_SIZE,
    on_limit: OnLimit | None = None,
) -> mcp_adapter.RoundtableServer:
    """The MCP server for one capability (tools filtered by role, calls checked; resources,
    prompts and completion limited to what the capability may read). `on_limit(reason)` is
    called once when the session passes one of its limits."""
    principal = CapabilityPrincipal(runtime, capability_id, on_limit)
    return mcp_adapter.build_server(runtime, principal, page_size=page_size)


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


class SessionEndpoint:
    """A running per-session endpoint; `await endpoint.close()` stops it and removes the socket."""

    def __init__(
        self, runtime: Runtime, capability_id: str, socket_path: Path, *, on_limit: OnLimit | None = None
    ) -> None:
        self.runtime = runtime
        self.capability_id = capability_id
        self.socket_path = socket_path
        self.on_limit = on_limit
        self.server: mcp_adapter.RoundtableServer | None = None
        self._embedded: Embedded | None = None

    def build_app(self) -> ASGIApp:
        """The endpoint's ASGI app: the capability check, then the MCP server at `/mcp`."""
        self.server = build_server(self.runtime, self.capability_id, on_limit=self.on_limit)
        app = self.server.streamable_http_app(
            streamable_http_path="/mcp",
            # Not network-reachable: the socket's directory is 0700, so no Host/Origin checks.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            host="localhost",
            max_request_body_size=self.runtime.config.mcp.http_max_body_bytes,
        )
        return authenticated(app, CapabilityBackend(self.runtime, self.capability_id))

    async def start(self) -> None:
        sock = bind_private_socket(self.socket_path)
        config = uvicorn.Config(
            self.build_app(),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
        self._embedded = Embedded(config, name=f"session-endpoint:{self.socket_path}")
        # The server's task must not inherit who started it (a launch over the legacy socket runs
        # as the operator): everything the endpoint writes acts for the session.
        acting = ACTING.set(("", ""))
        try:
            await self._embedded.start([sock], timeout=START_TIMEOUT)
        except EmbeddedStartError as exc:
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            raise ToolError(f"session endpoint did not start ({exc.reason})") from None
        finally:
            ACTING.reset(acting)

    async def close(self) -> None:
        if self.server is not None:
            self.server.hub.end_listens()  # 2026-07-28 listen streams are POSTs that never end by themselves
        if self._embedded is not None:
            await self._embedded.stop(STOP_TIMEOUT)
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
