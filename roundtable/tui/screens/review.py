"""The review view (`d` on a proposal): its diff full screen, one file at a time (`]`/`[` next and
previous file), a cursor on its lines (`j`/`k`, arrows, page keys), `c` to comment on the line under
the cursor (on a file or hunk header: on the file), `C` on the whole proposal, the comments shown
under their lines; `v` for what changed since the previous revision (the two revisions' diffs of
that file compared), `esc` closes. The patches are read once, when the view opens; the comments
again after each one left."""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from roundtable.services.governance.comments import place, read_revision
from roundtable.services.repository.diff_lines import DiffLine
from roundtable.store.records import ProposalComment
from roundtable.tui.screens.prompt import PromptScreen

READ_ONLY_COMMENT = "Read-only console: comments cannot be left here (the console running the owner can)."
_STYLES = {"added": "green", "removed": "red", "hunk": "cyan", "header": "bold", "note": "dim"}

__all__ = ["READ_ONLY_COMMENT", "ReviewScreen", "Revision", "interdiff"]


@dataclass(frozen=True)
class Revision:
    number: int
    sha256: str
    text: str


def interdiff(path: str, before: Revision | None, after: Revision) -> str:
    """What changed in `path`'s diff from revision `before` to `after` (a diff of the diffs)."""
    if before is None:
        return ""
    old = read_revision(before.text).file_parts().get(path, "")
    new = read_revision(after.text).file_parts().get(path, "")
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"r{before.number}/{path}",
            f"r{after.number}/{path}",
        )
    )


@dataclass(frozen=True)
class Commenting:
    """What the view needs to show and leave comments: `load` reads the comments on the revision
    shown; `leave(path, line, side, body)` leaves one (True when recorded; the console reports
    a refusal itself). `leave` is None in a read-only console."""

    load: Callable[[], Awaitable[list[ProposalComment]]]
    leave: Callable[[str, int, str, str], Awaitable[bool]] | None


def _comment_text(c: ProposalComment) -> Text:
    body = " ".join(c.body_md.split())
    return Text.assemble(("  ┃ ", "yellow"), (f"{c.author}: ", "bold yellow"), (body, "yellow"))


class ReviewScreen(ModalScreen[None]):
    BINDINGS: ClassVar = [
        Binding("escape,q,d", "dismiss", "Close"),
        Binding("right_square_bracket,n", "file(1)", "Next file"),
        Binding("left_square_bracket,p", "file(-1)", "Previous file"),
        Binding("c", "comment", "Comment on the line"),
        Binding("C", "comment_proposal", "Comment on the proposal", show=False),
        Binding("v", "since", "Since previous revision"),
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
    ]

    def __init__(
        self,
        title: str,
        proposal_id: str,
        current: Revision,
        previous: Revision | None,
        commenting: Commenting | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.proposal_id = proposal_id
        self.current = current
        self.previous = previous
        self.commenting = commenting
        self.files = read_revision(current.text).file_lines()
        self.paths = list(self.files)
        self.index = 0
        self.since = False
        self.comments: list[ProposalComment] = []
        self._lines: list[DiffLine] = []  # the lines the options show, in order (diff view only)

    def compose(self) -> ComposeResult:
        with Vertical(id="review-box") as box:
            box.border_subtitle = "] [ file · c comment · v since previous · esc close"
            yield Static(id="review-note")
            yield OptionList(id="review-body")

    def on_mount(self) -> None:
        self._show()
        self.query_one("#review-body", OptionList).focus()
        if self.commenting is not None:
            self._reload()

    @work(group="review-comments", exclusive=True, exit_on_error=False)
    async def _reload(self) -> None:
        assert self.commenting is not None
        self.comments = await self.commenting.load()
        self._show(keep=True)

    # --- drawing --------------------------------------------------------------------------------

    def _path(self) -> str:
        return self.paths[self.index] if self.paths else ""

    def _show(self, keep: bool = False) -> None:
        box = self.query_one("#review-box")
        body = self.query_one("#review-body", OptionList)
        count = len(self.paths)
        path = self._path()
        box.border_title = (
            f"Review {self.title_text} · r{self.current.number} · file {self.index + 1 if count else 0}/{count}"
        )
        note = Text.assemble((path or "(no files)", "bold"), ("  ", ""), (self.proposal_id, "dim"))
        highlighted = body.highlighted if keep else None
        body.clear_options()
        self._lines = []
        if self.since:
            changed = interdiff(path, self.previous, self.current)
            if self.previous is None:
                note.append("  — revision 1 has no earlier revision", style="yellow")
            elif not changed:
                note.append(f"  — unchanged since r{self.previous.number}", style="green")
            else:
                note.append(f"  — changes since r{self.previous.number}", style="yellow")
                body.add_options([Option(_styled(line)) for line in changed.splitlines()])
        else:
            mine = [c for c in self.comments if c.path == path]
            whole = [c for c in self.comments if not c.path]
            if self.comments:
                note.append(f"  {len(self.comments)} comment{'' if len(self.comments) == 1 else 's'}", "yellow")
            options: list[Option] = []
            for i, line in enumerate(self.files.get(path, [])):
                text = _styled(line.text)
                extra = [c for c in mine if _on(c, line)]
                if i == 0:  # the file's header carries the file's and the whole proposal's comments
                    extra = [*whole, *(c for c in mine if not c.line), *extra]
                for c in extra:
                    text.append("\n")
                    text.append_text(_comment_text(c))
                options.append(Option(text))
                self._lines.append(line)
            body.add_options(options)
        self.query_one("#review-note", Static).update(note)
        if body.option_count:
            body.highlighted = min(highlighted, body.option_count - 1) if highlighted is not None else 0

    # --- keys -------------------------------------------------------------------------------------

    def action_file(self, step: int) -> None:
        if self.paths:
            self.index = (self.index + step) % len(self.paths)
            self._show()

    def action_since(self) -> None:
        self.since = not self.since
        self._show()

    def action_move(self, lines: int) -> None:
        body = self.query_one("#review-body", OptionList)
        if lines > 0:
            body.action_cursor_down()
        else:
            body.action_cursor_up()

    def action_comment(self) -> None:
        body = self.query_one("#review-body", OptionList)
        index = body.highlighted
        if self.since or index is None or index >= len(self._lines):
            self.notify("Comment on the revision's own diff: press v to leave the since-view.", severity="warning")
            return
        anchor = self._lines[index].anchor
        side, line = anchor if anchor is not None else ("new", 0)
        self._comment(self._path(), line, side, self._lines[index].text)

    def action_comment_proposal(self) -> None:
        self._comment("", 0, "new", self.title_text)

    @work(group="review-dialog", exclusive=True, exit_on_error=False)
    async def _comment(self, path: str, line: int, side: str, shown: str) -> None:
        if self.commenting is None or self.commenting.leave is None:
            self.notify(READ_ONLY_COMMENT, severity="warning")
            return
        where = place(path, line, side)
        label = f"{shown.strip()[:200]}\nYour comment (its author sees it in its next briefing):"
        body = await self.app.push_screen_wait(
            PromptScreen(f"Comment on {where} · r{self.current.number}", label, required=True)
        )
        if body and await self.commenting.leave(path, line, side, body):
            self.comments = await self.commenting.load()
            self._show(keep=True)


def _on(c: ProposalComment, line: DiffLine) -> bool:
    """Whether the line comment `c` is about `line`."""
    return bool(c.line) and line.anchor == (c.side or "new", c.line)


def _styled(text: str) -> Text:
    """One diff line coloured as a diff viewer does."""
    if text.startswith("+++") or text.startswith("---") or text.startswith("diff "):
        style = _STYLES["header"]
    elif text.startswith("@@"):
        style = _STYLES["hunk"]
    elif text.startswith("+"):
        style = _STYLES["added"]
    elif text.startswith("-"):
        style = _STYLES["removed"]
    elif text.startswith("\\"):
        style = _STYLES["note"]
    else:
        style = ""
    return Text(text, style=style)
