"""The "needs you" list (`!`): everything only the operator can move forward, most urgent first;
enter jumps to the item in its pane, `d` dismisses it (it leaves the list and the ⚑ count)."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from roundtable.services.views.models import AttentionItem


class AttentionScreen(ModalScreen[AttentionItem | None]):
    BINDINGS = [Binding("escape,q", "close", "Close"), Binding("d", "dismiss_item", "Dismiss")]

    def __init__(self, items: list[AttentionItem], on_dismiss: Callable[[AttentionItem], None] | None = None) -> None:
        super().__init__()
        self.items = list(items)
        self.on_dismiss = on_dismiss

    def compose(self) -> ComposeResult:
        with Vertical(id="attention-box") as box:
            box.border_title = f"Needs you ({len(self.items)})"
            box.border_subtitle = "enter go to · d dismiss · esc close"
            if not self.items:
                yield Static(Text("Nothing needs you right now.", style="dim"))
                return
            yield OptionList(
                *[
                    Option(Text.assemble((f"{i.kind:<12}", "bold"), i.text), id=str(n))
                    for n, i in enumerate(self.items)
                ],
                id="attention-list",
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.items[int(event.option.id or 0)])

    def action_dismiss_item(self) -> None:
        if not self.items or self.on_dismiss is None:
            return
        options = self.query_one("#attention-list", OptionList)
        index = options.highlighted
        if index is None:
            return
        option = options.get_option_at_index(index)
        item = self.items[int(option.id or 0)]
        self.on_dismiss(item)
        options.remove_option_at_index(index)
        left = options.option_count
        box = self.query_one("#attention-box")
        box.border_title = f"Needs you ({left})"

    def action_close(self) -> None:
        self.dismiss(None)
