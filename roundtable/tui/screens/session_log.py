"""The log viewer: a session's redacted log, scrollable, following lines as they are appended
(`l` on the Agents or Sessions pane; `esc` closes). The file is read in a worker thread from the
offset reached last, every `POLL` seconds while the screen is open — the supervisor writes the
log without telling anyone, so there is no notice to wait for."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Log, Static

from roundtable.store.records import AgentSession
from roundtable.tui.session_log import Chunk, log_path, read_chunk

POLL = 0.25
MAX_LINES = 20_000


class SessionLogScreen(ModalScreen[None]):
    BINDINGS: ClassVar = [
        Binding("escape,q,l", "dismiss", "Close"),
        Binding("f", "follow", "Follow"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "End", show=False),
    ]

    def __init__(self, root: Path, session: AgentSession) -> None:
        super().__init__()
        self.session = session
        self.path = log_path(root, session.id)
        self.read_offset = 0
        self.exists: bool | None = None  # None until the first read
        self.lines_read = 0
        self.skipped = 0
        self._shown_note = ""

    def compose(self) -> ComposeResult:
        s = self.session
        with Vertical(id="log-box") as box:
            box.border_title = escape(f"Log · {s.id} · {s.agent_id} [{s.status}]")
            box.border_subtitle = "esc close · f follow · g/G top/end"
            yield Static(id="log-note")
            yield Log(id="log-lines", max_lines=MAX_LINES, auto_scroll=True)

    def on_mount(self) -> None:
        self.query_one(Log).focus()
        if self.path is None:
            self._note(f"No log: {self.session.id!r} cannot name a log file.", "yellow")
            return
        self._note("reading…", "dim")
        self._follow()

    @property
    def lines_view(self) -> Log:
        return self.query_one("#log-lines", Log)

    def _note(self, text: str, style: str) -> None:
        self.query_one("#log-note", Static).update(Text(text, style=style, no_wrap=True, overflow="ellipsis"))

    @work(exclusive=True, group="session-log", exit_on_error=False)
    async def _follow(self) -> None:
        assert self.path is not None
        while True:
            chunk = await asyncio.to_thread(read_chunk, self.path, self.read_offset)
            self._show(chunk)
            await asyncio.sleep(POLL)

    def _show(self, chunk: Chunk) -> None:
        assert self.path is not None
        rel = self.path.relative_to(self.path.parents[3]).as_posix()
        if not chunk.exists:
            if self.exists is not False:
                self.exists = False
                self.lines_view.clear()
                self.lines_read = 0
                self._note(
                    f"No log yet for {self.session.id}: the supervisor writes {rel} for the sessions it "
                    "launches (a harness that registered itself has none). Waiting for it…",
                    "yellow",
                )
            return
        if chunk.restarted:
            self.lines_view.clear()
            self.lines_read = 0
        self.exists = True
        self.read_offset = chunk.next_offset
        self.skipped = chunk.skipped or self.skipped
        if chunk.lines:
            self.lines_read += len(chunk.lines)
            self.lines_view.write_lines(chunk.lines)
        self._status(rel)

    def _status(self, rel: str) -> None:
        if self.lines_read == 0:
            text = f"{rel} · empty so far · waiting for output"
        else:
            left_out = f" (first {self.skipped // 1024} KiB left out)" if self.skipped else ""
            mode = "following" if self.lines_view.auto_scroll else "paused: f follows"
            text = f"{rel}{left_out} · {self.lines_read} lines · redacted · {mode}"
        if text != self._shown_note:
            self._shown_note = text
            self._note(text, "dim")

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
