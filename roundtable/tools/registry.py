"""The tool registry: the one source of every tool's name, description, schemas and hints.

Every operation that changes or reads the state is registered here — the MCP tools agents call
and the operations only the operator, a capability session or an in-process component (the
Chair, the session supervisor, the autopilot dispatcher) may run. Discovery (`tools/list`), the
generated assets (`tools.schema.json`, the manifest, `server.json`) and dispatch in
`Runtime.call` all read the registry, and one field of each spec, its **audience**, decides who
may call it (see `Audience`). Operations are declared in the group modules (`tools/table.py`,
`tools/tasks.py`, …); the MCP tools are ordered by the reference's declaration order.
`repo.dependency_context` is registered but not advertised (it has no handler).

Each operation declares its arguments once, as an `Args` model (`services/args.py`): its input
schema is generated from it (`tools/schema.py`), `Runtime.call` validates through it, and the
handler receives the validated model. Every argument is bounded by its type (an integer
SQLite's 64-bit range, a number the finite float range, a string a `maxLength` by what it
holds, an array a `maxItems`). The generated assets show every bound; `tools/list` leaves the
generic ceilings out (`listed_schema`) and the server applies them all the same.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from roundtable.services.args import (
    COMMAND_MAX,
    FLOAT_MAX,
    ID_MAX,
    INT_MAX,
    INT_MIN,
    ITEMS_MAX,
    PATCH_MAX,
    PATH_MAX,
    QUERY_MAX,
    RESOURCE_ID_MAX,
    SYMBOL_MAX,
    TEXT_MAX,
    TITLE_MAX,
    WORD_MAX,
    Args,
)
from roundtable.tools.schema import input_schema

if TYPE_CHECKING:
    import sqlite3

    from roundtable.tools.context import Call

Handler = Callable[["Call"], Awaitable[dict[str, Any]]]
Prepare = Callable[["Call"], Awaitable[None]]
# A read answered by one plain function of the connection and the call's arguments (it runs on
# the connection's own thread; `roundtable/store/rows.py` has the lookups it needs).
PointRead = Callable[["sqlite3.Connection", Any], dict[str, Any]]
TxMode = Literal["write", "read", "none"]
Audience = Literal["mcp", "mcp-operator", "session", "operator", "internal"]
"""Who may call an operation, and where it is listed:

- `mcp`: advertised over MCP (HTTP, the stdio bridge, the legacy socket); any authenticated
  caller (an anonymous one only when the tool is read-only; identity arguments bound to the agent).
- `mcp-operator`: advertised (the reference lists them: `patch.apply`, `patch.reject`) but only
  callers with operator authority may run them.
- `session`: only on a capability session whose role allows it (`test.evidence.submit`).
- `operator`: operator authority only (CLI, console, the same-uid legacy socket, an operator
  token), never advertised.
- `internal`: in-process components only (the Chair, the supervisor, the dispatcher); no
  transport can name it — to anyone else it does not exist.
"""
ADVERTISED: frozenset[str] = frozenset({"mcp", "mcp-operator"})
OPERATOR_AUDIENCES: frozenset[str] = frozenset({"mcp-operator", "operator", "internal"})
SESSION_AUDIENCES: frozenset[str] = frozenset({"mcp", "session"})  # a capability session's role filters further

# The operations `Runtime.call` opens no transaction for (`mode="none"`), each with why: they touch
# no database, or they run work that must not hold a transaction or the write lock (git, a
# subprocess, file hashing, a wait) between database phases of their own. Every other operation
# runs inside the one write transaction or read snapshot `Runtime.call` opens around its handler;
# a test holds the declarations to this list.
OWN_TRANSACTIONS: Mapping[str, str] = MappingProxyType(
    {
        "repo.read_file": "reads the working tree, not the database",
        "repo.search": "reads the working tree, not the database",
        "repo.symbols": "reads the working tree, not the database",
        "patch.validate": "runs `git apply --check` between its snapshot and its write",
        "patch.apply": "writes its intent, runs git, then records the outcome (crash-safe phases)",
        "patch.rollback": "runs git between its check and its record",
        "resource.claim": "hashes the file off the writer; a refusal records its contention in a second transaction",
        "claim.reconcile": "hashes the claimed files between its snapshot and its write",
        "token.ensure": "reads and writes the credential file around its database phases",
        "transaction.recover": "runs git to finish or roll back an interrupted apply between records",
        "session.launch": "drives the supervisor, which starts a process and makes calls of its own",
        "session.revoke": "drives the supervisor, which stops a process and makes calls of its own",
        "session.send": "drives the supervisor, which may resume a process and makes calls of its own",
        "test.run": "runs the test command (a subprocess) between its records",
        "test.suggest": "walks the working tree and parses the patch after its snapshot",
        "workspace.propose": "runs git in the workspace between its snapshot and its write",
        "workspace.sync": "runs git in the workspace between its snapshot and its write",
        "workspace.create": "adds a git worktree between its check and its record",
        "workspace.remove": "removes a git worktree between its check and its record",
        "workspace.sweep": "removes git worktrees, one record each",
        "workspace.list": "runs git for each workspace's diffstat after its snapshot",
        "landing.sync": "runs git and calls the forge between its records",
        "landing.refresh": "runs git and calls the forge for each open proposal, one record each",
        "table.watch": "a long poll: waits on the change bus between snapshots, holding no connection",
        "agent.turn_start": "polled: refuses an unscheduled start on a snapshot, writes only for an allowed one",
    }
)

# The reference registry's declaration order: the order of the advertised
# tools in `tools/list` and tools.schema.json. It decides nothing about who may call what.
REFERENCE_ORDER: tuple[str, ...] = (
    "decision.record",
    "agent.turn_request",
    "agent.turn_start",
    "agent.turn_complete",
    "human.approval_status",
    "human.request_approval",
    "memory.mark_stale",
    "memory.query",
    "memory.record",
    "memory.summarize",
    "patch.apply",
    "patch.reject",
    "patch.validate",
    "proposal.attach_patch",
    "proposal.comment",
    "proposal.create",
    "proposal.get",
    "proposal.list",
    "proposal.request_review",
    "repo.dependency_context",
    "repo.read_file",
    "repo.search",
    "repo.symbols",
    "resource.claim",
    "resource.claim_status",
    "resource.get",
    "resource.release",
    "resource.search",
    "security.review",
    "table.get_state",
    "table.watch",
    "task.create",
    "task.get",
    "task.list",
    "task.update_status",
    "test.get_result",
    "test.run",
    "test.suggest",
    "vote.cast",
    "vote.list",
    "workspace.create",
    "workspace.propose",
    "workspace.sync",
)


# --- what `tools/list` shows ---------------------------------------------------------------

# The maxLength every string argument of that name gets from its type (`services/args.py`): generic
# ceilings `tools/list` leaves out (the server applies them all the same).
_WORDS = frozenset(
    {"status", "risk", "vote", "claim_type", "resource_type", "resume_policy", "language", "kind", "outcome"}
)
_BY_NAME: dict[str, int] = {
    "path": PATH_MAX,
    "readable_paths": PATH_MAX,
    "scope": PATH_MAX,
    "resource_id": RESOURCE_ID_MAX,
    "affected_resources": RESOURCE_ID_MAX,
    "symbol": SYMBOL_MAX,
    "title": TITLE_MAX,
    "subject": TITLE_MAX,
    "query": QUERY_MAX,
    "command": COMMAND_MAX,
    "expected_tests": COMMAND_MAX,
    "revision": ID_MAX,
    "base_hash": ID_MAX,
    "cursor": 4096,  # = paging's cursor bound, so listings need not repeat it
    "patch": PATCH_MAX,
}


def string_limit(name: str) -> int:
    """The generic `maxLength` of a string argument (or array item) called `name`."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name.endswith(("_id", "_by")):
        return ID_MAX
    if name in _WORDS:
        return WORD_MAX
    return TEXT_MAX


def listed_schema(schema: dict[str, Any], name: str = "") -> dict[str, Any]:
    """`schema` as `tools/list` shows it: without the generic bounds every argument's type gives
    it (64-bit integers, finite numbers, a `maxLength` by what the argument holds, 10,000
    items) — the server applies them all the same, and `tools.schema.json` shows them. Bounds a
    tool declares (`confidence` 0..1, `start_line` ≥ 1) stay."""
    out = dict(schema)
    kind = out.get("type")
    if kind == "integer":
        if out.get("minimum") == INT_MIN:
            del out["minimum"]
        if out.get("maximum") == INT_MAX:
            del out["maximum"]
    elif kind == "number":
        if out.get("minimum") == -FLOAT_MAX:
            del out["minimum"]
        if out.get("maximum") == FLOAT_MAX:
            del out["maximum"]
    elif kind == "string":
        if out.get("maxLength") == string_limit(name):
            del out["maxLength"]
    elif kind == "array":
        if out.get("maxItems") == ITEMS_MAX:
            del out["maxItems"]
        if isinstance(out.get("items"), dict):
            out["items"] = listed_schema(out["items"], name)
    elif kind == "object" and isinstance(out.get("properties"), dict):
        out["properties"] = {key: listed_schema(value, key) for key, value in out["properties"].items()}
        out.pop("additionalProperties", None)  # unknown arguments are refused, naming the allowed ones
    return out


def point_handler(fn: PointRead) -> Handler:
    """The handler of a point read (`ToolSpec.point_read`): `fn` inside the call's read snapshot,
    for callers that run handlers themselves."""

    async def handler(call: Call) -> dict[str, Any]:
        return await call.r.run(fn, call.args)

    return handler


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """One operation. `args` is the model of its arguments (`services/args.py`): the registry
    generates `input_schema` from it, `Runtime.call` validates through it and the handler gets
    the instance as `call.args`. `mode` says which transaction `Runtime.call` opens around the
    handler: `write` (one BEGIN IMMEDIATE transaction, `call.tx`; `urgent` puts it on the
    writer's urgent lane), `read` (one snapshot, `call.reader`) or `none` (none: only the
    operations of `OWN_TRANSACTIONS`, which say why)."""

    name: str
    description: str
    args: type[Args]
    output_schema: dict[str, Any]
    handler: Handler | None
    input_schema: dict[str, Any] = field(default_factory=dict)  # generated from `args`
    mode: TxMode = "write"
    urgent: bool = False
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    audience: Audience = "mcp"
    # Arguments only the operator may use (deciding an approval, running unsandboxed, …): the
    # services refuse them to anyone else, and `tools/list` does not show them to agents.
    operator_args: frozenset[str] = field(default_factory=frozenset)
    # Arguments an agent seldom needs (an id it could choose itself, a tuning knob): `tools/list`
    # does not show them to agents, whose every session reads the listing; they are accepted all
    # the same and documented in the generated assets.
    rare_args: frozenset[str] = field(default_factory=frozenset)
    # What an agent reads of a result over MCP (`mcp_adapter.tool_result`), when that is less than
    # the whole: the fields it acts on (in-process callers and the operator get the whole result).
    # It is given the call's arguments too (what only repeats them may go).
    agent_view: Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]] | None = None
    # Set for a `read` answered by one sync function (`point_handler`): `Runtime.call` runs it
    # whole on a reader's thread, snapshot included, in one hop (`Database.read_call`).
    point_read: PointRead | None = None
    # Work a write needs that touches no database (parsing a patch, asking git): `Runtime.call`
    # runs it after validation and before the write transaction opens, so the write lock is not
    # held for it; it leaves what it made in `call.notes`.
    prepare: Prepare | None = None
    # Top-level string results that MCP gives as text blocks of their own after the JSON of the
    # rest (a diff reads as a diff, not as an escaped JSON string); `structuredContent` keeps them.
    text_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.input_schema:
            object.__setattr__(self, "input_schema", input_schema(self.args))

    @property
    def advertised(self) -> bool:
        """Listed by MCP discovery: an `mcp`/`mcp-operator` operation with a handler."""
        return self.audience in ADVERTISED and self.handler is not None

    @property
    def operator_only(self) -> bool:
        """Only callers with operator authority may run it."""
        return self.audience in OPERATOR_AUDIENCES

    def callable_by(self, *, operator: bool, anonymous: bool) -> bool:
        """Whether a caller of that kind may run this advertised tool (`Runtime.authorise`'s
        rules): what `tools/list` shows it, so nobody is shown a tool only to be refused."""
        if operator:
            return True
        if self.operator_only:
            return False
        return self.read_only or not anonymous

    @property
    def mcp_name(self) -> str:
        return self.name.replace(".", "_")

    def advertised_name(self, style: str) -> str:
        return self.name if style == "dotted" else self.mcp_name

    def description_for(self, style: str) -> str:
        """The description with every tool named as a client of `style` sees it."""
        return render_tool_names(self.description, style)

    @property
    def annotations(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
        }

    @property
    def listed_annotations(self) -> dict[str, bool]:
        """The hints `tools/list` carries: only those that differ from MCP's defaults (readOnly
        false, destructive true, idempotent false). `openWorldHint` is left out: every tool
        acts on this project alone, which a client reads the same with or without it."""
        out: dict[str, bool] = {"readOnlyHint": True} if self.read_only else {"destructiveHint": self.destructive}
        if self.idempotent:
            out["idempotentHint"] = True
        return out


# The modules under `roundtable.tools` that declare operations (each exports `TOOLS`).
OPERATION_MODULES: tuple[str, ...] = (
    "table",
    "tasks",
    "repo",
    "resources",
    "proposals",
    "patches",
    "approvals",
    "testing",
    "memory",
    "operator_ops",
    "sessions_ops",
    "autopilot_ops",
    "chair_ops",
    "runs_ops",
    "workspaces",
    "usage_ops",
    "gateway_ops",
    "landing_ops",
)


def _collect() -> dict[str, ToolSpec]:
    specs: dict[str, ToolSpec] = {}
    for module_name in OPERATION_MODULES:
        module = importlib.import_module(f"roundtable.tools.{module_name}")
        for spec in module.TOOLS:
            if spec.name in specs:
                raise RuntimeError(f"tool {spec.name} declared twice")
            # Descriptions name other tools the way most clients are given them (underscore, the
            # default `mcp.tool_names`); `description_for("dotted")` gives the dotted wording.
            specs[spec.name] = replace(
                spec,
                description=render_tool_names(spec.description, "underscore"),
            )
    listed = {name for name, spec in specs.items() if spec.audience in ADVERTISED}
    if listed != set(REFERENCE_ORDER):
        missing = sorted(set(REFERENCE_ORDER) - listed)
        extra = sorted(listed - set(REFERENCE_ORDER))
        raise RuntimeError(f"MCP tools differ from the reference: missing {missing}, unexpected {extra}")
    order = {name: i for i, name in enumerate(REFERENCE_ORDER)}
    return dict(sorted(specs.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


class Registry:
    """All tools by canonical name, with lookup by either spelling."""

    def __init__(self, specs: dict[str, ToolSpec]) -> None:
        self._specs = specs
        self._by_any_name: dict[str, ToolSpec] = {}
        for spec in specs.values():
            self._by_any_name[spec.name] = spec
            self._by_any_name[spec.mcp_name] = spec

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def lookup(self, name: str) -> ToolSpec | None:
        """Find a tool by its dotted or underscore name (exact, case-sensitive)."""
        return self._by_any_name.get(name)

    def exposed(self) -> list[ToolSpec]:
        """The tools MCP discovery lists (42: the reference's 41 and workspace.create), in its order."""
        return [s for s in self._specs.values() if s.advertised]

    def for_audience(self, *audiences: Audience) -> list[ToolSpec]:
        """The operations of the given audiences, with handlers."""
        return [s for s in self._specs.values() if s.audience in audiences and s.handler is not None]

    def names(self) -> list[str]:
        return list(self._specs)


_REGISTRY: Registry | None = None
_NAME_PATTERN: re.Pattern[str] | None = None
# The names texts for agents may mention (the MCP tools and the session-only ones); `REFERENCE_ORDER`
# plus the session tools, so rendering never needs the registry built.
_AGENT_FACING: tuple[str, ...] = (*REFERENCE_ORDER, "test.evidence.submit", "patch.rollback")


def render_tool_names(text: str, style: str = "underscore") -> str:
    """`text` with every tool name (either spelling, as a whole word) written the way MCP clients
    of `style` are given it: `agent_turn_request` (underscore, the default) or
    `agent.turn_request` (dotted). The one place texts meant for agents get their tool names —
    descriptions, the manifest, AGENTS.ROUNDTABLE.md — so none is hand-edited per style. Event
    types such as `agent.turn_scheduled` are not tool names and are left alone."""
    global _NAME_PATTERN
    names = _AGENT_FACING
    if _NAME_PATTERN is None:
        spellings = sorted({n for name in names for n in (name, name.replace(".", "_"))}, key=len, reverse=True)
        _NAME_PATTERN = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in spellings) + r")(?![\w]|\.\w)")
    dotted = {name.replace(".", "_"): name for name in names}

    def one(match: re.Match[str]) -> str:
        name = dotted.get(match.group(1), match.group(1))
        return name if style == "dotted" else name.replace(".", "_")

    return _NAME_PATTERN.sub(one, text)


def get_registry() -> Registry:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry(_collect())
    return _REGISTRY
