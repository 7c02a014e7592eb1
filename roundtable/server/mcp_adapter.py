"""The one MCP server: the SDK's low-level `Server` bound to `Runtime.call`.

`RoundtableServer(runtime, principals)` is the server of both HTTP endpoints: a subclass of the
SDK's `Server` whose request handlers are its own methods, registered when it is constructed
(`build_server` makes one). `Principals` is what differs between the endpoints — who the caller
of a request is and which tools it is shown: `TokenPrincipals` for the shared endpoint (the
caller the bearer token resolved to, the advertised tools it may call) and
`sessions.CapabilityPrincipal` for a capability session (the session's agent, its role's tools
with the identity arguments it gets for free). Both serve:

- **tools**: `tools/list` (names in the configured style, description, input schema,
  annotations; sized for agents, see `tool_model`), paginated by an opaque cursor; `tools/call` accepts both spellings and
  runs through the principal's `Access` (`Runtime.call`, which has already redacted every error
  text). A tool failure is a result with `is_error=True`; an unknown tool is a JSON-RPC
  invalid-params error; anything else is logged and answered with a generic text — the SDK would
  otherwise send the exception text to handshake-era clients.
- **resources** (`server/resources.py`): list, templates, read — every read is the read tool's
  result for the same principal — and `resources/subscribe` with pushes from `server/push.py`;
  2026-07-28 clients use `subscriptions/listen` instead.
- **prompts** (`server/prompts.py`): one per role and `resume`.
- **completion** of prompt and resource-template arguments: only ids the caller may read.
- **logging**: `logging/setLevel` (handshake era) opts a connection in to `notifications/message`.
- **instructions** in the `initialize` result: the workflow, tool names as listed.

The server's version is the installed package's (`importlib.metadata`).
"""

from __future__ import annotations

import base64
import contextlib
import importlib.metadata
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import mcp_types as types
import yaml
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError

from roundtable.errors import NotFound, RoundtableError
from roundtable.runtime import IDENTITY_ARGS, Runtime
from roundtable.server import prompts, push, resources, sdk
from roundtable.server.guard import caller_of, credential_of
from roundtable.server.rendering import readable, unechoed, unempty
from roundtable.server.resources import Access, Bound
from roundtable.services.redact import redact
from roundtable.services.run_scope import active_runs
from roundtable.tools import roles
from roundtable.tools.context import Caller
from roundtable.tools.registry import ADVERTISED, Registry, ToolSpec, get_registry, listed_schema

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger("roundtable.server.mcp")

SERVER_NAME = "roundtable"
INTERNAL_ERROR_TEXT = "internal error; the owner's log has details"
PAGE_SIZE = 100  # items per tools/list, resources/list, … page
RESOURCE_NOT_FOUND = -32002  # MCP's code for an unknown resource
SUBSCRIPTION_ID_META_KEY = "io.modelcontextprotocol/subscriptionId"
# What a caller of the shared endpoint may name: the advertised tools, and the operator
# operations an operator token may run (`Runtime.call` refuses them to agents).
HTTP_AUDIENCES = ADVERTISED | {"operator"}

Ctx = ServerRequestContext[Any, Any]
T = TypeVar("T")


def server_version() -> str:
    """The installed roundtable's version (the package metadata), as `serverInfo` states it."""
    try:
        return importlib.metadata.version("roundtable")
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        from roundtable import __version__

        return __version__


def tool_model(
    spec: ToolSpec, style: str, input_schema: dict[str, Any] | None = None, *, rare: bool = False
) -> types.Tool:
    """One tool as `tools/list` gives it, sized for the agent that reads it: the input schema
    without the generic ceilings (`registry.listed_schema`), only the annotations that differ from
    MCP's defaults, and no output schema (results carry `structuredContent` all the same; the
    full schemas are in `tools.schema.json`). `rare`: the arguments the schema leaves out as rare,
    named in the tool's `_meta` (for `rt`, which asks for them)."""
    hints = spec.listed_annotations
    schema = input_schema if input_schema is not None else spec.input_schema
    return types.Tool(
        name=spec.advertised_name(style),
        description=spec.description,
        input_schema=listed_schema(schema),
        _meta=_rare_meta(spec, schema) if rare else None,
        annotations=types.ToolAnnotations(
            read_only_hint=hints.get("readOnlyHint"),
            destructive_hint=hints.get("destructiveHint"),
            idempotent_hint=hints.get("idempotentHint"),
            open_world_hint=hints.get("openWorldHint"),
        ),
    )


# A `tools/list` whose request `_meta` holds this key true names, in each tool's `_meta` under the
# same key, the rare arguments its input schema leaves out (`rt` asks: `rt TOOL --help` shows them
# and it accepts them). Other listings stay as they are: what a harness reads is unchanged.
RARE_ARGS_META = "io.roundtable/rare_args"


def _rare_meta(spec: ToolSpec, listed: dict[str, Any]) -> dict[str, Any] | None:
    """`{RARE_ARGS_META: {name: schema}}` for the rare arguments `listed` leaves out (None: none)."""
    properties, shown = spec.input_schema.get("properties", {}), listed.get("properties", {})
    rare = {name: properties[name] for name in sorted(spec.rare_args) if name in properties and name not in shown}
    return {RARE_ARGS_META: listed_schema({"type": "object", "properties": rare})["properties"]} if rare else None


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def tool_result(
    spec: ToolSpec,
    result: dict[str, Any],
    *,
    structured: bool = True,
    args: dict[str, Any] | None = None,
    agent_id: str = "",
) -> types.CallToolResult:
    """A tool's result. Each non-empty field the tool names in `text_fields` (a diff, say) is a
    text block of its own after the first, read as what it is instead of an escaped string.

    `structured` (callers with operator authority): the first block is the JSON of the rest and
    `structuredContent` the whole result, as the specification describes. Otherwise (agents) the
    first block is the compact rendering a model reads (`rendering.readable`) and there is no
    `structuredContent`: a harness hands its model one of the two, and Claude Code picks
    `structuredContent` when it is there. What it reads of the result of a tool roundtable ships
    is the result without what the agent said itself in `args` or is (`agent_id`;
    `rendering.unechoed`), then the tool's `agent_view` of that when it has one, without the
    fields left empty (`rendering.unempty`); an embedder's tool's result is its own (its
    `agent_view` alone)."""
    if not structured:
        ours = get_registry().lookup(spec.name) is not None
        if ours:
            result = unechoed(result, args or {}, agent_id, IDENTITY_ARGS)
        if spec.agent_view is not None:
            result = spec.agent_view(result, args or {})
        if ours:
            result = unempty(result)
    texts = [key for key in spec.text_fields if isinstance(result.get(key), str) and result[key]]
    header = {k: v for k, v in result.items() if k not in texts} if texts else result
    try:
        text = json.dumps(header, ensure_ascii=False, separators=(",", ":")) if structured else readable(header)
    except (TypeError, ValueError, yaml.YAMLError) as exc:
        log.error("encode %s result failed: %s", spec.name, type(exc).__name__)
        return _error_result(f"encode tool result: {type(exc).__name__}")
    content: list[types.ContentBlock] = [types.TextContent(text=text)]
    content.extend(types.TextContent(text=str(result[key])) for key in texts)
    return types.CallToolResult(content=content, structured_content=result if structured else None)


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


class Principals(Protocol):
    """Who calls an endpoint and which tools it is shown: what `build_server` is parameterised by."""

    @property
    def list_changes(self) -> bool:
        """Whether `notifications/resources/list_changed` is offered."""
        ...

    @property
    def bound(self) -> Bound | None:
        """What the caller is bound to (a capability session's ids), for the instructions."""
        ...

    @property
    def tool_state(self) -> Callable[[], Awaitable[Hashable]] | None:
        """The tool set the principal may call now (a change pushes `tools/list_changed`), or
        None when it never changes for a connection."""
        ...

    @property
    def tool_tables(self) -> frozenset[str]:
        """The tables whose changes may change `tool_state` (it is read again after them)."""
        ...

    def access(self, ctx: Ctx) -> Access:
        """The principal of one request (tool calls, resources, prompts, completion, pushes)."""
        ...

    async def tools(self, ctx: Ctx) -> list[tuple[ToolSpec, dict[str, Any]]]:
        """The tools `tools/list` shows this request's caller, each with its input schema as the
        caller sees it."""
        ...

    def listing_key(self, ctx: Ctx) -> Hashable | None:
        """What `tools/list` depends on besides the registry and the name style, when that is all
        (its listing is then built once and kept); None when it is built per request."""
        ...

    def nameable(self, name: str) -> ToolSpec | None:
        """The tool a `tools/call` may name (either spelling); None: an unknown tool."""
        ...

    async def prepare(self) -> None:
        """Run once before the first request (the server's lifespan)."""
        ...


class HttpAccess:
    """A shared-endpoint principal: calls are `Runtime.call` with the caller the bearer token
    resolved to.

    `live()` re-resolves the credential the connection presented (at most once a second), so a
    revoked agent or operator token, or a disabled agent, stops receiving pushes on a GET stream
    it opened before: authentication refuses its next request, the stream is already open."""

    bound: Bound | None = None
    LIVE_CACHE_SECONDS = 1.0

    def __init__(self, runtime: Runtime, caller: Caller, token: str = "") -> None:
        self.runtime = runtime
        self.caller = caller
        self._token = token
        self._checked_at = -1e9
        self._live = True

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self.runtime.call(tool, args, self.caller)
        return result

    async def check(self, tool: str, args: dict[str, Any]) -> None:
        spec = self.runtime.resolve(tool, self.caller)
        self.runtime.validate(spec, self.runtime.authorise(spec, args, self.caller))

    async def live(self) -> bool:
        if self.caller.is_anonymous or not self._token:
            return True  # nothing bound to revoke: anonymous reads are open to every credential
        now = time.monotonic()
        if now - self._checked_at < self.LIVE_CACHE_SECONDS:
            return self._live
        from roundtable.services.sessions import tokens

        async with self.runtime.db.read() as reader:
            found = await tokens.resolve(reader, self._token)
        if self.caller.is_operator:
            self._live = found is not None and found[0] == tokens.OPERATOR
        else:
            self._live = found == (tokens.AGENT, self.caller.agent_id)
        self._checked_at = now
        return self._live


def agent_schema(spec: ToolSpec) -> dict[str, Any]:
    """A tool's input schema as an agent sees it: without the arguments that name who acts
    (`agent_id`, `decided_by`, …: its credential decides them, and naming anyone else is refused),
    without those only the operator may use (`spec.operator_args`) and without those it seldom
    needs (`spec.rare_args`, accepted all the same)."""
    schema = spec.input_schema
    properties = schema.get("properties", {})
    hidden = {name for name in (*IDENTITY_ARGS, *spec.operator_args, *spec.rare_args) if name in properties}
    if not hidden:
        return schema
    out = dict(schema)
    out["properties"] = {k: v for k, v in properties.items() if k not in hidden}
    if "required" in out:
        out["required"] = [k for k in out["required"] if k not in hidden]
    return out


# The query parameter of the shared endpoint's URL that names the session's kind
# (`/mcp?tools=workspace`: a harness with its own editor in its workspace; `tools/roles.py`).
KIND_PARAMETER = "tools"


def session_kind(ctx: Ctx) -> str:
    """The kind of session the request's URL names (`KIND_PARAMETER`); "" for any other value."""
    query = getattr(ctx.request, "query_params", None)
    kind = query.get(KIND_PARAMETER, "") if query is not None else ""
    return kind if kind in roles.KINDS else ""


class TokenPrincipals:
    """The shared endpoint: the caller is whoever the request's bearer credential names (put on
    the scope by `guard.TokenBackend`); each caller is shown the advertised tools it may call."""

    list_changes = True
    bound = None
    tool_tables = frozenset({"runs"})

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        # What an agent's listing depends on besides its role: whether a run is active (the turn
        # tools are listed only then); a change pushes `tools/list_changed` to who listed.
        self.tool_state: Callable[[], Awaitable[Hashable]] | None = self._runs_active

    async def _runs_active(self) -> Hashable:
        async with self.runtime.db.read() as reader:
            return bool(await active_runs(reader))

    def access(self, ctx: Ctx) -> HttpAccess:
        scope = getattr(ctx.request, "scope", None)
        return HttpAccess(self.runtime, caller_of(scope), credential_of(scope))

    async def tools(self, ctx: Ctx) -> list[tuple[ToolSpec, dict[str, Any]]]:
        """The advertised tools this caller may call, and for an agent of a known role only those
        its role usefully calls (`tools/roles.py`): an agent is not shown the operator's
        `patch_apply`/`patch_reject`, an anonymous connection only the read-only tools."""
        caller = caller_of(getattr(ctx.request, "scope", None))
        role, kind = roles.role_of(caller.agent_id), session_kind(ctx)
        in_run = caller.is_operator or bool(await self._runs_active())
        return [
            (spec, spec.input_schema if caller.is_operator else agent_schema(spec))
            for spec in self.runtime.registry.exposed()
            if spec.callable_by(operator=caller.is_operator, anonymous=caller.is_anonymous)
            and (caller.is_operator or roles.shows(role, spec.name, kind, in_run))
        ]

    def listing_key(self, ctx: Ctx) -> Hashable | None:
        """The listing depends only on the kind of caller (operator, agent or anonymous), an
        agent's role and its session's kind (`tools/roles.py`), and on the tool state (a run
        active or not), which `_listing` adds to the key."""
        caller = caller_of(getattr(ctx.request, "scope", None))
        if caller.is_operator:
            return (True, False, "", "")
        return (False, caller.is_anonymous, roles.role_of(caller.agent_id), session_kind(ctx))

    def nameable(self, name: str) -> ToolSpec | None:
        spec = self.runtime.registry.lookup(name)
        if spec is None or spec.handler is None or spec.audience not in HTTP_AUDIENCES:
            return None
        return spec

    async def prepare(self) -> None:
        return None


def _mcp_error(exc: RoundtableError) -> MCPError:
    """A JSON-RPC error for a refused resource, prompt or completion request. Its text may come
    from elsewhere than `Runtime.call` (a URI the resource layer refused, an authority check),
    so it passes the redactor here."""
    text = redact(str(exc))
    if isinstance(exc, NotFound):
        return MCPError(RESOURCE_NOT_FOUND, text)
    return MCPError(types.INVALID_PARAMS, text)  # refused, or an invalid argument


@contextlib.contextmanager
def _mapped(what: str) -> Iterator[None]:
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


def session_manager(server: Server[Any] | None) -> StreamableHTTPSessionManager | None:
    """The server's Streamable HTTP session manager, or None before its app was built."""
    try:
        return server.session_manager if server is not None else None
    except RuntimeError:
        return None


class RoundtableServer(Server[dict[str, Any]]):
    """The MCP server of one endpoint: the SDK's low-level `Server` whose request handlers are
    this class's methods, bound to `Runtime.call` through the callers `principals` describes.

    Instructions are computed when a client initializes (the tool-name style is configuration)
    and the list-changed capabilities follow the principals. The pushes (`push.Hub`) start and
    stop with the server's lifespan."""

    def __init__(
        self,
        runtime: Runtime,
        principals: Principals | None = None,
        *,
        tool_names: str | Callable[[], str] | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.runtime = runtime
        self.principals: Principals = principals if principals is not None else TokenPrincipals(runtime)
        self._tool_names = tool_names
        self.page_size = page_size
        # Built `tools/list` listings by the principals' listing key, with the registry and name
        # style they were built from (a new registry or style builds them again).
        self._listings: dict[Hashable, tuple[Registry, str, list[types.Tool]]] = {}
        self.hub = push.Hub(
            runtime,
            tool_state=self.principals.tool_state,
            tool_tables=self.principals.tool_tables,
            list_changes=self.principals.list_changes,
            stream_ready=self.stream_ready,
        )
        super().__init__(
            SERVER_NAME,
            version=server_version(),
            lifespan=self.lifespan,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            on_subscribe_resource=self.subscribe,
            on_unsubscribe_resource=self.unsubscribe,
            on_subscriptions_listen=self.listen,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_completion=self.complete,
            get_tool_input_schema=self.tool_input_schema,
        )
        # Registered after construction: the constructor argument warns that logging is deprecated
        # from 2026-07-28; handshake-era clients (most harnesses today) still use it.
        self.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)

    # -- what the SDK reads of the server --

    @property  # type: ignore[override]
    def instructions(self) -> str | None:
        return prompts.instructions(self.style(), self.principals.bound)

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
            resources_changed=self.principals.list_changes,
            tools_changed=self.principals.tool_state is not None,
        )
        return super().create_initialization_options(options, experimental_capabilities, extensions)

    def style(self) -> str:
        """The tool-name style: `tool_names` when given, else the configuration's
        `mcp.tool_names`, read per request so a reload takes effect."""
        names = self._tool_names
        if names is None:
            return str(self.runtime.config.mcp.tool_names)
        return names() if callable(names) else names

    def tool_input_schema(self, name: str) -> dict[str, Any] | None:
        spec = self.runtime.registry.lookup(name)
        return spec.input_schema if spec is not None else None

    @contextlib.asynccontextmanager
    async def lifespan(self, _server: Server[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        try:
            await self.principals.prepare()
        except Exception:  # served without the bound ids in the instructions
            log.exception("preparing the MCP endpoint failed")
        await self.hub.start()
        try:
            yield {}
        finally:
            await self.hub.stop()

    def stream_ready(self, connection: object) -> bool | None:
        """Whether the session's GET stream is connected (None when that cannot be told)."""
        sid = getattr(connection, "session_id", None)
        manager = session_manager(self)
        if manager is None or not sid:
            return None
        transport = sdk.session_transports(manager).get(sid)
        return None if transport is None else sdk.get_stream_open(transport)

    def _attach(self, ctx: Ctx, access: Access) -> push.Conn | None:
        return self.hub.attach(sdk.connection_of(ctx), access)

    # -- tools --

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        callers = self.principals
        rare = bool(params is not None and isinstance(params.meta, dict) and params.meta.get(RARE_ARGS_META))
        with _mapped("tools/list"):
            chosen_style = self.style()
            listed = await self._listing(ctx, chosen_style, rare=rare)
            conn = self._attach(ctx, callers.access(ctx)) if callers.tool_state is not None else None
            if conn is not None:
                conn.tools = True
        chosen, cursor = page(listed, params.cursor if params else None, "tools", self.page_size)
        return types.ListToolsResult(tools=chosen, next_cursor=cursor)

    async def _listing(self, ctx: Ctx, style: str, *, rare: bool = False) -> list[types.Tool]:
        """The tools this request's caller is shown, sorted by name; built once per listing key
        (with their rare arguments: each time, for `rt`)."""
        key = None if rare else self.principals.listing_key(ctx)
        if key is not None and self.principals.tool_state is not None:
            key = (key, await self.principals.tool_state())
        registry = self.runtime.registry
        kept = self._listings.get(key) if key is not None else None
        if kept is not None and kept[0] is registry and kept[1] == style:
            return kept[2]
        listed = sorted(
            (tool_model(spec, style, schema, rare=rare) for spec, schema in await self.principals.tools(ctx)),
            key=lambda tool: tool.name,
        )
        if key is not None:
            self._listings[key] = (registry, style, listed)
        return listed

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = self.principals.nameable(params.name)
        if spec is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
        access = self.principals.access(ctx)
        args = dict(params.arguments or {})
        try:
            result = await access.call(spec.name, dict(args))
        except RoundtableError as exc:  # Runtime.call (or the capability check) redacted it
            return _error_result(str(exc))
        except Exception:
            log.exception("tools/call %s failed", spec.name)
            return _error_result(f"{spec.name} failed with an internal error; the owner's log has details")
        caller = access.caller
        return tool_result(spec, result, structured=caller.is_operator, args=args, agent_id=caller.agent_id)

    # -- resources --

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        with _mapped("resources/list"):
            access = self.principals.access(ctx)
            listed = await resources.listing(self.runtime, access)
            if self.principals.list_changes:
                conn = self._attach(ctx, access)
                if conn is not None:
                    conn.resources_list = True
        chosen, cursor = page(listed, params.cursor if params else None, "resources", self.page_size)
        return types.ListResourcesResult(
            resources=[
                types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
                for r in chosen
            ],
            next_cursor=cursor,
        )

    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        chosen, cursor = page(resources.TEMPLATES, params.cursor if params else None, "templates", self.page_size)
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

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        with _mapped("resources/read"):
            content = await resources.read(self.runtime, self.principals.access(ctx), params.uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=content.uri, mime_type=content.mime_type, text=content.text)]
        )

    async def _authorised_ref(self, access: Access, text: str) -> resources.Ref:
        """The parsed URI once `access` has read it (subscribing needs the right to read)."""
        ref = resources.parse(text)
        if ref is None:
            raise NotFound("resource", text[:200])
        await resources.read(self.runtime, access, text)
        return ref

    async def subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        with _mapped("resources/subscribe"):
            access = self.principals.access(ctx)
            ref = await self._authorised_ref(access, params.uri)
            conn = self._attach(ctx, access)
            if conn is None:
                raise MCPError(types.INVALID_REQUEST, "this connection has no stream for notifications")
            self.hub.subscribe(conn, params.uri, ref)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        conn = self.hub.conns.get(id(sdk.connection_of(ctx)))
        if conn is not None:
            self.hub.unsubscribe(conn, params.uri)
        return types.EmptyResult()

    async def listen(self, ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        """`subscriptions/listen` (2026-07-28): the honoured subset is what the caller may read."""
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        callers = self.principals
        wanted = params.notifications
        access = callers.access(ctx)
        allowed: dict[str, resources.Ref] = {}
        for text in list(wanted.resource_subscriptions or [])[: push.MAX_SUBSCRIPTIONS]:
            with contextlib.suppress(RoundtableError):
                allowed[text] = await self._authorised_ref(access, text)
        honoured = types.SubscriptionFilter(
            tools_list_changed=True if wanted.tools_list_changed and callers.tool_state is not None else None,
            resources_list_changed=True if wanted.resources_list_changed and callers.list_changes else None,
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

        conn = self.hub.open_listen(access, outbound)
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
            self.hub.detach(conn.key)
        return types.SubscriptionsListenResult(_meta=meta)

    # -- prompts --

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        chosen, cursor = page(prompts.PROMPTS, params.cursor if params else None, "prompts", self.page_size)
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

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        with _mapped("prompts/get"):
            if params.name not in prompts.BY_NAME:
                raise MCPError(types.INVALID_PARAMS, f"unknown prompt: {params.name[:100]}")
            description, text = await prompts.render(
                self.runtime, self.principals.access(ctx), params.name, dict(params.arguments or {}), self.style()
            )
        return types.GetPromptResult(
            description=description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    # -- completion --

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        argument = params.argument.name
        prefix = params.argument.value
        context = dict(params.context.arguments or {}) if params.context else {}
        values: list[str] = []
        with _mapped("completion/complete"):
            access = self.principals.access(ctx)
            if isinstance(ref, types.PromptReference):
                spec = prompts.BY_NAME.get(ref.name)
                if spec is not None and argument in {a.name for a in spec.arguments}:
                    values = await resources.candidates(self.runtime, access, argument, context)
            else:
                template = resources.TEMPLATE_BY_URI.get(ref.uri)
                if template is not None and argument in template.arguments:
                    if argument == "path":
                        values = await resources.path_candidates(self.runtime, access, prefix)
                    else:
                        values = await resources.candidates(self.runtime, access, argument, context)
        shown, total = resources.complete(values, prefix)
        return types.CompleteResult(completion=types.Completion(values=shown, total=total, has_more=total > len(shown)))

    # -- logging --

    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        conn = self._attach(ctx, self.principals.access(ctx))
        if conn is not None:
            self.hub.set_level(conn, params.level)
        return types.EmptyResult()


def build_server(
    runtime: Runtime,
    principals: Principals | None = None,
    *,
    tool_names: str | Callable[[], str] | None = None,
    page_size: int = PAGE_SIZE,
) -> RoundtableServer:
    """The MCP server of one endpoint for the callers `principals` describes (default: the shared
    endpoint's `TokenPrincipals`); see `RoundtableServer`."""
    return RoundtableServer(runtime, principals, tool_names=tool_names, page_size=page_size)
