"""Moving around the console: which panes are shown (every pane, or one at a time below 120x32
or with `z`; `tui/layout.py` decides), focus cycling, the number keys, the inspector, the filter
prompt, the help screen and the "needs you" list."""

from __future__ import annotations

from contextlib import suppress

from textual import work
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Footer, Static

from roundtable.services.views.models import AttentionItem, attention
from roundtable.tui import layout
from roundtable.tui.base import ConsoleBase
from roundtable.tui.messages import InspectRequested, RefreshRequested
from roundtable.tui.screens.attention import AttentionScreen
from roundtable.tui.screens.help import HelpScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.table_pane import TablePane
from roundtable.tui.widgets.virtual_list import VirtualList


class PanesMixin(ConsoleBase):
    """Layout and navigation."""

    def _setup_panes(self) -> None:
        self._zoomed = False
        self._shown_pane = "proposals"

    def _focused_pane_id(self) -> str | None:
        node: Widget | None = self.focused
        while node is not None:
            if node.id in layout.PANE_IDS:
                return node.id
            node = node.parent if isinstance(node.parent, Widget) else None
        return None

    def apply_layout(self) -> None:
        """Show every pane, or only the focused one (compact terminal or `z`)."""
        screen = self._main
        size = screen.size
        decided = layout.decide(
            size.width, size.height, zoomed=self._zoomed, focused=self._focused_pane_id(), last=self._shown_pane
        )
        self._shown_pane = decided.shown
        self.layout_single = decided.single
        screen.set_class(decided.single, "-single")
        for pane_id in layout.PANE_IDS:
            with suppress(NoMatches):
                screen.query_one(f"#{pane_id}").set_class(pane_id == decided.shown, "-shown")
        for container_id in layout.ALL_CONTAINERS:
            with suppress(NoMatches):
                screen.query_one(f"#{container_id}").set_class(decided.holds(container_id), "-holds")
        with suppress(NoMatches):
            screen.query_one("#pane-bar", Static).update(layout.pane_bar(decided.shown, size.width))
        with suppress(NoMatches):
            screen.query_one(Footer).compact = decided.single

    def on_resize(self, event: object) -> None:
        self.call_after_refresh(self.apply_layout)

    def _focus_moved(self, _focused: Widget | None) -> None:
        if self.screen is self._main_screen:
            self.apply_layout()

    def action_focus_next(self) -> None:
        self._cycle_panes(+1)

    def action_focus_previous(self) -> None:
        self._cycle_panes(-1)

    def _cycle_panes(self, step: int) -> None:
        """tab/shift+tab: the next pane; with one pane shown, hidden panes count too."""
        if not self.layout_single:
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        index = layout.PANE_IDS.index(self._shown_pane) if self._shown_pane in layout.PANE_IDS else 0
        self.action_show_pane((index + step) % len(layout.PANE_IDS) + 1)

    def action_zoom(self) -> None:
        size = self._main.size
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
                widget = self._main.query_one(f"#{layout.PANE_IDS[number - 1]}")
                self._shown_pane = layout.PANE_IDS[number - 1]
                self._main.set_focus(widget)

    # --- looking at things ------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(), lambda _result: self.dialog_closed())

    def action_refresh(self) -> None:
        self.post_message(RefreshRequested())

    def action_attention(self) -> None:
        if isinstance(self.screen, AttentionScreen):
            return
        items = attention(self.overview, self.dismissed) if self.overview is not None else []
        self.push_screen(AttentionScreen(items, self.dismiss_attention), self._go_to_attention)

    def dismiss_attention(self, item: AttentionItem) -> None:
        """`d` in the "needs you" list: the item leaves the list and the ⚑ count (this console)."""
        self.dismissed.add(item.key)
        self.header.update_view()
        alerts = getattr(self, "alerts", None)
        if alerts is not None and not self.read_only and self.overview is not None:
            alerts.set_count(len(attention(self.overview, self.dismissed)))

    def _go_to_attention(self, item: AttentionItem | None) -> None:
        self.dialog_closed()
        if item is None:
            return
        if not item.pane:
            self.notify(f"{item.item_id}: {item.text}", title="needs you")
            return
        pane = self._main.query_one(f"#{item.pane}", TablePane)
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
        if self.layout_single:
            self._main.query_one(Inspector).focus()

    def action_filter(self) -> None:
        pane = self.focused
        if not isinstance(pane, TablePane | VirtualList):
            self.notify("Focus a list pane (tab) to filter it.", severity="warning")
            return
        self._filter_flow(pane)

    @work(group="dialog", exit_on_error=False)
    async def _filter_flow(self, pane: TablePane | VirtualList) -> None:
        title = str(pane.border_title or "pane")
        text = await self.push_screen_wait(
            PromptScreen(f"Filter {title}", "Show rows containing:", value=pane.filter_text)
        )
        self.dialog_closed()
        if text is not None:
            pane.set_filter(text)
