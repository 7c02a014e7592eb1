"""Pilot: the console follows writes from this process (change bus) and from other processes
(the store's commit watch on PRAGMA data_version), and shows a stale marker while the database is unreadable."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from roundtable.runtime import Runtime
from roundtable.tui.widgets.events_pane import EventsPane
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import RUN_ID

pytestmark = pytest.mark.anyio


async def test_in_process_commit_refreshes_through_the_bus(seeded: Runtime) -> None:
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)):
        await settle(app)
        async with seeded.db.write() as tx:
            await tx.update("proposals", {"id": "P-0"}, {"title": "Renamed by an agent"})
            await tx.append_event(RUN_ID, "proposal.updated", {"id": "P-0"})
        events = app.query_one(EventsPane)
        await wait_for(lambda: events.total == 12, timeout=2.0, what="new event listed")
        assert events.cursor == 11  # still following the tail
        proposals = app.query_one(ProposalsPane)
        assert any("Renamed by an agent" in str(c) for c in proposals.get_row("P-0"))


async def test_write_by_another_process_appears_within_a_second(seeded: Runtime) -> None:
    app = make_app(seeded, watch_commits=True)
    async with app.run_test(size=(140, 40)):
        await settle(app)
        await wait_for(lambda: bool(app.workers), what="watchers started")
        other = await Runtime.open(seeded.root)  # its own bus: ours hears nothing from it
        try:
            started = time.monotonic()
            async with other.db.write() as tx:
                await tx.append_event(RUN_ID, "external.write", {"from": "another process"})
            events = app.query_one(EventsPane)
            await wait_for(lambda: events.total == 12, timeout=3.0, what="external event listed")
            assert time.monotonic() - started < 1.0
        finally:
            await other.close()


async def test_stale_marker_appears_and_clears(seeded: Runtime) -> None:
    app = make_app(seeded, watch_commits=True)
    db_path = seeded.db.path
    moved = db_path.with_name("moved.db")
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _quiet(app)  # let the watcher's notices of the seeding writes play out first
        assert app.stale is None
        os.rename(db_path, moved)
        try:
            await wait_for(lambda: app.stale is not None, timeout=3.0, what="stale marker")
        finally:
            os.rename(moved, db_path)
        assert app.stale is not None and "database file missing" in app.stale.reason
        header = str(app.header.compose_text())
        assert "STALE since 09:30:00" in header and "database file missing" in header
        # The panes keep their last data while stale.
        assert app.query_one(ProposalsPane).row_count == 2
        await wait_for(lambda: app.stale is None, timeout=3.0, what="stale marker cleared")
        assert "live" in str(app.header.compose_text())

        # A closed database is stale too (and says why); ctrl+r forces the refresh.
        await seeded.db.close()
        await pilot.press("ctrl+r")
        await wait_for(lambda: app.stale is not None, timeout=3.0, what="stale after close")
        assert "database is closed" in app.stale.reason


async def _quiet(app, quiet: float = 0.4, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    """Wait until no new overview has landed for `quiet` seconds (each refresh puts a new one)."""
    deadline = time.monotonic() + timeout
    seen, since = app.overview, time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        if app.overview is not seen:
            seen, since = app.overview, time.monotonic()
        elif time.monotonic() - since >= quiet and app.refresher.idle:
            return
