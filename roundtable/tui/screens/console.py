"""The console's main screen: the panes, the operator's key bindings and moving around.

`ConsoleScreen` composes the header, the panes, the inspector, the footer and the operator flows
(widgets without a place on screen, `tui/flows/`), and owns the console's bindings (one per
command of `tui/commands.py`), so a dialog on top of it has only its own keys. It decides which
panes are shown (every pane, or one at a time below 120x32 or with `z`; `tui/layout.py`
decides), cycles focus, and runs the number keys, the inspector, the filter prompt, the help
screen and the "needs you" list. What it shows comes from the console's state (`ConsoleBase`);
what a key changes is done by the flow that has the key's action.
"""

from __future__ import annotations

from contextlib import suppress
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.events import Resize
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static

from roundtable.services.views.models import AttentionItem, attention
from roundtable.tui import commands, layout
from roundtable.tui.flows.approvals import ApprovalFlow
from roundtable.tui.flows.chair import ChairFlow
from roundtable.tui.flows.flow import Flow
from roundtable.tui.flows.proposals import ProposalFlow
from roundtable.tui.flows.runs import RunFlow
from roundtable.tui.flows.sessions import SessionFlow
from roundtable.tui.flows.tasks import TaskFlow
from roundtable.tui.messages import InspectRequested, RefreshRequested
from roundtable.tui.screens.attention import AttentionScreen
from roundtable.tui.screens.help import HelpScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.claims_pane import ClaimsPane
from roundtable.tui.widgets.events_pane import EventsPane
from roundtable.tui.widgets.header import ConsoleHeader
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.runs_pane import RunsPane
from roundtable.tui.widgets.sessions_pane import SessionsPane
from roundtable.tui.widgets.table_pane import TablePane
from roundtable.tui.widgets.tasks_pane import TasksPane
from roundtable.tui.widgets.transactions_pane import TransactionsPane
from roundtable.tui.widgets.turns_pane import TurnsPane
from roundtable.tui.widgets.virtual_list import VirtualList

if TYPE_CHECKING:
    from roundtable.tui.app import RoundtableApp

# The operator flows, mounted once in the main screen; a key's action runs on the one that has it.
FLOWS: tuple[type[Flow], ...] = (ApprovalFlow, ProposalFlow, SessionFlow, RunFlow, TaskFlow, ChairFlow)


def _actions_of(flow: type[Flow]) -> set[str]:
    return {name.removeprefix("action_") for name in dir(flow) if name.startswith("action_")} - set(
        name.removeprefix("action_") for name in dir(Widget) if name.startswith("action_")
    )


# Which flow runs each action (an action belongs to exactly one flow: asserted by the tests).
FLOW_OF_ACTION: dict[str, type[Flow]] = {name: flow for flow in FLOWS for name in _actions_of(flow)}


class ConsoleScreen(Screen[None]):
    """The panes and the operator's keys."""

    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [*commands.bindings()]

    def __init__(self) -> None:
        super().__init__()
        self._zoomed = False
        self._shown_pane = "proposals"

    @property
    def console(self) -> RoundtableApp:
        return cast("RoundtableApp", self.app)

    def compose(self) -> ComposeResult:
        console = self.console
        ck = console.clock_ns
        yield ConsoleHeader(console.owner_info, read_only=console.read_only, clock_ns=ck)
        yield Static(id="pane-bar")
        with Horizontal(id="upper"):
            with Vertical(id="left"):
                with Horizontal(id="top-row"):
                    yield RunsPane(id="runs", clock_ns=ck)
                    yield TasksPane(id="tasks", clock_ns=ck)
                    yield TurnsPane(id="turns", clock_ns=ck)
                with Horizontal(id="mid-row"):
                    with Vertical(id="work"):
                        yield ProposalsPane(id="proposals", clock_ns=ck)
                        yield SessionsPane(id="sessions", clock_ns=ck)
                    with Vertical(id="decisions"):
                        yield ApprovalsPane(id="approvals", clock_ns=ck)
                        yield TransactionsPane(id="transactions", clock_ns=ck)
            yield Inspector()
        with Horizontal(id="bottom-row"):
            yield AgentsPane(id="agents", clock_ns=ck)
            yield ClaimsPane(console.runtime, id="claims", clock_ns=ck)
            yield EventsPane(console.runtime, id="events", clock_ns=ck)
        yield Footer()
        for flow in FLOWS:
            yield flow()

    def on_mount(self) -> None:
        self.query_one(ProposalsPane).focus()
        self.watch(self, "focused", self._focus_moved, init=False)
        self.apply_layout()
        self.console.screen_ready()

    def flow_for(self, action: str) -> Flow | None:
        """The mounted flow that runs `action`, if a flow does."""
        flow = FLOW_OF_ACTION.get(action)
        return self.query_one(flow) if flow is not None else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A read-only console does not offer a mutating command in the footer (`RoundtableApp.run_action`
        refuses its key aloud)."""
        return self.console.check_action(action, parameters)

    # --- which panes are shown ----------------------------------------------------------------

    def _focused_pane_id(self) -> str | None:
        node: Widget | None = self.focused
        while node is not None:
            if node.id in layout.PANE_IDS:
                return node.id
            node = node.parent if isinstance(node.parent, Widget) else None
        return None

    def apply_layout(self) -> None:
        """Show every pane, or only the focused one (compact terminal or `z`)."""
        size = self.size
        decided = layout.decide(
            size.width, size.height, zoomed=self._zoomed, focused=self._focused_pane_id(), last=self._shown_pane
        )
        self._shown_pane = decided.shown
        self.console.layout_single = decided.single
        self.set_class(decided.single, "-single")
        for pane_id in layout.PANE_IDS:
            with suppress(NoMatches):
                self.query_one(f"#{pane_id}").set_class(pane_id == decided.shown, "-shown")
        for container_id in layout.ALL_CONTAINERS:
            with suppress(NoMatches):
                self.query_one(f"#{container_id}").set_class(decided.holds(container_id), "-holds")
        with suppress(NoMatches):
            self.query_one("#pane-bar", Static).update(layout.pane_bar(decided.shown, size.width))
        with suppress(NoMatches):
            self.query_one(Footer).compact = decided.single

    def on_resize(self, _event: Resize) -> None:
        self.call_after_refresh(self.apply_layout)

    def _focus_moved(self, _focused: Widget | None) -> None:
        if self.app.screen is self:
            self.apply_layout()

    # --- moving around ------------------------------------------------------------------------

    def cycle_panes(self, step: int) -> None:
        """tab/shift+tab: the next pane; with one pane shown, hidden panes count too."""
        if not self.console.layout_single:
            if step > 0:
                self.focus_next()
            else:
                self.focus_previous()
            return
        index = layout.PANE_IDS.index(self._shown_pane) if self._shown_pane in layout.PANE_IDS else 0
        self.action_show_pane((index + step) % len(layout.PANE_IDS) + 1)

    def action_zoom(self) -> None:
        size = self.size
        if not self._zoomed and layout.compact(size.width, size.height):
            self.notify(
                f"At {size.width}x{size.height} every pane is already shown alone (below "
                f"{layout.COMPACT_WIDTH}x{layout.COMPACT_HEIGHT}); z zooms on a larger terminal.",
                title="zoom",
            )
            return
        self._zoomed = not self._zoomed
        self.apply_layout()

    def action_show_pane(self, number: int) -> None:
        """Focus pane `number` at once, so a key typed right after acts on it."""
        if 1 <= number <= len(layout.PANE_IDS):
            with suppress(NoMatches):
                widget = self.query_one(f"#{layout.PANE_IDS[number - 1]}")
                self._shown_pane = layout.PANE_IDS[number - 1]
                self.set_focus(widget)

    # --- looking at things --------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.app.screen, HelpScreen):
            self.app.push_screen(HelpScreen(), lambda _result: self.console.dialog_closed())

    def action_refresh(self) -> None:
        self.post_message(RefreshRequested())

    def action_attention(self) -> None:
        if isinstance(self.app.screen, AttentionScreen):
            return
        console = self.console
        items = attention(console.overview, console.dismissed) if console.overview is not None else []
        self.app.push_screen(AttentionScreen(items, self.dismiss_attention), self._go_to_attention)

    def dismiss_attention(self, item: AttentionItem) -> None:
        """`d` in the "needs you" list: the item leaves the list and the ⚑ count (this console)."""
        console = self.console
        console.dismissed.add(item.key)
        console.header.update_view()
        alerts: Any = getattr(console, "alerts", None)
        if alerts is not None and not console.read_only and console.overview is not None:
            alerts.set_count(len(attention(console.overview, console.dismissed)))

    def _go_to_attention(self, item: AttentionItem | None) -> None:
        self.console.dialog_closed()
        if item is None:
            return
        if not item.pane:
            self.notify(f"{item.item_id}: {item.text}", title="needs you")
            return
        pane = self.query_one(f"#{item.pane}", TablePane)
        pane.focus()
        row = item.row or item.item_id
        for index, row_key in enumerate(pane.rows):
            if row_key.value == row:
                pane.move_cursor(row=index)
                break
        self.post_message(InspectRequested(pane.kind, row))

    def action_inspect(self) -> None:
        focused = self.focused
        if isinstance(focused, TablePane):
            key = focused.selected_key()
            if key is not None:
                self.post_message(InspectRequested(focused.kind, key))
        elif isinstance(focused, VirtualList):
            focused.action_inspect()
        else:
            return
        if self.console.layout_single:
            self.query_one(Inspector).focus()

    def action_filter(self) -> None:
        pane = self.focused
        if not isinstance(pane, TablePane | VirtualList):
            self.notify("Focus a list pane (tab) to filter it.", severity="warning")
            return
        self._filter_flow(pane)

    @work(group="dialog", exit_on_error=False)
    async def _filter_flow(self, pane: TablePane | VirtualList) -> None:
        title = str(pane.border_title or "pane")
        text = await self.app.push_screen_wait(
            PromptScreen(f"Filter {title}", "Show rows containing:", value=pane.filter_text)
        )
        self.console.dialog_closed()
        if text is not None:
            pane.set_filter(text)
