"""What a tool handler receives: the arguments, the caller and the transaction to use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from roundtable.store.db import Reader, Tx

if TYPE_CHECKING:
    from roundtable.runtime import Runtime
    from roundtable.store.records import SessionCapability

CallerKind = Literal["operator", "agent"]


@dataclass(frozen=True)
class Caller:
    """Who is calling. Operator authority belongs to in-process callers (CLI, console, Chair) and
    the legacy socket (same-uid peers); HTTP and session callers are agents. On a capability
    session `agent_id` comes from the token and arguments naming another agent are refused."""

    kind: CallerKind
    transport: str
    agent_id: str = ""
    session_id: str = ""
    capability: SessionCapability | None = None

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"

    @property
    def principal(self) -> str:
        """The authenticated principal, as events record it: `operator`, `chair`,
        `agent:<id>` for a caller bound to one agent, `anonymous` for an unbound agent caller."""
        if self.is_operator:
            return "chair" if self.transport == "chair" else "operator"
        return f"agent:{self.agent_id}" if self.agent_id else "anonymous"

    @property
    def actor(self) -> str:
        """The name recorded as actor for this caller when no agent id is given."""
        return self.agent_id or ("operator" if self.is_operator else "agent")


OPERATOR = Caller("operator", "cli")
CHAIR = Caller("operator", "chair", agent_id="chair-1")


@dataclass
class Call:
    """One tool call in progress. `tx` is set for write-mode tools, `reader` for read-mode ones."""

    runtime: Runtime
    tool: str
    args: dict[str, Any]
    caller: Caller
    tx: Tx | None = None
    reader: Reader | None = None
    notes: dict[str, Any] = field(default_factory=dict)

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
