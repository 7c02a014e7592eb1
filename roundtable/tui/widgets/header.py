"""The console's header: project, run, the autopilot badge, listeners, the Chair's state and the
stale marker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.widgets import Static

from roundtable import clock
from roundtable.autopilot import Dispatcher
from roundtable.domain import RunStatus
from roundtable.tui.autopilot import badge
from roundtable.tui.models import Overview, attention
from roundtable.tui.timefmt import human_delta, short_time


@dataclass(frozen=True)
class OwnerInfo:
    """What the console knows about the process hosting it (addresses are display only)."""

    project: str = ""
    http_url: str = ""
    socket_path: str = ""
    note: str = ""  # e.g. "read-only: no Chair, no listeners, nothing is written"


@dataclass(frozen=True)
class Staleness:
    since_ns: int
    reason: str


class ConsoleHeader(Static):
    """Three lines, rebuilt whenever the overview, the Chair or the staleness changes."""

    def __init__(self, owner: OwnerInfo, *, read_only: bool, clock_ns: Callable[[], int] = clock.now_ns) -> None:
        super().__init__(id="header")
        self.owner = owner
        self.read_only = read_only
        self.clock_ns = clock_ns
        self.overview: Overview | None = None
        self.run_id = ""
        self.chair: Any = None
        self.dispatcher: Dispatcher | None = None
        self.stale: Staleness | None = None
        # Long work in progress (e.g. a test run): (what, started at ns); shown on line 3.
        self.activity: tuple[str, int] | None = None

    def update_view(self) -> None:
        self.update(self.compose_text())

    def compose_text(self) -> Text:
        now = self.clock_ns()
        line1 = Text()
        line1.append(" roundtable ", style="bold reverse")
        # First on the line, so no terminal is too narrow to show it.
        dismissed: set[str] = getattr(self.app, "dismissed", set()) if self.is_attached else set()
        needs = attention(self.overview, dismissed) if self.overview is not None else []
        if needs:
            line1.append(f" ⚑ {len(needs)} need you (!) ", style="bold black on yellow")
        autopilot = self.dispatcher.status() if self.dispatcher is not None else None
        if autopilot is not None:
            label, style = badge(autopilot)
            line1.append(" ")
            line1.append(f" {label} ", style=style)
        line1.append(f" {self.owner.project or 'project'} ", style="bold")
        run = self.overview.run if self.overview else None
        line1.append(" run ")
        line1.append(run.id if run else (self.run_id or "none"), style="bold cyan")
        if run:
            line1.append(f" [{run.status}]", style="green" if run.status == RunStatus.ACTIVE else "yellow")
            if self.overview is not None and self.overview.run_spend:
                line1.append(f"  spent {self.overview.run_spend}", style="bold")
            line1.append(f"  goal: {run.goal or 'not set'}")
        if self.read_only:
            line1.append("  READ-ONLY", style="bold magenta")

        # What changes comes first, so a narrow terminal cuts the addresses, not the Chair.
        line2 = Text(" ")
        line2.append("Chair ", style="dim")
        line2.append_text(self._chair_text(now))
        if autopilot is not None:
            line2.append("  Autopilot ", style="dim")
            sessions = autopilot.active_sessions
            line2.append(f"{sessions} session{'s' if sessions != 1 else ''}")
            if autopilot.consecutive_failures:
                line2.append(f" · {autopilot.consecutive_failures} failed in a row", style="red")
        if self.owner.note:
            line2.append("  " + self.owner.note, style="yellow")
        if self.overview is not None:
            line2.append(
                f"  claims {self.overview.claims_active} active · events {self.overview.events_total:,}", style="dim"
            )
        if self.owner.http_url or self.owner.socket_path:
            line2.append("  HTTP ", style="dim")
            line2.append(self.owner.http_url or "off")
            line2.append("  socket ", style="dim")
            line2.append(self.owner.socket_path or "off")

        line3 = Text(" ")
        if self.stale is not None:
            since = clock.format_ns(self.stale.since_ns)
            line3.append(
                f" STALE since {short_time(since)} ({human_delta((now - self.stale.since_ns) / 1e9)}): {self.stale.reason} ",
                style="bold white on red",
            )
        else:
            line3.append("live", style="green")
            if self.activity is not None:
                what, started_ns = self.activity
                spinner = "◐◓◑◒"[int((now - started_ns) / 250_000_000) % 4]
                line3.append(f"  {spinner} {what} · {human_delta((now - started_ns) / 1e9)}", style="bold yellow")
            line3.append("  ? help · ctrl+p commands · tab panes · q quit", style="dim")
        for line in (line1, line2, line3):
            line.no_wrap = True
            line.overflow = "ellipsis"
        text = Text("\n").join([line1, line2, line3])
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _chair_text(self, now: int) -> Text:
        state = getattr(self.chair, "state", None)
        if state is None:
            return Text("off", style="dim")
        out = Text()
        paused = bool(getattr(state, "paused", False))
        out.append("paused" if paused else "running", style="bold yellow" if paused else "green")
        ticks = getattr(state, "ticks", None)
        if ticks is not None:
            out.append(f" · {ticks} ticks")
        last = _stamp_ns(getattr(state, "last_tick_at", None))
        if last:
            out.append(f" · last {human_delta((now - last) / 1e9)} ago")
        nxt = _stamp_ns(getattr(state, "next_tick_at", None))
        if nxt and not paused:
            out.append(f" · next in {human_delta(max(nxt - now, 0) / 1e9)}")
        error = str(getattr(state, "last_error", "") or "")
        if error:
            out.append(f" · error: {error[:80]}", style="red")
        return out


def _stamp_ns(value: Any) -> int:
    """Accept RFC 3339 text, Unix seconds (float) or nanoseconds (int); 0 when unknown."""
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        try:
            return clock.parse(value)
        except ValueError:
            return 0
    if isinstance(value, float):
        return int(value * 1e9)
    if isinstance(value, int):
        return value if value > 10**14 else value * 1_000_000_000
    ts = getattr(value, "timestamp", None)
    return int(ts() * 1e9) if callable(ts) else 0
