"""Every pane renders its rows in every mode and size: alone (below 120x32), zoomed (`z`) and in
the grid, at 80x24, 120x32 and 200x50 — a data row on screen, not a border alone — with a
snapshot of each."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from roundtable.runtime import Runtime
from roundtable.tui import layout
from roundtable.tui.app import RoundtableApp
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.table_pane import TablePane
from roundtable.tui.widgets.virtual_list import VirtualList
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import seed, seed_live_session

SIZES = {"80x24": (80, 24), "120x32": (120, 32), "200x50": (200, 50)}
# Alone below 120x32 (where `z` changes nothing), zoomed and in the grid from 120x32 up.
MODES = [("80x24", "single"), ("120x32", "zoomed"), ("120x32", "grid"), ("200x50", "zoomed"), ("200x50", "grid")]
CASES = [(size, mode, pane) for size, mode in MODES for pane in layout.PANE_IDS]


@pytest.fixture
def full_runtime(project: Path) -> Iterator[Runtime]:
    """The seeded table plus sessions, so every pane has rows."""

    async def open_seeded() -> Runtime:
        runtime = await Runtime.open(project)
        await seed(runtime)
        await seed_live_session(runtime)
        return runtime

    runtime = asyncio.run(open_seeded())
    try:
        yield runtime
    finally:
        asyncio.run(runtime.close())


async def show(app: RoundtableApp, pilot: Pilot[None], pane_id: str, mode: str) -> None:
    """Focus the pane (its number key), zoom it when asked, and wait for its rows."""
    await settle(app)
    if pane_id == "inspector":
        await pilot.press("3", "enter")  # the Inspector shows the selected proposal
        await wait_for(lambda: app.query_one(Inspector).entity is not None, what="inspector filled")
    await pilot.press(layout.pane_key(layout.PANE_IDS.index(pane_id) + 1))
    if mode == "zoomed":
        await pilot.press("z")
    await pilot.pause()
    await settle(app)


def first_lines(app: RoundtableApp, pane_id: str, count: int) -> list[str]:
    widget = app.screen.query_one(f"#{pane_id}")
    if isinstance(widget, Inspector):
        body = widget.query_one("#inspector-body")
        return [body.render_line(y).text for y in range(min(count, body.content_region.height))]
    return [widget.render_line(y).text for y in range(min(count, widget.content_region.height))]


@pytest.mark.anyio
@pytest.mark.parametrize(("size", "mode", "pane_id"), CASES, ids=[f"{s}-{m}-{p}" for s, m, p in CASES])
async def test_each_pane_shows_its_rows(full_runtime: Runtime, size: str, mode: str, pane_id: str) -> None:
    app = make_app(full_runtime)
    async with app.run_test(size=SIZES[size]) as pilot:
        await show(app, pilot, pane_id, mode)
        widget = app.screen.query_one(f"#{pane_id}")
        assert app.layout_single is (mode != "grid")
        assert widget.display and widget.region.height >= 4, (pane_id, widget.region)
        lines = first_lines(app, pane_id, 3)
        if isinstance(widget, TablePane | VirtualList):
            # Line 0 is the header; line 1 the first data row.
            assert len(lines) >= 2 and lines[1].strip(), (pane_id, lines)
            if isinstance(widget, TablePane):
                assert widget.row_count > 0
                first = str(widget.get_row_at(0)[0])
                assert first.rstrip("…")[:6] in lines[1], (first, lines[1])
                # No column is cut by the pane's edge: the shown columns fit its width.
                total = sum(c.get_render_width(widget) for c in widget.columns.values())
                assert total <= widget.size.width, (pane_id, total, widget.size.width, lines[0])
        else:
            assert any(line.strip() for line in lines), (pane_id, lines)


SNAP_CASES = [(size, mode, pane) for size, mode in MODES if mode != "grid" for pane in layout.PANE_IDS]


@pytest.mark.parametrize(("size", "mode", "pane_id"), SNAP_CASES, ids=[f"{s}-{m}-{p}" for s, m, p in SNAP_CASES])
def test_pane_snapshot(snap_compare: Any, full_runtime: Runtime, size: str, mode: str, pane_id: str) -> None:
    app = make_app(full_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await show(app, pilot, pane_id, mode)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=ready)


@pytest.mark.parametrize("size", ["120x32", "200x50"])
def test_grid_snapshot(snap_compare: Any, full_runtime: Runtime, size: str) -> None:
    app = make_app(full_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await settle(app)
        await wait_for(lambda: app.query_one(Inspector).entity is not None, what="inspector filled")
        await settle(app)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=ready)
