"""Turn queue: the run's outstanding turn requests in FIFO order, warning as a deadline nears."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from roundtable.services.views.models import Overview
from roundtable.tui import commands
from roundtable.tui.timefmt import human_delta, stamp_ns
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell

# A turn is flagged when less than this share of its window is left (or under 30 s).
WARN_SECONDS = 30.0


class TurnsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("turns")
    CLOCKED = True
    kind = "event"  # a turn is its request event
    TITLE = "Turn queue"
    COLUMNS = ("#", "agent", "state", "expires", "age", "reason")
    ELASTIC = {"reason": 28}
    OPTIONAL = ("age",)

    def build_rows(self, overview: Overview) -> list[Row]:
        now = self.clock_ns()
        out: list[Row] = []
        for t in overview.turns:
            age = human_delta((now - stamp_ns(t.requested_at)) / 1e9)
            if t.expires_at_ns:
                left = (t.expires_at_ns - now) / 1e9
                style = "bold red" if left <= WARN_SECONDS else ""
                expires = Text(("expired " if left < 0 else "") + human_delta(left), style=style)
                if left <= WARN_SECONDS:
                    expires = Text("⚠ ", style="bold red") + expires
            else:
                expires = Text("—", style="dim")
            out.append((str(t.request_id), (str(t.position), t.agent_id, status_cell(t.state), expires, age, t.reason)))
        return out
