"""The console's header: project, run, the autopilot badge, listeners, the Chair's state and the
stale marker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from rich.text import Text
from textual.widgets import Static

from roundtable import clock
from roundtable.autopilot import Dispatcher, DispatcherStatus
from roundtable.domain import RunStatus
from roundtable.services.views.models import Overview, attention
from roundtable.tui.autopilot import badge
from roundtable.tui.timefmt import human_delta, short_time
from roundtable.tui.widgets.table_pane import short_ids


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

    def on_resize(self, _event: object) -> None:
        self.update_view()  # the parts that fit depend on the width

    @property
    def line_width(self) -> int:
        """The width the lines must fit (the terminal's before the header is laid out)."""
        if self.size.width:
            return self.size.width
        return self.app.size.width if self.is_attached else 80

    def compose_text(self) -> Text:
        """Three lines, each made of parts in display order with a rank (the lowest is shortened
        or dropped first) and its forms (whole first, then shorter; "" drops it), so at 80
        columns the least important parts give way and nothing that matters is cut."""
        now = self.clock_ns()
        autopilot = self.dispatcher.status() if self.dispatcher is not None else None
        lines = [
            fit(parts, self.line_width)
            for parts in (self._line1(autopilot), self._line2(now, autopilot), self._line3(now))
        ]
        for line in lines:
            line.no_wrap = True
            line.overflow = "ellipsis"
        text = Text("\n").join(lines)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _line1(self, autopilot: DispatcherStatus | None) -> list[Part]:
        """Who and what: READ-ONLY, what needs you, the autopilot, the project, the run, its goal."""
        dismissed: set[str] = getattr(self.app, "dismissed", set()) if self.is_attached else set()
        needs = attention(self.overview, dismissed) if self.overview is not None else []
        line1: list[Part] = [Part(100, (Text(" roundtable ", style="bold reverse"),))]
        if self.read_only:
            line1.append(Part(95, (Text(" READ-ONLY ", style="bold magenta"),)))
        if needs:
            style = "bold black on yellow"
            line1.append(
                Part(
                    90,
                    (Text(f" ⚑ {len(needs)} need you (!) ", style=style), Text(f" ⚑ {len(needs)} (!) ", style=style)),
                )
            )
        if autopilot is not None:
            label, style = badge(autopilot)
            short = label.split(":", 1)[0]
            line1.append(
                Part(80, (Text(" ") + Text(f" {label} ", style=style), Text(" ") + Text(f" {short} ", style=style)))
            )
        line1.append(Part(5, (Text(f" {self.owner.project or 'project'} ", style="bold"), Text(""))))
        line1.append(Part(70, self._run_forms()))
        run = self.overview.run if self.overview else None
        if run is not None:
            if self.overview is not None and self.overview.run_spend:
                line1.append(Part(40, (Text(f"  spent {self.overview.run_spend}", style="bold"), Text(""))))
            line1.append(Part(10, (Text(f"  goal: {run.goal or 'not set'}"), Text("")), elastic=True))
        return line1

    def _line2(self, now: int, autopilot: DispatcherStatus | None) -> list[Part]:
        """The loops and the listeners: the Chair, the autopilot's sessions, counts, addresses."""
        line2: list[Part] = [
            Part(
                90,
                (Text(" Chair ", style="dim") + self._chair_text(now), Text(" ") + self._chair_text(now, brief=True)),
            )
        ]
        if autopilot is not None:
            sessions = autopilot.active_sessions
            count = f"{sessions} session{'s' if sessions != 1 else ''}"
            failed = (
                Text(f" · {autopilot.consecutive_failures} failed in a row", style="red")
                if autopilot.consecutive_failures
                else Text("")
            )
            line2.append(
                Part(
                    70,
                    (Text("  Autopilot ", style="dim") + Text(count) + failed, Text(f"  {count}") + failed, Text("")),
                )
            )
        if self.owner.note:
            line2.append(Part(30, (Text("  " + self.owner.note, style="yellow"), Text(""))))
        if self.overview is not None:
            o = self.overview
            line2.append(
                Part(
                    50,
                    (
                        Text(f"  claims {o.claims_active} active · events {o.events_total:,}", style="dim"),
                        Text(f"  {o.claims_active} claims · {o.events_total:,} events", style="dim"),
                        Text(""),
                    ),
                )
            )
        if self.owner.http_url or self.owner.socket_path:
            url = self.owner.http_url
            line2.append(
                Part(
                    20,
                    (
                        Text("  HTTP ", style="dim") + Text(url or "off"),
                        Text("  HTTP ", style="dim") + Text(_short_address(url) if url else "off"),
                        Text(""),
                    ),
                )
            )
            line2.append(Part(15, (Text("  socket ", style="dim") + Text(self.owner.socket_path or "off"), Text(""))))

        return line2

    def _line3(self, now: int) -> list[Part]:
        """Live or stale, long work in progress, the help hint."""
        line3: list[Part]
        if self.stale is not None:
            since = clock.format_ns(self.stale.since_ns)
            banner = f" STALE since {short_time(since)} ({human_delta((now - self.stale.since_ns) / 1e9)}): {self.stale.reason} "
            line3 = [Part(100, (Text(" ") + Text(banner, style="bold white on red"),), elastic=True)]
        else:
            line3 = [Part(100, (Text(" live", style="green"),))]
            if self.activity is not None:
                what, started_ns = self.activity
                spinner = "◐◓◑◒"[int((now - started_ns) / 250_000_000) % 4]
                line3.append(
                    Part(
                        90,
                        (Text(f"  {spinner} {what} · {human_delta((now - started_ns) / 1e9)}", style="bold yellow"),),
                        elastic=True,
                    )
                )
            line3.append(
                Part(
                    10,
                    (
                        Text("  ? help · ctrl+p commands · tab panes · q quit", style="dim"),
                        Text("  ? help · q quit", style="dim"),
                        Text(""),
                    ),
                )
            )
        return line3

    def _run_forms(self) -> tuple[Text, ...]:
        """` run RUN-… [active]`, then with the id's short tail (as the Runs pane shows it)."""
        run = self.overview.run if self.overview else None
        run_id = run.id if run else (self.run_id or "none")
        ids = [r.id for r in self.overview.runs] if self.overview else []
        short = short_ids([*ids, run_id]).get(run_id, run_id)
        forms = []
        for shown in dict.fromkeys((run_id, short)):
            text = Text(" run ") + Text(shown, style="bold cyan")
            if run:
                text.append(f" [{run.status}]", style="green" if run.status == RunStatus.ACTIVE else "yellow")
            forms.append(text)
        return tuple(forms)

    def _chair_text(self, now: int, *, brief: bool = False) -> Text:
        """The Chair's state, ticks and timing (`brief`: its state and error only)."""
        state = getattr(self.chair, "state", None)
        if state is None:
            return Text("Chair off" if brief else "off", style="dim")
        out = Text()
        paused = bool(getattr(state, "paused", False))
        out.append("Chair " if brief else "", style="dim")
        out.append("paused" if paused else "running", style="bold yellow" if paused else "green")
        error = str(getattr(state, "last_error", "") or "")
        if brief:
            if error:
                out.append(f" · error: {error[:40]}", style="red")
            return out
        ticks = getattr(state, "ticks", None)
        if ticks is not None:
            out.append(f" · {ticks} ticks")
        last = _stamp_ns(getattr(state, "last_tick_at", None))
        if last:
            out.append(f" · last {human_delta((now - last) / 1e9)} ago")
        nxt = _stamp_ns(getattr(state, "next_tick_at", None))
        if nxt and not paused:
            out.append(f" · next in {human_delta(max(nxt - now, 0) / 1e9)}")
        if error:
            out.append(f" · error: {error[:80]}", style="red")
        return out


@dataclass(frozen=True)
class Part:
    """One part of a header line: `rank` says how much it matters (the lowest gives way first),
    `forms` are its renderings, whole first; an empty one drops it. An `elastic` part keeps
    whatever room is left, cut with "…", before it gives way."""

    rank: int
    forms: tuple[Text, ...]
    elastic: bool = False


MIN_ELASTIC = 12  # an elastic part cut narrower than this gives way instead


def fit(parts: list[Part], width: int) -> Text:
    """The parts joined in order, each in the longest form that lets the line fit `width`:
    while too wide, the lowest-ranked part that can still shrink takes its next form — unless
    it is elastic and has room enough left, then it is cut to that room instead."""
    chosen = [0] * len(parts)

    def total() -> int:
        return sum(p.forms[i].cell_len for p, i in zip(parts, chosen, strict=True))

    def room_for(index: int) -> int:
        return width - (total() - parts[index].forms[chosen[index]].cell_len)

    while total() > width:
        shrinkable = [n for n, p in enumerate(parts) if chosen[n] + 1 < len(p.forms)]
        if not shrinkable:
            break
        n = min(shrinkable, key=lambda k: parts[k].rank)
        if parts[n].elastic and room_for(n) >= MIN_ELASTIC:
            break
        chosen[n] += 1
    out = Text()
    for n, (part, index) in enumerate(zip(parts, chosen, strict=True)):
        form = part.forms[index].copy()
        if part.elastic and total() > width:
            form.truncate(max(room_for(n), 1), overflow="ellipsis")
        out.append_text(form)
    return out


def _short_address(url: str) -> str:
    """`http://127.0.0.1:7117/mcp` as `:7117` (the port is what tells two owners apart)."""
    try:
        port = urlsplit(url).port
    except ValueError:
        port = None
    return f":{port}" if port else url


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
