"""A virtual list for long tables: renders only the visible lines (Textual's Line API) and
pages rows from SQLite by key with a small cache.

Opening costs one count query and one page, whatever the table's size. Moving one page on
reads the next page after the last cached key; a jump (end, scrollbar drag) reads one page by
position. Loads run in workers, so input never waits for the database; a line whose page is
still loading shows a placeholder until the page arrives. The pages a screen above and below
the view are read ahead, so paging through the list finds the next page already read instead of
painting placeholders and then the rows.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.views.pages import VirtualSource
from roundtable.tui.dbfile import check_database_file
from roundtable.tui.messages import RefreshFailed, Selected

PAGE = 100
CACHE_PAGES = 24


class VirtualList(ScrollView, can_focus=True):
    """Base class: subclasses set `kind`, `TITLE`, `source` and implement `header()`/`format()`."""

    kind: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    # Lines that show countdowns: repainted (not re-read) every second by the console's clock.
    CLOCKED: ClassVar[bool] = False

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "virtual-list--header",
        "virtual-list--cursor",
        "virtual-list--placeholder",
    }

    BINDINGS: ClassVar = [
        Binding("j,down", "move(1)", "Down", show=False),
        Binding("k,up", "move(-1)", "Up", show=False),
        Binding("pagedown", "move_page(1)", "Page down", show=False),
        Binding("pageup", "move_page(-1)", "Page up", show=False),
        Binding("home,g", "jump(0)", "First", show=False),
        Binding("end,G", "jump(-1)", "Last", show=False),
        Binding("enter", "inspect", "Inspect", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=False, init=False)

    def __init__(
        self,
        runtime: Runtime,
        source: VirtualSource,
        *,
        follow: bool = False,
        id: str | None = None,
        clock_ns: Callable[[], int] = clock.now_ns,
    ) -> None:
        super().__init__(id=id)
        self.runtime = runtime
        self.source = source
        self.follow = follow
        self.clock_ns = clock_ns
        self.filter_text = ""
        self.total = 0
        self.loaded = False
        self._pages: OrderedDict[int, list[Any]] = OrderedDict()
        self._stale: dict[int, list[Any]] = {}
        self._pending: set[int] = set()
        self._generation = 0
        self._posted: str | None = None
        self._counting = False
        self._count_again = False

    # --- data -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self._set_title()
        self.reload()

    def reload(self, *, invalidate: bool = False) -> None:
        """Re-count and re-read visible pages (after a committed change or a new filter)."""
        if invalidate:
            self._generation += 1
            self._pages.clear()
            self._stale.clear()
            self._pending.clear()
        if self._counting:
            self._count_again = True  # one more count after the running one (a burst is one)
            return
        self._counting = True
        self._load_count()

    # Workers are never cancelled mid-read (a cancelled read could hand its pooled connection
    # back inside a transaction); a newer request waits for the running one and results that
    # no longer match the current filter are dropped.
    @work(exclusive=True, group="count", exit_on_error=False)
    async def _load_count(self) -> None:
        try:
            while True:
                self._count_again = False
                generation = self._generation
                try:
                    check_database_file(Path(self.runtime.db.path))
                    async with self.runtime.db.read() as reader:
                        total = await self.source.count(reader, self.filter_text)
                except Exception as exc:
                    self.post_message(RefreshFailed(f"{self.TITLE}: {exc}"))
                    return
                if generation == self._generation and not self._count_again:
                    self._apply_count(total)
                if not self._count_again:
                    return
        finally:
            self._counting = False

    def _apply_count(self, total: int) -> None:
        old = self.total
        self.total = total
        self.loaded = True
        if self.source.append_only and total >= old:
            # Rows only ever arrive at the end: every full page stays valid; the last may grow.
            last = old // PAGE
            self._pages.pop(last, None)
            self._pending.discard(last)
        else:
            # Rows may have changed anywhere: keep showing the old pages until the new arrive.
            self._stale = {**self._stale, **self._pages}
            self._pages.clear()
            self._pending.clear()
            self._generation += 1
        self.virtual_size = Size(max(self.scrollable_content_region.width, 1), total + 1)
        if self.follow and total:
            self.cursor = total - 1
            self.call_after_refresh(self._scroll_to_cursor)
        elif self.cursor >= total:
            self.cursor = max(total - 1, 0)
        self._set_title()
        self.refresh()

    def _row(self, index: int) -> Any | None:
        page, slot = divmod(index, PAGE)
        rows = self._pages.get(page)
        if rows is not None:
            self._pages.move_to_end(page)
        else:
            self._request(page)
            rows = self._stale.get(page)
        if rows is None or slot >= len(rows):
            return None
        return rows[slot]

    def _request(self, page: int) -> None:
        if page in self._pending or page * PAGE >= self.total:
            return
        self._pending.add(page)
        self._load_page(page, self._generation)

    @work(group="pages", exit_on_error=False)
    async def _load_page(self, page: int, generation: int) -> None:
        after = before = None
        prev, nxt = self._pages.get(page - 1), self._pages.get(page + 1)
        if prev and len(prev) == PAGE:
            after = prev[-1].key
        elif nxt:
            before = nxt[0].key
        try:
            check_database_file(Path(self.runtime.db.path))
            async with self.runtime.db.read() as reader:
                rows = await self.source.page(
                    reader, self.filter_text, offset=page * PAGE, limit=PAGE, after=after, before=before
                )
        except Exception as exc:
            self._pending.discard(page)
            self.post_message(RefreshFailed(f"{self.TITLE}: {exc}"))
            return
        if generation != self._generation:
            return
        self._pending.discard(page)
        self._pages[page] = rows
        self._stale.pop(page, None)
        while len(self._pages) > CACHE_PAGES:
            self._pages.popitem(last=False)
        self._post_selection()
        if self._in_view(page):
            self.refresh()  # a page read ahead, out of view, needs no repaint

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip()
        self.loaded = False
        self.cursor = 0
        self.scroll_to(y=0, animate=False)
        self._stale.clear()
        self.reload(invalidate=True)

    def selected(self) -> Any | None:
        return self._row(self.cursor) if self.total else None

    # --- rendering --------------------------------------------------------------------------

    def header(self) -> Text:
        raise NotImplementedError

    def format(self, row: Any, width: int) -> Text:
        raise NotImplementedError

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if y == 0:
            text = self.header()
            style = self.get_component_rich_style("virtual-list--header")
            return _strip(text, width, style, self)
        index = int(self.scroll_offset.y) + y - 1
        if index >= self.total:
            return Strip.blank(width, self.rich_style)
        row = self._row(index)
        if row is None:
            return _strip(Text("  …"), width, self.get_component_rich_style("virtual-list--placeholder"), self)
        text = self.format(row, width)
        style = self.rich_style
        if index == self.cursor:
            style = self.get_component_rich_style("virtual-list--cursor")
        return _strip(text, width, style, self)

    # --- movement ---------------------------------------------------------------------------

    def _visible_rows(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)

    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        self.refresh()
        self._post_selection()
        self.call_after_refresh(self._read_ahead)  # after the repaint: never in the key's path

    def _read_ahead(self) -> None:
        """Request the pages a screen above and below the view that are not read yet."""
        top = int(self.scroll_offset.y)
        visible = self._visible_rows()
        for index in (top - visible, top + 2 * visible - 1):
            if 0 <= index < self.total and index // PAGE not in self._pages:
                self._request(index // PAGE)

    def _in_view(self, page: int) -> bool:
        top = int(self.scroll_offset.y)
        return page * PAGE < top + self._visible_rows() and top < (page + 1) * PAGE

    def on_screen(self) -> bool:
        """Every row in view has been read (a page read ahead may still be on its way)."""
        top = int(self.scroll_offset.y)
        last = min(top + self._visible_rows(), self.total) - 1
        return all(page in self._pages for page in range(top // PAGE, last // PAGE + 1)) if last >= top else True

    def _post_selection(self) -> None:
        # Moving through a long list only remembers the row; the inspector loads on enter, so
        # scanning thousands of rows never waits for a record to load and render.
        row = self._row(self.cursor) if self.total else None
        if row is not None:
            self._posted = str(row.key)

    def _scroll_to_cursor(self) -> None:
        top = int(self.scroll_offset.y)
        visible = self._visible_rows()
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + visible:
            self.scroll_to(y=self.cursor - visible + 1, animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        if not self.total:
            return
        self.cursor = min(max(self.cursor + delta, 0), self.total - 1)
        self.follow = type(self).FOLLOWS and self.cursor == self.total - 1

    def action_move_page(self, direction: int) -> None:
        self.action_move(direction * self._visible_rows())

    def action_jump(self, where: int) -> None:
        if not self.total:
            return
        self.cursor = 0 if where == 0 else self.total - 1
        self.follow = type(self).FOLLOWS and self.cursor == self.total - 1

    def action_inspect(self) -> None:
        row = self.selected()
        if row is not None:
            self.post_message(Selected(self.kind, str(row.key), inspect=True, pane=self))

    FOLLOWS: ClassVar[bool] = False

    def _set_title(self) -> None:
        count = f"{self.total:,}" if self.loaded else "…"
        suffix = f" /{self.filter_text}" if self.filter_text else ""
        self.border_title = f"{self.TITLE} ({count}){suffix}"

    def on_resize(self) -> None:
        self.virtual_size = Size(max(self.scrollable_content_region.width, 1), self.total + 1)


def _strip(text: Text, width: int, style: Style, widget: VirtualList) -> Strip:
    text.no_wrap = True
    text.overflow = "ellipsis"
    text.truncate(width, overflow="ellipsis", pad=True)
    segments = [
        Segment(s.text, style + s.style if s.style else style)
        for s in text.render(widget.app.console)
        if s.text != "\n"
    ]
    return Strip(segments, width).crop(0, width)
