"""What a tool handler receives: the arguments, the caller and the transaction to use.

`Caller` is the authenticated principal: who is calling is decided by the
transport that authenticated the request — never by the arguments. `Call.actor` is the one place
a handler asks "which agent is acting"; `Runtime.call` has already filled and checked every
argument that names who acts (`agent_id`, `actor_id`, `decided_by`, …) against the principal.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from roundtable.services.coordination.session_scope import Scope
from roundtable.services.project import Project
from roundtable.services.run_scope import RunHint
from roundtable.store.db import Reader, Tx

if TYPE_CHECKING:
    from roundtable.bus import ChangeBus
    from roundtable.store.records import SessionCapability

CallerKind = Literal["operator", "agent", "internal"]
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Caller:
    """Who is calling. Operator authority belongs to in-process callers (CLI, console), the
    legacy socket (same-uid peers), HTTP with an operator token, and the internal components (the
    Chair, the session supervisor, the autopilot dispatcher: kind `internal`, the only callers of
    `internal` operations; their principal is the component's name). An agent caller is bound to
    one agent (`agent_id`: an agent token, or a session capability whose own socket it uses); an
    agent caller without an agent id is anonymous (an unbound credential, or the explicit no-auth
    opt-out) and may call read-only tools only.

    `run_id` is the caller's own run (the console's selected run, the Chair's ticking run): the
    run its changes belong to when neither the arguments, a capability nor the object acted on
    names one (`services.run_scope`). In-process callers set it with `with_run`."""

    kind: CallerKind
    transport: str
    agent_id: str = ""
    session_id: str = ""
    capability: SessionCapability | None = None
    run_id: str = ""

    def with_run(self, run_id: str) -> Caller:
        """This caller acting for run `run_id` (its own run; see `services.run_scope`)."""
        return replace(self, run_id=run_id)

    @property
    def run_hint(self) -> RunHint:
        """What this caller says about the run of its changes: its capability's run, and its own."""
        cap = self.capability
        return RunHint(named=cap.run_id if cap is not None else "", caller=self.run_id)

    @property
    def is_operator(self) -> bool:
        """Operator authority: the operator, or an internal component acting for the table."""
        return self.kind in ("operator", "internal")

    @property
    def is_internal(self) -> bool:
        """An in-process component (Chair, supervisor, dispatcher)."""
        return self.kind == "internal"

    @property
    def is_anonymous(self) -> bool:
        """An agent caller bound to no agent: read-only tools only."""
        return not self.is_operator and not self.agent_id

    @property
    def principal(self) -> str:
        """The authenticated principal, as events record it: `operator`, the internal component's
        name (`chair`, `supervisor`, `dispatcher`), `agent:<id>` for a caller bound to one agent,
        `anonymous` for an unbound agent caller."""
        if self.is_internal:
            return self.transport
        if self.is_operator:
            return "operator"
        return f"agent:{self.agent_id}" if self.agent_id else ANONYMOUS

    @property
    def actor(self) -> str:
        """The name recorded as actor for this caller: its agent id, else the internal
        component's name, `operator` or `anonymous`."""
        if self.agent_id:
            return self.agent_id
        if self.is_internal:
            return self.transport
        return "operator" if self.is_operator else ANONYMOUS


OPERATOR = Caller("operator", "cli")
CHAIR = Caller("internal", "chair", agent_id="chair-1")
SUPERVISOR = Caller("internal", "supervisor")
DISPATCHER = Caller("internal", "dispatcher")
GATEWAY = Caller("internal", "gateway")


class Host(Project, Protocol):
    """What a handler may use of the runtime running it: the project (root, database,
    configuration, policy) and the change bus. Anything a layer above provides (the session
    supervisor) is read from it by name (`tools/sessions_ops.py`), never imported."""

    @property
    def bus(self) -> ChangeBus: ...


A = TypeVar("A")


@dataclass
class Call(Generic[A]):
    """One tool call in progress: `args` is the operation's validated `Args` model (a handler
    declares it: `call: Call[CreateArgs]`). `tx` is set for write-mode tools, `reader` for
    read-mode ones."""

    runtime: Host
    tool: str
    args: A
    caller: Caller
    tx: Tx | None = None
    reader: Reader | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def agent_id(self) -> str:
        """The agent the caller is bound to; `""` for the operator and anonymous callers."""
        return "" if self.caller.is_operator else self.caller.agent_id

    @property
    def actor(self) -> str:
        """Who is acting, as events and records name it: the bound agent, else the operator
        caller's name (`operator`, or `chair-1` for the Chair)."""
        return self.caller.actor

    @property
    def session_id(self) -> str:
        cap = self.caller.capability
        return self.caller.session_id or (cap.session_id if cap is not None else "")

    @property
    def scope(self) -> Scope | None:
        """What a capability session may read (`services.coordination.session_scope`); None for every other
        caller. List reads pass it on so that a session's lists hold only its own work."""
        cap = self.caller.capability
        return Scope.of(cap) if cap is not None and not self.caller.is_operator else None

    @property
    def run_hint(self) -> RunHint:
        """What this call says about the run of its changes: its `run_id` argument where the tool
        has one, else the capability's run; and the caller's own run (`services.run_scope`)."""
        hint = self.caller.run_hint
        given = self.args.get("run_id") if isinstance(self.args, dict) else getattr(self.args, "run_id", None)
        return replace(hint, named=given.strip()) if isinstance(given, str) and given.strip() else hint

    @property
    def w(self) -> Tx:
        """The write transaction (write-mode tools only)."""
        assert self.tx is not None, f"{self.tool} is not a write-mode tool"
        return self.tx

    @property
    def r(self) -> Reader | Tx:
        """Whatever connection this call reads through."""
        if self.reader is not None:
            return self.reader
        assert self.tx is not None, f"{self.tool} has no open transaction"
        return self.tx
