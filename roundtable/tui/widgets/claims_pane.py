"""Claims: every claim (virtual list), contended resources highlighted, expiry counted down."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text

from roundtable.domain import ClaimStatus
from roundtable.services.views.pages import ClaimLine, ClaimsSource
from roundtable.tui import commands
from roundtable.tui.timefmt import human_delta, seconds_until
from roundtable.tui.widgets.virtual_list import VirtualList

if TYPE_CHECKING:
    from roundtable.runtime import Runtime


class ClaimsPane(VirtualList):
    BINDINGS: ClassVar = commands.pane_bindings("claims")
    CLOCKED = True
    kind = "claim"
    TITLE = "Claims"

    def __init__(self, runtime: Runtime, **kwargs: Any) -> None:
        super().__init__(runtime, ClaimsSource(), **kwargs)

    def header(self) -> Text:
        return Text(f"  {'resource':<26} {'owner':<14} {'mode':<6} {'status':<8} expires")

    def format(self, row: ClaimLine, width: int) -> Text:
        left = seconds_until(row.expires_at, self.clock_ns())
        if row.status != ClaimStatus.ACTIVE:
            expires = Text("—", style="dim")
        elif left is None:
            expires = Text("?")
        elif left < 0:
            expires = Text("expired", style="red")
        else:
            expires = Text(human_delta(left), style="yellow" if left < 60 else "")
        mark = Text("⚔ ", style="bold red") if row.contended else Text("  ")
        resource = Text(f"{_fit(row.resource_id, 26)} ", style="bold red" if row.contended else "")
        status_style = "green" if row.status == ClaimStatus.ACTIVE else "dim"
        return (
            mark
            + resource
            + Text(f"{_fit(row.agent_id, 14)} {_fit(row.claim_type, 6)} ")
            + Text(f"{_fit(row.status, 8)} ", style=status_style)
            + expires
        )


def _fit(text: str, width: int) -> str:
    """Pad or cut to `width` cells; a cut keeps the end of a path, where the file name is."""
    if len(text) <= width:
        return f"{text:<{width}}"
    return "…" + text[-(width - 1) :]
