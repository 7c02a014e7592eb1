"""The console's shared core: the state every part of the app reads (runtime, overview, the
main screen) and the helpers every operator flow uses — one guard for "is something suitable
selected", one audited tool call, one way to report an error.

Read-only refusals are not here: `RoundtableApp.check_action` hides and disables every mutating
command of the registry (keys, palette and footer alike), so no flow runs in a read-only console.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from functools import wraps
from typing import Any, TypeVar

from textual import work
from textual.app import App, ScreenStackError
from textual.css.query import NoMatches
from textual.reactive import var
from textual.screen import Screen

from roundtable import clock
from roundtable.autopilot import Dispatcher
from roundtable.runtime import Runtime
from roundtable.services.views.models import Overview
from roundtable.store.records import Proposal
from roundtable.tools.context import Caller
from roundtable.tui import layout
from roundtable.tui.messages import DialogClosed, RefreshRequested
from roundtable.tui.widgets.header import ConsoleHeader, OwnerInfo
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.table_pane import TablePane

CONSOLE = Caller("operator", "tui")
OPERATOR_NAME = "operator"

T = TypeVar("T")


def describe(exc: BaseException) -> str:
    """An exception as one line for a notification."""
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


def _pane_hint(names: str) -> str:
    """` (press 3)` for the pane(s) a refusal names ("Proposals", "Sessions (or an agent)")."""
    keys = [
        layout.pane_key(n)
        for n, (_pane_id, title) in enumerate(layout.PANES, start=1)
        if re.search(rf"\b{title}\b", names)
    ]
    return f" (press {' or '.join(keys)})" if keys else ""


def while_mounted(handler: Callable[..., None]) -> Callable[..., None]:
    """Skip a UI update that arrives while the console is tearing its widgets down."""

    @wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        with suppress(NoMatches, ScreenStackError):
            handler(*args, **kwargs)

    return wrapper


class ConsoleBase(App[None]):
    """The console's state and the helpers its flows and screen use (see `tui/app.py` for the whole)."""

    # What the panes show: the last refresh's read (`LiveConsole.watch_overview` shows each new one).
    overview: var[Overview | None] = var(None, always_update=True, init=False)

    def __init__(
        self,
        runtime: Runtime,
        *,
        run_id: str = "",
        chair: Any = None,
        dispatcher: Dispatcher | None = None,
        owner_info: OwnerInfo | None = None,
        read_only: bool = False,
        clock_ns: Callable[[], int] = clock.now_ns,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.run_id = run_id
        self.chair = chair
        self.dispatcher = dispatcher
        self.owner_info = owner_info or OwnerInfo(project=runtime.config.project_name)
        self.read_only = read_only
        self.clock_ns = clock_ns
        self.layout_single = False  # one pane at a time (see ConsoleScreen.apply_layout)
        self.dismissed: set[str] = set()  # "needs you" items the operator dismissed (AttentionItem.key)
        self._main_screen: Screen[Any] | None = None

    # --- where things are ---------------------------------------------------------------------

    @property
    def _main(self) -> Screen[Any]:
        """The console's own screen: queries must not land on a modal that happens to be on top."""
        return self._main_screen if self._main_screen is not None else self.screen

    @property
    def header(self) -> ConsoleHeader:
        return self._main.query_one(ConsoleHeader)

    def proposal_in_view(self) -> Proposal | None:
        """The proposal in view: the focused Proposals pane's selection, or the focused
        Inspector's proposal."""
        rows = self.overview.proposals if self.overview else []
        inspector = self._main.query_one(Inspector)
        if self.focused is inspector:
            entity = inspector.entity
            if entity is None or entity.kind != "proposal":
                return None
            return next((r.proposal for r in rows if r.proposal.id == entity.id), None) or Proposal.from_row(
                entity.record
            )
        row = self.selected(ProposalsPane, rows, lambda r: r.proposal.id)
        return row.proposal if row is not None else None

    def dialog_closed(self) -> None:
        """Say that a dialog closed (the live part catches up on what it held back)."""
        self.post_message(DialogClosed())

    @work(group="reveal", exit_on_error=False)
    async def reveal(self, pane_id: str, key: str, timeout: float = 5.0) -> None:
        """Put the cursor on `key` in a pane once a refresh lists it (a new session, task or run
        appears where the operator can see it, not out of view)."""
        pane = self._main.query_one(f"#{pane_id}", TablePane)
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            keys = [row.value for row in pane.rows]
            if key in keys:
                pane.move_cursor(row=keys.index(key))
                return
            await asyncio.sleep(0.05)

    # --- the one guard every operator flow uses ---------------------------------------------

    def selected(self, pane_type: type[TablePane], items: Iterable[T], key_of: Callable[[T], str]) -> T | None:
        """The record under the cursor of the pane of `pane_type`, looked up in `items` — only
        while that pane has focus: a key acts on what the operator sees, never on the hidden
        selection of another pane (`target` then says which pane it needs)."""
        pane = self._main.query_one(pane_type)
        if self.focused is not pane:
            return None
        key = pane.selected_key()
        if key is None:
            return None
        return next((item for item in items if key_of(item) == key), None)

    def target(
        self,
        item: T | None,
        *,
        what: str,
        pane: str,
        refuse: Callable[[T], str] | None = None,
    ) -> T | None:
        """`item` if the flow may go on with it; else say why (nothing selected, or `refuse`'s
        reason, e.g. a decided proposal) and return None."""
        if item is None:
            self.notify(f"Select {what} in the {pane} pane first{_pane_hint(pane)}.", severity="warning")
            return None
        reason = refuse(item) if refuse is not None else ""
        if reason:
            self.notify(reason, severity="warning")
            return None
        return item

    # --- calls --------------------------------------------------------------------------------

    @property
    def caller(self) -> Caller:
        """The console as a caller: the operator, acting for the console's run (the run its
        changes belong to when nothing else names one — `services.run_scope`)."""
        return CONSOLE.with_run(self.run_id)

    async def call_tool(
        self, tool: str, args: dict[str, Any], *, success: str | None, title: str = ""
    ) -> dict[str, Any] | None:
        """One audited call as the operator; errors become a notification, never a crash.
        `success` is the notification when it worked (None: the caller says it itself)."""
        try:
            result = await self.runtime.call(tool, args, self.caller)
        except Exception as exc:
            self.notify(describe(exc), severity="error", title=title or tool, timeout=8)
            return None
        if success is not None:
            self.notify(success, title=title or tool)
        self.post_message(RefreshRequested())
        return result

    async def attempt(self, work: Awaitable[Any], *, title: str) -> tuple[bool, Any]:
        """Await a service call that is not a tool (runs, the supervisor, the dispatcher):
        (True, its result), or (False, None) after an error notification."""
        try:
            return True, await work
        except Exception as exc:
            self.notify(describe(exc), severity="error", title=title, timeout=8)
            return False, None
