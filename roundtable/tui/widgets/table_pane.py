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
from roundtable.services.views.models import Overview
from roundtable.tui.messages import Selected

Cell = str | Text
Row = tuple[str, Sequence[Cell]]


class TablePane(DataTable[Cell]):
    """Base class: subclasses set `kind`, `TITLE`, `COLUMNS` and implement `rows()`."""

    kind: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    COLUMNS: ClassVar[tuple[str, ...]] = ()
    # Free-text columns and the width they get at least when there is room: they share the
    # pane's width left over by the other columns (so they grow with the terminal) and longer
    # text ends with "…", so ids and statuses beside them stay whole.
    ELASTIC: ClassVar[dict[str, int]] = {}
    # Columns of record ids, shown as their shortest unique tail (`T…0042`); the Inspector shows
    # the whole id.
    ID_COLUMNS: ClassVar[tuple[str, ...]] = ()
    # Columns dropped, in this order, while the pane is too narrow for every column.
    OPTIONAL: ClassVar[tuple[str, ...]] = ()
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
        self._columns_shown: tuple[str, ...] = ()
        self.rebuild_pending = False

    def on_mount(self) -> None:
        self._set_columns(self.COLUMNS)
        self._set_title(0, 0)

    def _set_columns(self, names: Sequence[str]) -> None:
        self.clear(columns=True)
        for name in names:
            self.add_column(name, key=name)
        self._columns_shown = tuple(names)
        self._signature = None

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
        names, rows = self._fit(self.build_rows(overview))
        total = len(rows)
        if self.filter_text:
            needle = self.filter_text.lower()
            rows = [r for r in rows if needle in " ".join(str(c) for c in r[1]).lower()]
        keep = self.cursor_key(self.selected_key(), overview)
        if names != self._columns_shown:
            self._set_columns(names)
        signature = [(key, tuple(str(c) for c in cells)) for key, cells in rows]
        if signature == self._signature:
            self._set_title(len(rows), total)
            return  # nothing changed: keep the table (and its cursor) as it is
        self._signature = signature
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        if keep is not None:
            for index, (key, _cells) in enumerate(rows):
                if key == keep:
                    self.move_cursor(row=index, animate=False)
                    break
        self._set_title(len(rows), total)

    def cursor_key(self, selected: str | None, overview: Overview) -> str | None:
        """The record the cursor stays on across a rebuild: the one it was on (a pane may
        move it on when that record stopped needing anything)."""
        return selected

    def on_resize(self, _event: object) -> None:
        """Columns follow the pane's width: rebuild at the new size."""
        if self._last_overview is not None:
            self._columns_shown = ()  # a DataTable column only ever widens: make them afresh
            self.show(self._last_overview)

    def _fit(self, rows: list[Row]) -> tuple[tuple[str, ...], list[Row]]:
        """The columns that fit the pane's width and the rows cut to them: ids shortened, the
        `OPTIONAL` columns dropped (in order) while the rest would not fit, and the elastic
        columns sharing the width that is left (growing with the pane, "…" when cut)."""
        rows = self._shorten_ids(rows)
        widths = {name: len(name) for name in self.COLUMNS}
        for _key, cells in rows:
            for name, cell in zip(self.COLUMNS, cells, strict=False):
                widths[name] = max(widths[name], _cell_len(cell))
        pad = 2 * self.cell_padding
        avail = (self.size.width or 80) - 1
        names = list(self.COLUMNS)

        def need(shown: list[str]) -> int:
            """Width of `shown` with each elastic column at its preferred width (at least its header)."""
            return sum(min(widths[n], max(self.ELASTIC.get(n, widths[n]), len(n))) + pad for n in shown)

        for name in self.OPTIONAL:
            if need(names) <= avail:
                break
            if name in names:
                names.remove(name)
        limit, total = self._share(names, widths, avail)
        while len(names) > 1 and total > avail:
            names.pop()  # still too narrow: the rightmost columns go (the Inspector has them all)
            limit, total = self._share(names, widths, avail)
        index = [self.COLUMNS.index(n) for n in names]
        out: list[Row] = []
        for key, cells in rows:
            fitted = [cells[i] if i < len(cells) else "" for i in index]
            for position, name in enumerate(names):
                if name in limit:
                    fitted[position] = ellipsize(fitted[position], limit[name])
            out.append((key, fitted))
        return tuple(names), out

    def _share(self, names: list[str], widths: dict[str, int], avail: int) -> tuple[dict[str, int], int]:
        """Widths of the elastic columns among `names` and the table's total width: a column
        narrower than its share of the room keeps its width, one whose floor (its header,
        MIN_ELASTIC) is above its share gets the floor, the rest split what is left."""
        pad = 2 * self.cell_padding
        elastic = [n for n in names if n in self.ELASTIC]
        fixed = sum(widths[n] + pad for n in names if n not in self.ELASTIC)
        budget = avail - fixed - pad * len(elastic)
        limit: dict[str, int] = {}
        pool = list(elastic)
        while pool:
            share = budget // len(pool)
            settled = next((n for n in pool if widths[n] <= share or max(len(n), MIN_ELASTIC) >= share), None)
            if settled is None:
                break
            limit[settled] = widths[settled] if widths[settled] <= share else max(len(settled), MIN_ELASTIC)
            budget -= limit[settled]
            pool.remove(settled)
        for n in pool:
            limit[n] = budget // len(pool)
        return limit, fixed + sum(limit[n] + pad for n in elastic)

    def _shorten_ids(self, rows: list[Row]) -> list[Row]:
        columns = [self.COLUMNS.index(name) for name in self.ID_COLUMNS if name in self.COLUMNS]
        if not columns:
            return rows
        out = [(key, list(cells)) for key, cells in rows]
        for index in columns:
            short = short_ids([str(cells[index]) for _key, cells in out if index < len(cells)])
            for _key, cells in out:
                cell = cells[index] if index < len(cells) else None
                if isinstance(cell, str):
                    cells[index] = short.get(cell, cell)
        return [(key, tuple(cells)) for key, cells in out]

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


MIN_ELASTIC = 8
SHORT_ID_TAIL = 4


def _cell_len(cell: Cell) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


def short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each timestamped id (`T-20260115T093012.123456789`) as its prefix and shortest unique tail
    among `ids` (at least four characters: `T…6789`); short or hand-made ids (`RUN-demo`, `—`)
    stay whole."""
    long = sorted({i for i in ids if len(i) > 12 and "-" in i})
    out: dict[str, str] = {}
    for ident in long:
        prefix = ident.split("-", 1)[0]
        tail = SHORT_ID_TAIL
        while tail < len(ident) and any(o != ident and o.endswith(ident[-tail:]) for o in long):
            tail += 1
        out[ident] = f"{prefix}…{ident[-tail:]}" if tail + len(prefix) + 1 < len(ident) else ident
    return out


def ellipsize(cell: Cell, width: int) -> Cell:
    """`cell` cut to `width` cells with a trailing "…" when longer (one line)."""
    text = cell if isinstance(cell, Text) else Text(str(cell))
    plain = text.plain.replace("\n", " ")
    if len(plain) <= width and "\n" not in text.plain:
        return cell
    cut = text.copy() if "\n" not in text.plain else Text(plain, style=text.style)
    cut.truncate(width, overflow="ellipsis")
    return cut


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
    "scheduled": "cyan",  # a turn's (services.coordination.turns.Turn.status)
    "started": "bold green",
    SessionStatus.STARTING: "yellow",
    SessionStatus.ENDED: "dim",
}


def status_cell(status: str) -> Text:
    return Text(status, style=STATUS_STYLES.get(status, ""))
