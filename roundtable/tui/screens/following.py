"""A modal screen over one growing `RichLog` that follows its end until the operator scrolls:
the scrolling actions the session log and the live transcript share (each keeps its own keys)."""

from __future__ import annotations

from textual.screen import ModalScreen
from textual.widgets import RichLog


class FollowingScreen(ModalScreen[None]):
    @property
    def lines_view(self) -> RichLog:
        raise NotImplementedError

    def action_follow(self) -> None:
        self.lines_view.auto_scroll = True
        self.lines_view.scroll_end(animate=False)

    def action_scroll(self, lines: int) -> None:
        self.lines_view.auto_scroll = lines > 0 and self.lines_view.is_vertical_scroll_end
        self.lines_view.scroll_relative(y=lines, animate=False)

    def action_top(self) -> None:
        self.lines_view.auto_scroll = False
        self.lines_view.scroll_home(animate=False)

    def action_bottom(self) -> None:
        self.action_follow()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
