"""The review view (`d` on a proposal): its diff full screen, one file at a time (`]`/`[` next and
previous file), and `v` for what changed since the previous revision (the two revisions' diffs of
that file compared), `esc` closes. The patches are read once, when the view opens."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def split_files(patch: str) -> dict[str, str]:
    """A unified diff as {path: that file's part}, in patch order (plain `---`/`+++` diffs are
    one part named by their `+++` line)."""
    parts: dict[str, list[str]] = {}
    current = ""
    for line in patch.splitlines(keepends=True):
        match = _HEADER.match(line.rstrip("\n"))
        if match:
            current = match.group(2)
            parts[current] = []
        elif not current and line.startswith("+++ "):
            current = line[4:].strip().removeprefix("b/")
            parts[current] = []
        if current:
            parts[current].append(line)
    return {path: "".join(lines) for path, lines in parts.items()}


@dataclass(frozen=True)
class Revision:
    number: int
    sha256: str
    text: str


def interdiff(path: str, before: Revision | None, after: Revision) -> str:
    """What changed in `path`'s diff from revision `before` to `after` (a diff of the diffs)."""
    if before is None:
        return ""
    old = split_files(before.text).get(path, "")
    new = split_files(after.text).get(path, "")
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"r{before.number}/{path}",
            f"r{after.number}/{path}",
        )
    )


class ReviewScreen(ModalScreen[None]):
    BINDINGS: ClassVar = [
        Binding("escape,q,d", "dismiss", "Close"),
        Binding("right_square_bracket,n", "file(1)", "Next file"),
        Binding("left_square_bracket,p", "file(-1)", "Previous file"),
        Binding("v", "since", "Since previous revision"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, title: str, proposal_id: str, current: Revision, previous: Revision | None) -> None:
        super().__init__()
        self.title_text = title
        self.proposal_id = proposal_id
        self.current = current
        self.previous = previous
        self.files = split_files(current.text)
        self.paths = list(self.files)
        self.index = 0
        self.since = False

    def compose(self) -> ComposeResult:
        with Vertical(id="review-box") as box:
            box.border_subtitle = "] next file · [ previous · v since previous revision · esc close"
            yield Static(id="review-note")
            with VerticalScroll(id="review-scroll"):
                yield Static(id="review-body")

    def on_mount(self) -> None:
        self._show()

    def _show(self) -> None:
        box = self.query_one("#review-box")
        count = len(self.paths)
        path = self.paths[self.index] if count else ""
        box.border_title = (
            f"Review {self.title_text} · r{self.current.number} · file {self.index + 1 if count else 0}/{count}"
        )
        note = Text.assemble((path or "(no files)", "bold"), ("  ", ""), (self.proposal_id, "dim"))
        body: RenderableType
        if self.since:
            changed = interdiff(path, self.previous, self.current)
            if self.previous is None:
                note.append("  — revision 1 has no earlier revision", style="yellow")
                body = Text("")
            elif not changed:
                note.append(f"  — unchanged since r{self.previous.number}", style="green")
                body = Text("")
            else:
                note.append(f"  — changes since r{self.previous.number}", style="yellow")
                body = Syntax(changed, "diff", theme="ansi_dark", word_wrap=True, background_color="default")
        else:
            text = self.files.get(path, "")
            body = Syntax(
                text, "diff", theme="ansi_dark", word_wrap=True, background_color="default", line_numbers=False
            )
        self.query_one("#review-note", Static).update(note)
        self.query_one("#review-body", Static).update(Group(body))
        self.query_one("#review-scroll", VerticalScroll).scroll_home(animate=False)

    def action_file(self, step: int) -> None:
        if self.paths:
            self.index = (self.index + step) % len(self.paths)
            self._show()

    def action_since(self) -> None:
        self.since = not self.since
        self._show()

    def action_scroll(self, lines: int) -> None:
        self.query_one("#review-scroll", VerticalScroll).scroll_relative(y=lines, animate=False)
