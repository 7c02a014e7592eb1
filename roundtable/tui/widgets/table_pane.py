"""A short list pane: a `DataTable` of at most a few hundred rows, rebuilt from each overview.

Used for runs, the turn queue, proposals, approvals and transactions. The cursor stays on the
same record across refreshes (rows are keyed by record id), and `/` filters rows by text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from roundtable import clock
from roundtable.domain import (
    ApprovalStatus,
    ProposalStatus,
    RunStatus,
    SessionStatus,
    TaskStatus,
    TransactionStatus,
)
from roundtable.tui.messages import Selected
from roundtable.tui.models import Overview

Cell = str | Text
Row = tuple[str, Sequence[Cell]]


class TablePane(DataTable[Cell]):
    """Base class: subclasses set `kind`, `TITLE`, `COLUMNS` and implement `rows()`."""

    kind: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    COLUMNS: ClassVar[tuple[str, ...]] = ()
    # Free-text columns and their widest cell: longer text ends with "…", so ids and statuses
    # beside them stay whole on a narrow terminal (ids are never cut).
    ELASTIC: ClassVar[dict[str, int]] = {}
    # Cells that show ages or countdowns: rebuilt every second by the console's clock.
    CLOCKED: ClassVar[bool] = False

    BINDINGS: ClassVar = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, *, id: str | None = None, clock_ns: Callable[[], int] = clock.now_ns) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self.clock_ns = clock_ns
        self.filter_text = ""
        self._last_overview: Overview | None = None
        self._posted: str | None = None
        self._signature: list[tuple[str, tuple[str, ...]]] | None = None
        self.rebuild_pending = False

    def on_mount(self) -> None:
        for name in self.COLUMNS:
            self.add_column(name, key=name)
        self._set_title(0, 0)

    def build_rows(self, overview: Overview) -> list[Row]:
        raise NotImplementedError

    def show(self, overview: Overview) -> None:
        """Replace the rows with the overview's, keeping the cursor on the same record.

        The rebuild runs on this widget's own message loop, so the table measures its columns
        (on idle) before it next paints."""
        self._last_overview = overview
        if not self.rebuild_pending:
            self.rebuild_pending = True
            self.call_later(self._rebuild)

    def _rebuild(self) -> None:
        self.rebuild_pending = False
        overview = self._last_overview
        if overview is None:
            return
        rows = self._fit_elastic(self.build_rows(overview))
        total = len(rows)
        if self.filter_text:
            needle = self.filter_text.lower()
            rows = [r for r in rows if needle in " ".join(str(c) for c in r[1]).lower()]
        signature = [(key, tuple(str(c) for c in cells)) for key, cells in rows]
        if signature == self._signature:
            self._set_title(len(rows), total)
            return  # nothing changed: keep the table (and its cursor) as it is
        self._signature = signature
        keep = self.selected_key()
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if keep is not None:
            for index, (key, _cells) in enumerate(rows):
                if key == keep:
                    self.move_cursor(row=index, animate=False)
                    break
        self._set_title(len(rows), total)

    def _fit_elastic(self, rows: list[Row]) -> list[Row]:
        if not self.ELASTIC:
            return rows
        limits = [(self.COLUMNS.index(name), width) for name, width in self.ELASTIC.items() if name in self.COLUMNS]
        out: list[Row] = []
        for key, cells in rows:
            fitted = list(cells)
            for index, width in limits:
                if index < len(fitted):
                    fitted[index] = ellipsize(fitted[index], width)
            out.append((key, fitted))
        return out

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip()
        if self._last_overview is not None:
            self._signature = None
            self.show(self._last_overview)
        else:
            self._set_title(0, 0)

    def selected_key(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:
            return None
        return None if key.value is None else str(key.value)

    def _set_title(self, shown: int, total: int) -> None:
        count = f"{shown}/{total}" if self.filter_text else f"{total}"
        suffix = f" /{self.filter_text}" if self.filter_text else ""
        self.border_title = f"{self.TITLE} ({count}){suffix}"

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value
        if key is not None and key != self._posted:
            self._posted = str(key)
            self.post_message(Selected(self.kind, str(key), pane=self))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(Selected(self.kind, str(event.row_key.value), inspect=True, pane=self))


def ellipsize(cell: Cell, width: int) -> Cell:
    """`cell` cut to `width` cells with a trailing "…" when longer (one line)."""
    text = cell if isinstance(cell, Text) else Text(str(cell))
    plain = text.plain.replace("\n", " ")
    if len(plain) <= width and "\n" not in text.plain:
        return cell
    cut = text.copy() if "\n" not in text.plain else Text(plain, style=text.style)
    cut.truncate(width, overflow="ellipsis")
    return cut


def styled(text: str, style: str) -> Text:
    return Text(text, style=style)


# One colour per status word, whichever record it belongs to (StrEnum members are their words).
STATUS_STYLES: dict[str, str] = {
    RunStatus.ACTIVE: "green",  # also a session's and a claim's
    ApprovalStatus.REQUESTED: "bold yellow",  # also a turn's
    ApprovalStatus.APPROVED: "green",
    ApprovalStatus.DENIED: "red",
    ProposalStatus.PENDING: "yellow",  # also a transaction's
    ProposalStatus.IN_REVIEW: "cyan",
    ProposalStatus.ACCEPTED: "green",
    TransactionStatus.APPLIED: "green",
    ProposalStatus.REJECTED: "red",
    TransactionStatus.FAILED: "bold red",  # also a session's and a run's
    TransactionStatus.ROLLED_BACK: "magenta",
    RunStatus.COMPLETED: "green",  # also a task's
    TaskStatus.BLOCKED: "red",
    "scheduled": "cyan",  # a turn's (services.turns.Turn.status)
    "started": "bold green",
    SessionStatus.STARTING: "yellow",
    SessionStatus.ENDED: "dim",
}


def status_cell(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))
