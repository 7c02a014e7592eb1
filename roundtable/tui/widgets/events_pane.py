"""Events: the live feed of every event (virtual list); follows the tail unless moved away."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text

from roundtable.services.views.pages import EventLine, EventsSource
from roundtable.tui import commands
from roundtable.tui.timefmt import short_time
from roundtable.tui.widgets.virtual_list import VirtualList

if TYPE_CHECKING:
    from roundtable.runtime import Runtime


class EventsPane(VirtualList):
    BINDINGS: ClassVar = commands.pane_bindings("events")
    kind = "event"
    TITLE = "Events"
    FOLLOWS = True

    def __init__(self, runtime: Runtime, **kwargs: Any) -> None:
        super().__init__(runtime, EventsSource(), follow=True, **kwargs)

    def header(self) -> Text:
        return Text(f"{'#':>7} {'time':<8} {'type':<26} {'actor':<12} detail")

    def format(self, row: EventLine, width: int) -> Text:
        style = "red" if "fail" in row.type or "denied" in row.type or "expired" in row.type else ""
        return (
            Text(f"{row.id:>7} ", style="dim")
            + Text(f"{short_time(row.created_at):<8} ")
            + Text(f"{row.type[:26]:<26} ", style=style or "cyan")
            + Text(f"{(row.actor_id or 'system')[:12]:<12} ")
            + Text(_detail(row.payload_json), style="dim")
        )

    def _set_title(self) -> None:
        super()._set_title()
        if not self.follow:
            self.border_title = f"{self.border_title} · paused (G to follow)"


def _detail(payload_json: str) -> str:
    try:
        payload = json.loads(payload_json or "{}")
    except ValueError:
        return payload_json[:80]
    if not isinstance(payload, dict):
        return str(payload)[:80]
    return " ".join(f"{k}={v}" for k, v in list(payload.items())[:4])[:120]
