"""Pilot: the panes fill from a seeded database; keys move focus and selection; enter inspects;
`/` filters; help and the palette open."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette

from roundtable.runtime import Runtime
from roundtable.tui.commands import BY_ID, display_key
from roundtable.tui.screens.help import HelpScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.claims_pane import ClaimsPane
from roundtable.tui.widgets.events_pane import EventsPane
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.sessions_pane import SessionsPane
from roundtable.tui.widgets.transactions_pane import TransactionsPane
from roundtable.tui.widgets.turns_pane import TurnsPane
from tests.tui.conftest import make_app, notifications, settle, wait_for
from tests.tui.seed import seed

pytestmark = pytest.mark.anyio


async def test_panes_fill_from_the_database(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)):
        await settle(app)
        proposals = app.query_one(ProposalsPane)
        assert proposals.row_count == 2
        assert proposals.selected_key() == "P-1"  # open proposals first
        approvals = app.query_one(ApprovalsPane)
        assert approvals.selected_key() == "H-1"  # requested first
        turns = app.query_one(TurnsPane)
        assert turns.row_count == 2
        assert app.query_one(ClaimsPane).total == 4
        events = app.query_one(EventsPane)
        assert events.total == 11
        assert events.cursor == 10  # follows the tail
        header = str(app.header.compose_text())
        assert "RUN-demo" in header and "Improve the calculator" in header and "live" in header


async def test_keys_move_focus_and_selection(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        assert isinstance(app.focused, ProposalsPane)
        await pilot.press("j")
        assert app.query_one(ProposalsPane).selected_key() == "P-0"
        await pilot.press("k")
        assert app.query_one(ProposalsPane).selected_key() == "P-1"
        await pilot.press("tab")
        assert isinstance(app.focused, SessionsPane)  # under Proposals, same column
        await pilot.press("tab")
        assert isinstance(app.focused, ApprovalsPane)
        await pilot.press("down")
        assert app.query_one(ApprovalsPane).selected_key() == "H-0"
        await pilot.press("shift+tab")
        assert isinstance(app.focused, SessionsPane)
        await pilot.press("tab", "tab")
        assert isinstance(app.focused, TransactionsPane)
        await pilot.press("tab")
        assert isinstance(app.focused, Inspector)
        await pilot.press("tab")
        assert isinstance(app.focused, AgentsPane)  # the bottom row, left to right
        await pilot.press("tab")
        claims = app.query_one(ClaimsPane)
        assert app.focused is claims
        await pilot.press("j", "j")
        assert claims.cursor == 2
        await pilot.press("G")
        assert claims.cursor == 3
        await pilot.press("g")
        assert claims.cursor == 0
        await pilot.press("tab")
        events = app.query_one(EventsPane)
        assert app.focused is events
        await pilot.press("k")
        assert events.cursor == 9 and not events.follow
        await pilot.press("G")
        assert events.cursor == 10 and events.follow


async def test_enter_inspects_the_selected_record(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        app.query_one(ApprovalsPane).focus()
        await pilot.press("enter")
        inspector = app.query_one(Inspector)
        await wait_for(lambda: inspector.entity is not None and inspector.entity.id == "H-1", what="approval inspected")
        assert inspector.entity is not None and inspector.entity.record["status"] == "requested"
        app.query_one(ProposalsPane).focus()
        await pilot.press("enter")
        await wait_for(lambda: inspector.entity is not None and inspector.entity.id == "P-1", what="proposal inspected")
        assert "def mul" in inspector.entity.diff_text
        app.query_one(ClaimsPane).focus()
        await pilot.press("j", "enter")
        await wait_for(
            lambda: inspector.entity is not None and inspector.entity.kind == "claim", what="claim inspected"
        )
        assert inspector.entity.id == "C-000001"
        assert inspector.entity.related["contentions"][0]["id"] == "CC-1"


async def test_filter_narrows_the_focused_pane(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        app.query_one(ClaimsPane).focus()
        await pilot.press("slash")
        await pilot.press(*"calc", "enter")
        claims = app.query_one(ClaimsPane)
        await wait_for(lambda: claims.filter_text == "calc" and claims.total == 2, what="claims filtered")
        assert "/calc" in str(claims.border_title)
        app.query_one(ProposalsPane).focus()
        await pilot.press("slash", *"rewrite", "enter")
        await wait_for(lambda: app.query_one(ProposalsPane).row_count == 1, what="proposals filtered")
        assert app.query_one(ProposalsPane).selected_key() == "P-0"


async def test_help_opens_and_closes(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_config_overrides_a_key_everywhere(project: Path) -> None:
    config = project / ".roundtable" / "config.yaml"
    config.write_text(config.read_text() + "tui:\n  bindings:\n    approve: ctrl+a\n    nonsense: ctrl+z\n")
    runtime = await Runtime.open(project)
    try:
        await seed(runtime)
        app = make_app(runtime)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(app)
            assert display_key(app, BY_ID["approve"]) == "^a"
            app.query_one(ApprovalsPane).focus()
            await pilot.press("a")  # the default key no longer approves
            await pilot.pause(0.2)
            assert await _status(runtime, "H-1") == "requested"
            await pilot.press("ctrl+a", "y")
            await wait_for(lambda: any("approved" in n for n in notifications(app)), what="approve notice")
            assert await _status(runtime, "H-1") == "approved"
    finally:
        await runtime.close()


async def test_palette_lists_and_runs_registry_commands(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("ctrl+p")
        await wait_for(lambda: isinstance(app.screen, CommandPalette), what="palette")
        await pilot.press(*"filter")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="filter prompt from the palette")
        assert app.is_running


async def _status(runtime: Runtime, approval_id: str) -> str:
    async with runtime.db.read() as r:
        return str(await r.scalar("SELECT status FROM human_approvals WHERE id = ?", (approval_id,)))


async def test_paging_reads_the_next_page_before_the_view_reaches_it(seeded: Runtime) -> None:
    """The page a screen below the view is read ahead: paging down finds it already read."""
    from roundtable.tui.widgets.virtual_list import PAGE
    from tests.tui.seed import bulk

    await bulk(seeded, events=3 * PAGE)
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        events = app.query_one(EventsPane)
        events.focus()
        await pilot.press("g")  # the first page
        await wait_for(lambda: events.cursor == 0 and 0 in events._pages, what="at the top")
        visible = events._visible_rows()
        # page down until the view's last row is within a screen of the second page, still on the first
        while int(events.scroll_offset.y) + 2 * visible <= PAGE:
            await pilot.press("pagedown")
        assert int(events.scroll_offset.y) + visible <= PAGE, "still on the first page"
        await wait_for(lambda: 1 in events._pages, what="the next page read ahead")
        await pilot.press("pagedown")
        assert events.on_screen()  # the press that crosses into it paints rows, not placeholders
