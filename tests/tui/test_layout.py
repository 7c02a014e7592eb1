"""The console at every size: every pane from 120x32 up, one pane at a time below (with the
pane bar, tab and the number keys), and `z` zooming the focused pane at any size."""

from __future__ import annotations

import pytest

from roundtable.runtime import Runtime
from roundtable.tui import layout
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.claims_pane import ClaimsPane
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from tests.tui.conftest import make_app, settle, wait_for

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("size", "single"),
    [((80, 24), True), ((119, 45), True), ((160, 31), True), ((120, 32), False), ((220, 60), False)],
)
def test_compact_below_120x32(size: tuple[int, int], single: bool) -> None:
    assert layout.decide(*size, zoomed=False, focused="claims", last="proposals").single is single
    assert layout.decide(*size, zoomed=True, focused="claims", last="proposals") == layout.Layout(True, "claims")


def test_focus_outside_a_pane_keeps_the_last_one() -> None:
    assert layout.decide(80, 24, zoomed=False, focused=None, last="events").shown == "events"
    assert layout.decide(80, 24, zoomed=False, focused="nope", last="").shown == "proposals"


def test_pane_bar_names_every_pane_and_marks_the_shown_one() -> None:
    wide = layout.pane_bar("claims", 200).plain
    assert all(f"{layout.pane_key(n)} {title}" in wide for n, (_, title) in enumerate(layout.PANES, start=1))
    assert "9 Tasks" in wide and "0 Agents" in wide and "i Inspector" in wide
    narrow = layout.pane_bar("claims", 80).plain
    assert "7 Claims" in narrow and "3 Prop " in narrow and len(narrow) <= 80


def _visible(app: object) -> set[str]:
    screen = app.screen  # type: ignore[attr-defined]
    return {pane_id for pane_id in layout.PANE_IDS if screen.query_one(f"#{pane_id}").display}


async def test_at_80x24_one_pane_at_a_time(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        assert app.layout_single and _visible(app) == {"proposals"}
        proposals = app.screen.query_one(ProposalsPane)
        assert proposals.size.height >= 15, "the shown pane takes the room"
        assert app.screen.query_one("#pane-bar").display
        await pilot.press("tab")
        assert _visible(app) == {"sessions"}
        await pilot.press("shift+tab", "shift+tab")
        assert _visible(app) == {"turns"}
        await pilot.press("7")
        assert _visible(app) == {"claims"} and isinstance(app.focused, ClaimsPane)
        await pilot.press("enter")
        await wait_for(lambda: _visible(app) == {"inspector"}, what="inspector shown")
        assert isinstance(app.focused, Inspector)
        await pilot.press("3")
        assert _visible(app) == {"proposals"}
        await pilot.press("0")
        assert _visible(app) == {"agents"} and isinstance(app.focused, AgentsPane)
        await pilot.press("i")
        assert _visible(app) == {"inspector"} and isinstance(app.focused, Inspector)


async def test_growing_the_terminal_shows_every_pane_again(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        assert _visible(app) == {"proposals"}
        await pilot.resize_terminal(160, 45)
        await wait_for(lambda: _visible(app) == set(layout.PANE_IDS), what="every pane")
        assert not app.layout_single and not app.screen.query_one("#pane-bar").display


async def test_zoom_at_any_size(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        assert _visible(app) == set(layout.PANE_IDS)
        await pilot.press("z")
        assert _visible(app) == {"proposals"}
        await pilot.press("tab")
        assert _visible(app) == {"sessions"}
        await pilot.press("z")
        assert _visible(app) == set(layout.PANE_IDS)


def test_long_free_text_ends_with_an_ellipsis_and_ids_stay_whole() -> None:
    from rich.text import Text

    from roundtable.tui.widgets.table_pane import ellipsize

    assert ellipsize("short", 32) == "short"
    cut = ellipsize("A very long proposal title that goes on and on and on", 20)
    assert isinstance(cut, Text) and cut.plain.endswith("…") and cut.cell_len == 20
    assert ellipsize(Text("two\nlines", style="bold"), 32).plain == "two lines"


async def test_a_long_title_does_not_push_the_author_off(seeded: Runtime) -> None:
    from roundtable.tui.widgets.proposals_pane import ProposalsPane

    async with seeded.db.write(tool="test.title") as tx:
        await tx.execute("UPDATE proposals SET title = ? WHERE id = 'P-1'", ("Add mul() " + "and more " * 20,))
    app = make_app(seeded)
    async with app.run_test(size=(80, 24)):
        await settle(app)
        pane = app.screen.query_one(ProposalsPane)
        title, author = pane.get_row("P-1")[0], pane.get_row("P-1")[4]
        assert str(title).endswith("…") and len(str(title)) <= 32
        assert str(author) == "implementer-1"
