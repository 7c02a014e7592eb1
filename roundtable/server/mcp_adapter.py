"""The MCP SDK's low-level `Server` bound to `Runtime.call` (the module that speaks MCP types).

`build_server` is the HTTP endpoint's server; `make_server` builds one for any `Surface` (the
session endpoints bring their own tool listing, calls and principal). Both serve:

- **tools**: `tools/list` from the registry (names in the configured style, description, input
  and output schemas, annotations), paginated by an opaque cursor; `tools/call` accepts both
  spellings. A tool failure is a result with `is_error=True` and the (redacted) message; an
  unknown tool is a JSON-RPC invalid-params error; any other exception is logged and answered
  with a generic text — the SDK would otherwise send the exception text to handshake-era
  clients (notes §2.4).
- **resources** (`server/resources.py`): list, templates, read — every read is the read tool's
  result for the same principal — and `resources/subscribe` with pushes from `server/push.py`;
  2026-07-28 clients use `subscriptions/listen` instead.
- **prompts** (`server/prompts.py`): one per role and `resume`.
- **completion** of prompt and resource-template arguments: only ids the caller may read.
- **logging**: `logging/setLevel` (handshake era) opts a connection in to `notifications/message`.
- **instructions** in the `initialize` result: the workflow, tool names as listed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.streamable_http import GET_STREAM_KEY
from mcp.shared.exceptions import MCPError

from roundtable import __version__
from roundtable.errors import NotFound, RoundtableError
from roundtable.server import prompts, push, resources
from roundtable.server.guard import CALLER_SCOPE_KEY, HTTP_CALLER, bearer_token
from roundtable.server.resources import Access, Bound
from roundtable.services.redact import redact
from roundtable.tools.context import Caller
from roundtable.tools.registry import ToolSpec

log = logging.getLogger("roundtable.server.mcp")

SERVER_NAME = "roundtable"
INTERNAL_ERROR_TEXT = "internal error; the owner's log has details"
PAGE_SIZE = 100  # items per tools/list, resources/list, … page
RESOURCE_NOT_FOUND = -32002  # MCP's code for an unknown resource
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"

Ctx = ServerRequestContext[Any, Any]
T = TypeVar("T")


def _callable_specs(runtime: Any) -> dict[str, ToolSpec]:
    """Every tool an MCP caller may name, by both spellings."""
    specs: dict[str, ToolSpec] = {}
    for spec in runtime.registry.exposed():
        specs[spec.name] = spec
        specs[spec.mcp_name] = spec
    for spec in runtime.registry:
        if spec.audience == "operator":  # reachable by operator tokens only; runtime refuses agents
            specs.setdefault(spec.name, spec)
            specs.setdefault(spec.mcp_name, spec)
    return specs


def tool_model(spec: ToolSpec, style: str, input_schema: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(
        name=spec.advertised_name(style),
        description=spec.description,
        input_schema=input_schema if input_schema is not None else spec.input_schema,
        output_schema=spec.output_schema or None,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def _caller_of(ctx: Ctx) -> Caller:
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER_SCOPE_KEY) if isinstance(scope, dict) else None
    return caller if isinstance(caller, Caller) else HTTP_CALLER


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def tool_result(spec_name: str, result: dict[str, Any]) -> types.CallToolResult:
    try:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        log.error("encode %s result failed: %s", spec_name, type(exc).__name__)
        return _error_result(f"encode tool result: {type(exc).__name__}")
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)


def connection_of(ctx: Ctx) -> Any:
    """The SDK connection a request arrived on (its standalone channel carries pushes).

    `ServerRequestContext` does not expose it in SDK 2.3; `ServerSession` keeps it as
    `_connection` (a contract test pins this)."""
    return getattr(ctx.session, "_connection", None)


# --- pagination -----------------------------------------------------------------------------


def page(items: Sequence[T], cursor: str | None, kind: str, size: int) -> tuple[list[T], str | None]:
    """One page of `items` from an opaque `cursor` (base64 JSON of the list kind and offset);
    a cursor this server did not issue is an invalid-params error."""
    start = 0
    if cursor:
        try:
            data = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4)))
            if not isinstance(data, dict) or data.get("k") != kind or not isinstance(data.get("o"), int):
                raise ValueError
            start = int(data["o"])
            if start < 0 or start > len(items):
                raise ValueError
        except (ValueError, UnicodeError, TypeError):
            raise MCPError(types.INVALID_PARAMS, f"invalid cursor for {kind}: pass nextCursor unchanged") from None
    end = start + max(1, size)
    next_cursor = None
    if end < len(items):
        token = json.dumps({"k": kind, "o": end}, separators=(",", ":")).encode()
        next_cursor = base64.urlsafe_b64encode(token).decode("ascii").rstrip("=")
    return list(items[start:end]), next_cursor


# --- principals ------------------------------------------------------------------------------


class HttpAccess:
    """An HTTP principal: reads are `Runtime.call` with the caller the bearer guard resolved.

    `live()` re-resolves the credential the connection presented (at most once a second), so a
    revoked agent or operator token, or a disabled agent, stops receiving pushes on a GET stream
    it opened before: the guard refuses its next request, the stream is already open."""

    bound: Bound | None = None
    LIVE_CACHE_SECONDS = 1.0

    def __init__(self, runtime: Any, caller: Caller, token: str = "") -> None:
        self.runtime = runtime
        self.caller = caller
        self._token = token
        self._checked_at = -1e9
        self._live = True

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self.runtime.call(tool, args, self.caller)
        return result

    async def check(self, tool: str, args: dict[str, Any]) -> None:
        spec = self.runtime.resolve(tool)
        self.runtime.validate(spec, self.runtime.authorise(spec, args, self.caller))

    async def live(self) -> bool:
        if self.caller.is_anonymous or not self._token:
            return True  # nothing bound to revoke: anonymous reads are open to every credential
        now = time.monotonic()
        if now - self._checked_at < self.LIVE_CACHE_SECONDS:
            return self._live
        from roundtable.services import tokens

        async with self.runtime.db.read() as reader:
            found = await tokens.resolve(reader, self._token)
        if self.caller.is_operator:
            self._live = found is not None and found[0] == tokens.OPERATOR
        else:
            self._live = found == (tokens.AGENT, self.caller.agent_id)
        self._checked_at = now
        return self._live


def _http_access(runtime: Any, ctx: Ctx) -> HttpAccess:
    scope = getattr(ctx.request, "scope", None)
    presented = bearer_token(scope) if isinstance(scope, dict) else None
    try:
        token = presented.decode("ascii") if presented else ""
    except UnicodeDecodeError:
        token = ""
    return HttpAccess(runtime, _caller_of(ctx), token)


@dataclass
class Surface:
    """What differs between the HTTP endpoint and a session endpoint."""

    access: Callable[[Ctx], Access]
    list_tools: Callable[[Ctx], Awaitable[list[types.Tool]]]
    call_tool: Callable[[Ctx, types.CallToolRequestParams], Awaitable[types.CallToolResult]]
    instructions: Callable[[], str]
    style: Callable[[], str]
    tool_state: Callable[[], Awaitable[Hashable]] | None = None
    list_changes: bool = True
    version: str = __version__


class RoundtableServer(Server[Any]):
    """The SDK server with instructions computed when a client initializes (the tool-name style
    is configuration) and list-changed capabilities advertised."""

    def __init__(self, *args: Any, surface: Surface, hub: push.Hub, **kwargs: Any) -> None:
        self.surface = surface
        self.hub = hub
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def instructions(self) -> str | None:
        return self.surface.instructions()

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        pass  # always computed

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> Any:
        options = notification_options or NotificationOptions(
            prompts_changed=False,
            resources_changed=self.surface.list_changes,
            tools_changed=self.surface.tool_state is not None,
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)


def _mcp_error(exc: RoundtableError) -> MCPError:
    text = redact(str(exc))
    if isinstance(exc, NotFound):
        return MCPError(RESOURCE_NOT_FOUND, text)
    return MCPError(types.INVALID_PARAMS, text)  # refused, or an invalid argument


@contextlib.contextmanager
def _mapped(what: str) -> Any:
    """Turn our errors into JSON-RPC errors with safe messages; log anything else."""
    try:
        yield
    except MCPError:
        raise
    except RoundtableError as exc:
        raise _mcp_error(exc) from None
    except Exception:
        log.exception("%s failed", what)
        raise MCPError(types.INTERNAL_ERROR, INTERNAL_ERROR_TEXT) from None


def make_server(runtime: Any, surface: Surface, *, page_size: int = PAGE_SIZE) -> RoundtableServer:
    """A low-level MCP server serving tools, resources, prompts, completion and logging."""
    holder: dict[str, Any] = {}

    def stream_ready(connection: Any) -> bool | None:
        """Whether the session's GET stream is connected (None when that cannot be told).

        Reads the SDK transport's stream table (SDK 2.3 internals, as `http.SessionLimiter` does;
        a contract test pins them)."""
        manager = getattr(holder.get("server"), "_session_manager", None)
        sid = getattr(connection, "session_id", None)
        transport = getattr(manager, "_server_instances", {}).get(sid) if manager is not None and sid else None
        streams = getattr(transport, "_request_streams", None)
        return None if not isinstance(streams, dict) else GET_STREAM_KEY in streams

    hub = push.Hub(runtime, tool_state=surface.tool_state, list_changes=surface.list_changes, stream_ready=stream_ready)

    @contextlib.asynccontextmanager
    async def lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
        await hub.start()
        try:
            yield {}
        finally:
            await hub.stop()

    def attach(ctx: Ctx, access: Access) -> push.Conn | None:
        return hub.attach(connection_of(ctx), access)

    # -- tools --

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        with _mapped("tools/list"):
            tools = await surface.list_tools(ctx)
            conn = attach(ctx, surface.access(ctx)) if surface.tool_state is not None else None
            if conn is not None:
                conn.tools = True
        chosen, cursor = page(tools, params.cursor if params else None, "tools", page_size)
        return types.ListToolsResult(tools=chosen, next_cursor=cursor)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await surface.call_tool(ctx, params)

    # -- resources --

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        with _mapped("resources/list"):
            access = surface.access(ctx)
            listed = await resources.listing(runtime, access)
            if surface.list_changes:
                conn = attach(ctx, access)
                if conn is not None:
                    conn.resources_list = True
        chosen, cursor = page(listed, params.cursor if params else None, "resources", page_size)
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
                for r in chosen
            ],
            next_cursor=cursor,
        )

    async def list_templates(
        ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        chosen, cursor = page(resources.TEMPLATES, params.cursor if params else None, "templates", page_size)
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=t.uri_template,
                    name=t.name,
                    title=t.title,
                    description=t.description,
                    mime_type=t.mime_type,
                )
                for t in chosen
            ],
            next_cursor=cursor,
        )

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        with _mapped("resources/read"):
            content = await resources.read(runtime, surface.access(ctx), params.uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=content.uri, mime_type=content.mime_type, text=content.text)]
        )

    async def authorised_ref(access: Access, text: str) -> resources.Ref:
        """The parsed URI once `access` has read it (subscribing needs the right to read)."""
        ref = resources.parse(text)
        if ref is None:
            raise NotFound("resource", text[:200])
        await resources.read(runtime, access, text)
        return ref

    async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        with _mapped("resources/subscribe"):
            access = surface.access(ctx)
            ref = await authorised_ref(access, params.uri)
            conn = attach(ctx, access)
            if conn is None:
                raise MCPError(types.INVALID_REQUEST, "this connection has no stream for notifications")
            hub.subscribe(conn, params.uri, ref)
        return types.EmptyResult()

    async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        conn = hub.conns.get(id(connection_of(ctx)))
        if conn is not None:
            hub.unsubscribe(conn, params.uri)
        return types.EmptyResult()

    async def listen(ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        """`subscriptions/listen` (2026-07-28): the honoured subset is what the caller may read."""
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        wanted = params.notifications
        access = surface.access(ctx)
        allowed: dict[str, resources.Ref] = {}
        for text in list(wanted.resource_subscriptions or [])[: push.MAX_SUBSCRIPTIONS]:
            with contextlib.suppress(RoundtableError):
                allowed[text] = await authorised_ref(access, text)
        honoured = types.SubscriptionFilter(
            tools_list_changed=True if wanted.tools_list_changed and surface.tool_state is not None else None,
            resources_list_changed=True if wanted.resources_list_changed and surface.list_changes else None,
            resource_subscriptions=list(allowed) or None,
        )
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}

        async def outbound(method: str, wire: dict[str, Any] | None) -> None:
            stamped = dict(wire or {})
            stamped["_meta"] = {**(stamped.get("_meta") or {}), **meta}
            note: Any
            if method == "notifications/resources/updated":
                note = types.ResourceUpdatedNotification(
                    params=types.ResourceUpdatedNotificationParams.model_validate(stamped)
                )
            elif method == "notifications/tools/list_changed":
                note = types.ToolListChangedNotification(params=types.NotificationParams.model_validate(stamped))
            elif method == "notifications/resources/list_changed":
                note = types.ResourceListChangedNotification(params=types.NotificationParams.model_validate(stamped))
            else:
                return  # log messages never ride a listen stream
            await ctx.session.send_notification(note, related_request_id=subscription_id)

        conn = hub.open_listen(access, outbound)
        conn.subs.update(allowed)
        conn.tools = bool(honoured.tools_list_changed)
        conn.resources_list = bool(honoured.resources_list_changed)
        try:
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(notifications=honoured, _meta=meta)
                ),
                related_request_id=subscription_id,
            )
            await conn.drain()
        finally:
            hub.detach(conn.key)
        return types.SubscriptionsListenResult(_meta=meta)

    # -- prompts --

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        chosen, cursor = page(prompts.PROMPTS, params.cursor if params else None, "prompts", page_size)
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=p.name,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        types.PromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in p.arguments
                    ],
                )
                for p in chosen
            ],
            next_cursor=cursor,
        )

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        with _mapped("prompts/get"):
            if params.name not in prompts.BY_NAME:
                raise MCPError(types.INVALID_PARAMS, f"unknown prompt: {params.name[:100]}")
            description, text = await prompts.render(
                runtime, surface.access(ctx), params.name, dict(params.arguments or {}), surface.style()
            )
        return types.GetPromptResult(
            description=description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    # -- completion --

    async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        argument = params.argument.name
        prefix = params.argument.value
        context = dict(params.context.arguments or {}) if params.context else {}
        values: list[str] = []
        with _mapped("completion/complete"):
            access = surface.access(ctx)
            if isinstance(ref, types.PromptReference):
                spec = prompts.BY_NAME.get(ref.name)
                if spec is not None and argument in {a.name for a in spec.arguments}:
                    values = await resources.candidates(runtime, access, argument, context)
            else:
                template = resources.TEMPLATE_BY_URI.get(ref.uri)
                if template is not None and argument in template.arguments:
                    if argument == "path":
                        values = await resources.path_candidates(runtime, access, prefix)
                    else:
                        values = await resources.candidates(runtime, access, argument, context)
        shown, total = resources.complete(values, prefix)
        return types.CompleteResult(completion=types.Completion(values=shown, total=total, has_more=total > len(shown)))

    # -- logging --

    async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        conn = attach(ctx, surface.access(ctx))
        if conn is not None:
            hub.set_level(conn, params.level)
        return types.EmptyResult()

    server = RoundtableServer(
        SERVER_NAME,
        version=surface.version,
        lifespan=lifespan,
        surface=surface,
        hub=hub,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_subscriptions_listen=listen,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        get_tool_input_schema=lambda name: s.input_schema if (s := runtime.registry.lookup(name)) else None,
    )
    # Registered after construction: the constructor argument warns that logging is deprecated
    # from 2026-07-28; handshake-era clients (most harnesses today) still use it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    holder["server"] = server
    return server


def build_server(
    runtime: Any, *, tool_names: str | Callable[[], str] = "underscore", page_size: int = PAGE_SIZE
) -> RoundtableServer:
    """The HTTP endpoint's server: the registry's tools, any authenticated principal."""

    def style() -> str:
        return tool_names() if callable(tool_names) else tool_names

    async def list_tools(ctx: Ctx) -> list[types.Tool]:
        chosen = style()
        exposed = sorted(runtime.registry.exposed(), key=lambda s: s.advertised_name(chosen))
        return [tool_model(spec, chosen) for spec in exposed]

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
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
        return tool_result(spec.name, result)

    surface = Surface(
        access=lambda ctx: _http_access(runtime, ctx),
        list_tools=list_tools,
        call_tool=call_tool,
        instructions=lambda: prompts.instructions(style()),
        style=style,
    )
    return make_server(runtime, surface, page_size=page_size)
