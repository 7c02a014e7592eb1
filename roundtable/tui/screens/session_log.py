"""The log viewer: a session's redacted log, scrollable, long lines wrapped, following lines as
they are appended (`l` on the Agents or Sessions pane; `esc` closes). The file is read in a
worker thread from the offset reached last, every `POLL` seconds while the screen is open — the
supervisor writes the log without telling anyone, so there is no notice to wait for. The
session's record is read again while it runs, so once it ends the viewer says how (`exit 1`,
`killed by SIGTERM`) instead of waiting for more output."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.widgets import RichLog, Static

from roundtable.services.views.models import exit_text
from roundtable.store.records import AgentSession
from roundtable.tui.screens.following import FollowingScreen
from roundtable.tui.session_log import Chunk, log_path, read_chunk

POLL = 0.25
RECHECK = 1.0  # while the session runs, its record is read again this often (has it ended?)
MAX_LINES = 20_000

SessionLoader = Callable[[], Awaitable[AgentSession | None]]


class SessionLogScreen(FollowingScreen):
    BINDINGS: ClassVar = [
        Binding("escape,q,l", "dismiss", "Close"),
        Binding("f", "follow", "Follow"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "End", show=False),
    ]

    def __init__(self, root: Path, session: AgentSession, reload: SessionLoader | None = None) -> None:
        super().__init__()
        self.session = session
        self.reload = reload  # reads the session's record again (None: it is not followed)
        self.path = log_path(root, session.id)
        self.read_offset = 0
        self.exists: bool | None = None  # None until the first read
        self.lines_read = 0
        self.lines: deque[str] = deque(maxlen=MAX_LINES)  # the log's lines shown, unwrapped
        self.skipped = 0
        self.end_shown = False  # the line saying how the session ended is written
        self._shown_note = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="log-box") as box:
            box.border_title = self._title()
            box.border_subtitle = "esc close · f follow · g/G top/end"
            yield Static(id="log-note")
            yield RichLog(
                id="log-lines", max_lines=MAX_LINES, auto_scroll=True, wrap=True, markup=False, highlight=False
            )

    def _title(self) -> str:
        s = self.session
        return escape(f"Log · {s.id} · {s.agent_id} [{s.status}]")

    @property
    def ended(self) -> bool:
        return bool(self.session.ended_at)

    def _ending(self) -> str:
        """How the session ended, in words: `exit 1: process_exited`, `killed by SIGTERM: revoked`."""
        return exit_text(self.session) or self.session.status

    def on_mount(self) -> None:
        self.lines_view.focus()
        if self.path is None:
            self._note(f"No log: {self.session.id!r} cannot name a log file.", "yellow")
            return
        self._note("reading…", "dim")
        self._follow()

    @property
    def lines_view(self) -> RichLog:
        return self.query_one("#log-lines", RichLog)

    def _note(self, text: str, style: str) -> None:
        self.query_one("#log-note", Static).update(Text(text, style=style, no_wrap=True, overflow="ellipsis"))

    @work(exclusive=True, group="session-log", exit_on_error=False)
    async def _follow(self) -> None:
        assert self.path is not None
        loop = asyncio.get_running_loop()
        checked = loop.time()
        while True:
            chunk = await asyncio.to_thread(read_chunk, self.path, self.read_offset)
            if self.reload is not None and not self.ended and loop.time() - checked >= RECHECK:
                checked = loop.time()
                fresh = await self.reload()
                if fresh is not None and fresh.ended_at:
                    # Read once more: what it wrote before it ended belongs above the end line.
                    self.session = fresh
                    self.query_one("#log-box").border_title = self._title()
                    self._show(chunk)
                    chunk = await asyncio.to_thread(read_chunk, self.path, self.read_offset)
            self._show(chunk)
            await asyncio.sleep(POLL)

    def _show(self, chunk: Chunk) -> None:
        assert self.path is not None
        rel = self.path.relative_to(self.path.parents[3]).as_posix()
        if not chunk.exists:
            if self.exists is not False or self.ended:
                self.exists = False
                self.lines_view.clear()
                self.lines_read = 0
                self.lines.clear()
                if self.ended:
                    text = f"No log for {self.session.id}: it ended ({self._ending()}) without writing {rel}."
                else:
                    text = (
                        f"No log yet for {self.session.id}: the supervisor writes {rel} for the sessions it "
                        "launches (a harness that registered itself has none). Waiting for it…"
                    )
                self._note(text, "yellow")
            return
        if chunk.restarted:
            self.lines_view.clear()
            self.lines_read = 0
            self.lines.clear()
            self.end_shown = False
        self.exists = True
        self.read_offset = chunk.next_offset
        self.skipped = chunk.skipped or self.skipped
        if chunk.lines:
            self.lines_read += len(chunk.lines)
            self.lines.extend(chunk.lines)
            self.lines_view.write(Text("\n".join(chunk.lines)))
        elif self.ended and not self.end_shown:
            # Everything it wrote is shown: say how it ended, where the output stops.
            self.end_shown = True
            self.lines_view.write(Text(f"— session ended: {self._ending()} —", style="bold"))
        self._status(rel)

    def _status(self, rel: str) -> None:
        if self.lines_read == 0 and self.ended:
            text = f"{rel} · no output · the session ended: {self._ending()}"
        elif self.lines_read == 0:
            text = f"{rel} · empty so far · waiting for output"
        elif self.ended:
            text = f"{rel} · {self.lines_read} lines · redacted · the session ended: {self._ending()}"
        else:
            left_out = f" (first {self.skipped // 1024} KiB left out)" if self.skipped else ""
            mode = "following" if self.lines_view.auto_scroll else "paused: f follows"
            text = f"{rel}{left_out} · {self.lines_read} lines · redacted · {mode}"
        if text != self._shown_note:
            self._shown_note = text
            self._note(text, "dim")
