"""Keeping the console current: the change bus announces commits — this process's, and other
processes' through the store's one commit watch (`Database.watch_commits`) —, a refresh
reads one `Overview`, the inspector loads one record; both reads go through a `Coalescer`, so a
burst of notices becomes one more read, never a queue. While a dialog is open refreshes wait and
catch up when it closes. A failed read keeps the panes' data and marks the header stale.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import work

from roundtable.services.views.entity import Entity, load_entity, read_diff
from roundtable.services.views.models import Overview, attention
from roundtable.services.views.overview import ActivityLog, load_overview
from roundtable.tui.base import ConsoleBase, describe, while_mounted
from roundtable.tui.dbfile import check_database_file
from roundtable.tui.messages import (
    DatabaseChanged,
    DialogClosed,
    GateReport,
    GatesStale,
    InspectRequested,
    OverviewLoaded,
    RefreshFailed,
    RefreshRequested,
    Selected,
)
from roundtable.tui.scheduler import Coalescer
from roundtable.tui.widgets.header import Staleness
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.table_pane import TablePane
from roundtable.tui.widgets.virtual_list import VirtualList
from roundtable.tui.workstats import WorkStats


class LiveConsole(ConsoleBase):
    """The console kept current: refresh, inspection, staleness and the 1 s repaint of relative
    times. `RoundtableApp` is this with its screen and its keys."""

    def _setup_live(self, *, watch_commits: bool, live_clock: bool) -> None:
        self.watch_commits = watch_commits
        self.live_clock = live_clock
        self.stale: Staleness | None = None
        self.gate_reports: dict[str, tuple[dict[str, Any] | None, str]] = {}
        self._held = False  # a refresh came due while a dialog was open
        self._activity = ActivityLog()
        self._work = WorkStats()
        self.refresher: Coalescer[None] = Coalescer(self._load_overview, self._refresh_worker)
        self.inspections: Coalescer[tuple[str, str]] = Coalescer(self._load_entity, self._inspect_worker)

    def start_live(self) -> None:
        self.request_refresh()
        if self.watch_commits:
            self.runtime.db.watch_commits()  # other processes' commits reach the bus too
        self._watch_bus()
        if self.live_clock:
            # Re-renders relative times (ages, countdowns, the Chair's next tick); reads nothing.
            self.set_interval(1.0, self._tick_clock)

    @while_mounted
    def _tick_clock(self) -> None:
        self.header.update_view()
        if self.overview is not None:
            for pane in self._main.query(TablePane):
                if pane.CLOCKED:  # ages and countdowns
                    pane.show(self.overview)
        for vlist in self._main.query(VirtualList):
            if vlist.CLOCKED:
                vlist.refresh()  # claim expiry counts down: repaint the visible lines, no query

    # --- notices of change ------------------------------------------------------------------

    @work(group="bus", exit_on_error=False)
    async def _watch_bus(self) -> None:
        with self.runtime.bus.subscribe() as sub:
            while True:
                await sub.get()
                self.post_message(DatabaseChanged("bus"))

    def on_database_changed(self, message: DatabaseChanged) -> None:
        if len(self.screen_stack) > 1:
            self._held = True  # paused while a modal is open; caught up when it closes
            return
        self.request_refresh()

    def on_dialog_closed(self, _message: DialogClosed) -> None:
        if self._held and len(self.screen_stack) <= 1:
            self._held = False
            self.request_refresh()

    # --- the refresh ------------------------------------------------------------------------

    def request_refresh(self) -> None:
        """Start a refresh, or mark one due if a refresh is running (a burst becomes one more)."""
        self.refresher.request(None)

    def on_refresh_requested(self, _message: RefreshRequested) -> None:
        self.request_refresh()

    @work(exclusive=True, group="refresh", exit_on_error=False)
    async def _refresh_worker(self) -> None:
        await self.refresher.run()

    async def _load_overview(self, _: None) -> None:
        try:
            check_database_file(Path(self.runtime.db.path))
            work = await self._work.update(self.runtime.root, self.runtime.db, self.runtime.config)
            async with self.runtime.db.read() as reader:
                overview = await load_overview(
                    reader, self.run_id, self.runtime.config, activity=self._activity, work=work
                )
        except Exception as exc:
            self.post_message(RefreshFailed(describe(exc)))
        else:
            self.post_message(OverviewLoaded(overview))

    def on_overview_loaded(self, message: OverviewLoaded) -> None:
        self.overview = message.overview

    @while_mounted
    def watch_overview(self, overview: Overview | None) -> None:
        """A new read: the header, the ⚑ count, the short panes, the long lists and the inspector
        show it."""
        if overview is None:
            return
        self.stale = None
        self.header.stale = None
        self.header.overview = overview
        self.header.update_view()
        alerts = getattr(self, "alerts", None)
        if alerts is not None and not self.read_only:
            alerts.set_count(len(attention(overview, self.dismissed)))
        for pane in self._main.query(TablePane):
            pane.show(overview)
        for vlist in self._main.query(VirtualList):
            vlist.reload()
        if self.inspections.latest is not None:
            self.load_inspector(*self.inspections.latest)

    @while_mounted
    def on_refresh_failed(self, message: RefreshFailed) -> None:
        if self.stale is None:
            self.stale = Staleness(self.clock_ns(), message.reason)
        else:
            self.stale = replace(self.stale, reason=message.reason)
        self.header.stale = self.stale
        self.header.update_view()

    # --- the inspector ----------------------------------------------------------------------

    @while_mounted
    def on_selected(self, message: Selected) -> None:
        if message.inspect or (message.pane is not None and message.pane is self.focused):
            self.load_inspector(message.kind, message.entity_id)
        if message.inspect and self.layout_single:  # one pane at a time: show what was asked for
            self._main.query_one(Inspector).focus()

    def load_inspector(self, kind: str, entity_id: str) -> None:
        """Show `kind` `entity_id` in the inspector (loaded in a worker; the latest request wins)."""
        self.inspections.request((kind, entity_id))

    def on_inspect_requested(self, message: InspectRequested) -> None:
        self.load_inspector(message.kind, message.entity_id)

    @property
    def inspecting(self) -> tuple[str, str] | None:
        return self.inspections.latest

    @work(exclusive=True, group="inspect", exit_on_error=False)
    async def _inspect_worker(self) -> None:
        await self.inspections.run()

    async def _load_entity(self, request: tuple[str, str]) -> None:
        kind, entity_id = request
        entity: Entity | None
        try:
            check_database_file(Path(self.runtime.db.path))
            async with self.runtime.db.read() as reader:
                entity = await load_entity(reader, kind, entity_id)
            if entity is not None and kind == "proposal":
                text, note = await asyncio.to_thread(read_diff, self.runtime.root, entity.record)
                entity = replace(entity, diff_text=text, diff_note=note)
        except Exception as exc:
            self.post_message(RefreshFailed(describe(exc)))
            return
        if self.inspections.superseded:
            return  # a newer request is waiting: show that one instead
        self._show_entity(entity, kind, entity_id)

    @while_mounted
    def _show_entity(self, entity: Entity | None, kind: str, entity_id: str) -> None:
        inspector = self._main.query_one(Inspector)
        inspector.gate = self.gate_reports.get(entity_id) if kind == "proposal" else None
        inspector.show_entity(entity, kind, entity_id)

    @while_mounted
    def on_gate_report(self, message: GateReport) -> None:
        self.gate_reports[message.proposal_id] = (message.report, message.error)
        if self.inspecting == ("proposal", message.proposal_id):
            self._main.query_one(Inspector).show_gates(message.report, message.error)

    @while_mounted
    def on_gates_stale(self, message: GatesStale) -> None:
        """A report from before an apply/reject/rollback no longer describes the proposal."""
        proposal_id = message.proposal_id
        self.gate_reports.pop(proposal_id, None)
        if self.inspecting == ("proposal", proposal_id):
            self._main.query_one(Inspector).show_gates(None, "")
