"""The live transcript (`w` on the Sessions or Agents pane; `esc` closes): what a session's agent
says and does, in words — messages, each tool call with its arguments and a short result, errors,
the operator's messages — read from the harness's own stream in the session's log and shown as it
streams. The log is read in a worker thread from the offset reached last, whenever its directory
changes (`session_log.log_changes`: a file tail, not a timer); each read's entries come back as a
`TranscriptRead` message. The border says whether the session needs the operator (waiting for a
permission or an answer, idle, finished, failed). Agent text is plain text, never markup.
`m` sends the session a message (`session.send`), as the operator."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.markup import escape
from textual.message import Message
from textual.widgets import RichLog, Static

from roundtable.domain import SessionStatus
from roundtable.services.sessions.records import pending_messages
from roundtable.services.sessions.transcript import ATTENTION_WORDS, NEEDS_HUMAN, Attention, Entry, Kind, Transcript
from roundtable.services.views.models import exit_text, session_attention
from roundtable.store.records import AgentSession
from roundtable.tui.screens.following import FollowingScreen
from roundtable.tui.session_log import log_changes, log_path, read_chunk

MAX_LINES = 20_000
SessionLoader = Callable[[], Awaitable[AgentSession | None]]
Sender = Callable[[AgentSession], None]

_STYLES = {
    Kind.MESSAGE: "",
    Kind.THINKING: "dim italic",
    Kind.TOOL_CALL: "cyan",
    Kind.TOOL_RESULT: "dim",
    Kind.ERROR: "bold red",
    Kind.STATUS: "dim",
    Kind.OPERATOR: "bold magenta",
    Kind.OUTPUT: "",
}


def render(entry: Entry) -> Text:
    """One entry as styled plain text (the agent's words are never read as markup)."""
    style = "red" if entry.kind == Kind.TOOL_RESULT and entry.failed else _STYLES[entry.kind]
    if entry.kind == Kind.MESSAGE:
        return Text.assemble(("agent ", "bold green"), entry.text)
    return Text(entry.line(), style=style)


class TranscriptRead(Message):
    """The worker read more of the log: the new entries, and the session's record as of now."""

    def __init__(self, entries: list[Entry], session: AgentSession | None, missing: bool) -> None:
        super().__init__()
        self.entries = entries
        self.session = session
        self.missing = missing


class TranscriptScreen(FollowingScreen):
    BINDINGS: ClassVar = [
        Binding("escape,q,w", "dismiss", "Close"),
        Binding("f", "follow", "Follow"),
        Binding("m", "send", "Message"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "End", show=False),
    ]

    def __init__(self, root: Path, session: AgentSession, reload: SessionLoader, send: Sender | None = None) -> None:
        super().__init__()
        self.session = session
        self.reload = reload
        self.send = send  # None: a read-only console sends nothing
        self.path = log_path(root, session.id)
        self.transcript = Transcript(keep=MAX_LINES)
        self.shown = 0  # entries written
        self.end_shown = False

    def compose(self) -> ComposeResult:
        with Vertical(id="log-box") as box:
            box.border_title = self._title()
            box.border_subtitle = "esc close · m message · f follow · g/G top/end"
            yield Static(id="log-note")
            yield RichLog(
                id="transcript-lines", max_lines=MAX_LINES, auto_scroll=True, wrap=True, markup=False, highlight=False
            )

    @property
    def lines_view(self) -> RichLog:
        return self.query_one("#transcript-lines", RichLog)

    def _title(self) -> str:
        s = self.session
        return escape(f"Transcript · {s.id} · {s.agent_id} [{s.status}]")

    def attention(self) -> tuple[Attention, str]:
        """Whether the session needs the operator: what its stream said, as read here, or as the
        supervisor recorded it (idle is only the supervisor's to say)."""
        recorded, detail = session_attention(self.session)
        state = self.transcript.attention
        if recorded == Attention.IDLE and state == Attention.WORKING and not self.session.ended_at:
            return Attention.IDLE, detail
        if self.session.ended_at and state == Attention.WORKING:
            state = Attention.FINISHED if self.session.status == SessionStatus.ENDED else Attention.FAILED
        return state, self.transcript.detail

    def on_mount(self) -> None:
        self.lines_view.focus()
        if self.path is None:
            self._note(Text(f"No transcript: {self.session.id!r} cannot name a log file.", style="yellow"))
            return
        self._note(Text("reading…", style="dim"))
        self._follow()

    def _note(self, text: Text) -> None:
        text.no_wrap, text.overflow = True, "ellipsis"
        self.query_one("#log-note", Static).update(text)

    @work(exclusive=True, group="session-transcript", exit_on_error=False)
    async def _follow(self) -> None:
        assert self.path is not None
        offset = 0
        changes = log_changes(self.path)
        try:
            while True:
                chunk = await asyncio.to_thread(read_chunk, self.path, offset)
                offset = chunk.next_offset
                entries = [e for line in chunk.lines for e in self.transcript.feed(line)]
                session = await self.reload()
                self.post_message(TranscriptRead(entries, session, not chunk.exists))
                if chunk.lines:
                    continue  # more may be there already
                await anext(changes)
        finally:
            await changes.aclose()

    def on_transcript_read(self, message: TranscriptRead) -> None:
        if message.session is not None:
            self.session = message.session
            self.query_one("#log-box").border_title = self._title()
        if message.entries:
            self.lines_view.write(Text("\n").join(render(e) for e in message.entries))
            self.shown += len(message.entries)
        elif self.session.ended_at and not self.end_shown and not message.missing:
            self.end_shown = True
            self.lines_view.write(
                Text(f"— session ended: {exit_text(self.session) or self.session.status} —", style="bold")
            )
        self._status(message.missing)

    def _status(self, missing: bool) -> None:
        state, detail = self.attention()
        words = ATTENTION_WORDS[state] + (f": {detail}" if detail else "")
        if waiting := len(pending_messages(self.session)):
            words += f" · {waiting} message(s) pending until its turn ends"
        style = "bold yellow" if state in NEEDS_HUMAN else "dim"
        if missing:
            lead = "no log yet · " if not self.session.ended_at else "it wrote no log · "
        else:
            lead = f"{self.shown} entries · "
        mode = "following" if self.lines_view.auto_scroll else "paused: f follows"
        self._note(Text.assemble((lead, "dim"), (words, style), (f" · {mode}", "dim")))

    def action_send(self) -> None:
        if self.send is None:
            self.notify("This console is read-only: it sends no messages.", severity="warning")
            return
        self.send(self.session)
