"""The operator's console: a Textual app over one open `Runtime`.

The app reads the database directly (one read snapshot per refresh, keyed pages for long
lists) and changes it only through `Runtime.call` with the operator as caller, exactly like an
agent's call, so every action is validated, transactional and audited. It refreshes when the
change bus announces a commit in this process and when `watchfiles` sees the database files
change (writes by other processes); bursts coalesce into one refresh, and there is no timer
that polls the database.

`RoundtableApp` needs only an open runtime, so tests build it from the `runtime` fixture;
`launch.run_console` wraps it with the owner (lock, Chair, HTTP and socket listeners).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from functools import wraps
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Static

from roundtable import clock, domain
from roundtable.runtime import Runtime
from roundtable.services.testing import sandbox_for
from roundtable.store.records import HumanApproval, Proposal, Run, Task, Transaction
from roundtable.supervisor import NOT_RUNNING, Supervisor, supervisor_for
from roundtable.tools.context import Caller
from roundtable.tui import commands, layout
from roundtable.tui.data import (
    AttentionItem,
    Overview,
    SessionRow,
    attention,
    check_database_file,
    load_entity,
    load_overview,
    read_diff,
)
from roundtable.tui.messages import DatabaseChanged, EntityLoaded, GateReport, OverviewLoaded, RefreshFailed, Selected
from roundtable.tui.screens.attention import AttentionScreen
from roundtable.tui.screens.confirm import ConfirmScreen, apply_dialog, decision_dialog, rollback_dialog
from roundtable.tui.screens.help import HelpScreen
from roundtable.tui.screens.launch import LaunchChoices, LaunchRequest, LaunchScreen, launch_dialog, revoke_dialog
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.screens.task_form import TaskForm
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.claims_pane import ClaimsPane
from roundtable.tui.widgets.events_pane import EventsPane
from roundtable.tui.widgets.header import ConsoleHeader, OwnerInfo, Staleness
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.runs_pane import RunsPane
from roundtable.tui.widgets.sessions_pane import SessionsPane
from roundtable.tui.widgets.table_pane import TablePane
from roundtable.tui.widgets.tasks_pane import TasksPane
from roundtable.tui.widgets.transactions_pane import TransactionsPane
from roundtable.tui.widgets.turns_pane import TurnsPane
from roundtable.tui.widgets.virtual_list import VirtualList

log = logging.getLogger("roundtable.tui")

CONSOLE = Caller("operator", "tui")
OPERATOR_NAME = "operator"


def _while_mounted(handler: Callable[..., None]) -> Callable[..., None]:
    """Skip a UI update that arrives while the console is tearing its widgets down."""

    @wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        with suppress(NoMatches, ScreenStackError):
            handler(*args, **kwargs)

    return wrapper


class RoundtableApp(App[None]):
    """The console. `clock_ns` is injectable so snapshots are stable; `watch_files=False` and
    `live_clock=False` keep tests deterministic."""

    CSS_PATH = "app.tcss"
    TITLE = "roundtable"
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [*commands.bindings()]
    COMMANDS: ClassVar = App.COMMANDS | {commands.ConsoleCommands}
    ENABLE_COMMAND_PALETTE = True

    def __init__(
        self,
        runtime: Runtime,
        *,
        run_id: str = "",
        chair: Any = None,
        owner_info: OwnerInfo | None = None,
        read_only: bool = False,
        clock_ns: Callable[[], int] = clock.now_ns,
        watch_files: bool = True,
        live_clock: bool = True,
    ) -> None:
        super().__init__()
        self.runtime = runtime
        self.run_id = run_id
        self.chair = chair
        self.owner_info = owner_info or OwnerInfo(project=runtime.config.project_name)
        self.read_only = read_only
        self.clock_ns = clock_ns
        self.watch_files = watch_files
        self.live_clock = live_clock
        self.overview: Overview | None = None
        self.stale: Staleness | None = None
        self.gate_reports: dict[str, tuple[dict[str, Any] | None, str]] = {}
        self.refreshes = 0
        self._overrides = commands.keymap(runtime.config.tui.bindings.items())
        self._refreshing = False
        self._dirty = False
        self._inspecting: tuple[str, str] | None = None
        self._stop_watch = asyncio.Event()
        self.startup_notes: list[str] = []
        self._main_screen: Screen[Any] | None = None
        self.inspections_requested = 0
        self._inspect_running = False
        self._inspect_served = 0
        self.inspections_shown = 0
        self._zoomed = False
        self._shown_pane = "proposals"
        self.layout_single = False

    # --- layout -----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        ck = self.clock_ns
        yield ConsoleHeader(self.owner_info, read_only=self.read_only, clock_ns=ck)
        yield Static(id="pane-bar")
        with Horizontal(id="upper"):
            with Vertical(id="left"):
                with Horizontal(id="top-row"):
                    yield RunsPane(id="runs", clock_ns=ck)
                    yield TasksPane(id="tasks", clock_ns=ck)
                    yield TurnsPane(id="turns", clock_ns=ck)
                with Horizontal(id="mid-row"):
                    with Vertical(id="work"):
                        yield ProposalsPane(id="proposals", clock_ns=ck)
                        yield SessionsPane(id="sessions", clock_ns=ck)
                    with Vertical(id="decisions"):
                        yield ApprovalsPane(id="approvals", clock_ns=ck)
                        yield TransactionsPane(id="transactions", clock_ns=ck)
            yield Inspector()
        with Horizontal(id="bottom-row"):
            yield ClaimsPane(self.runtime, id="claims", clock_ns=ck)
            yield EventsPane(self.runtime, id="events", clock_ns=ck)
        yield Footer()

    @property
    def header(self) -> ConsoleHeader:
        return self._main.query_one(ConsoleHeader)

    def keymap_for(self, command_id: str) -> str | None:
        return self._overrides.get(command_id)

    @property
    def _main(self) -> Screen[Any]:
        """The console's own screen: queries must not land on a modal that happens to be on top."""
        return self._main_screen if self._main_screen is not None else self.screen

    # --- layout: every pane, or one at a time below 120x32 (see tui/layout.py) --------------

    def _focused_pane_id(self) -> str | None:
        node: Widget | None = self.focused
        while node is not None:
            if node.id in layout.PANE_IDS:
                return node.id
            node = node.parent if isinstance(node.parent, Widget) else None
        return None

    def apply_layout(self) -> None:
        """Show every pane, or only the focused one (compact terminal or `z`)."""
        screen = self._main
        size = screen.size
        decided = layout.decide(
            size.width, size.height, zoomed=self._zoomed, focused=self._focused_pane_id(), last=self._shown_pane
        )
        self._shown_pane = decided.shown
        self.layout_single = decided.single
        screen.set_class(decided.single, "-single")
        for pane_id in layout.PANE_IDS:
            with suppress(NoMatches):
                screen.query_one(f"#{pane_id}").set_class(pane_id == decided.shown, "-shown")
        for container_id in layout.ALL_CONTAINERS:
            with suppress(NoMatches):
                screen.query_one(f"#{container_id}").set_class(decided.holds(container_id), "-holds")
        with suppress(NoMatches):
            screen.query_one("#pane-bar", Static).update(layout.pane_bar(decided.shown, size.width))
        with suppress(NoMatches):
            screen.query_one(Footer).compact = decided.single

    def on_resize(self, event: Any) -> None:
        self.call_after_refresh(self.apply_layout)

    def _focus_moved(self, _focused: Widget | None) -> None:
        if self.screen is self._main_screen:
            self.apply_layout()

    def action_focus_next(self) -> None:
        self._cycle_panes(+1)

    def action_focus_previous(self) -> None:
        self._cycle_panes(-1)

    def _cycle_panes(self, step: int) -> None:
        """tab/shift+tab: the next pane; with one pane shown, hidden panes count too."""
        if not self.layout_single:
            if step > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        index = layout.PANE_IDS.index(self._shown_pane) if self._shown_pane in layout.PANE_IDS else 0
        self.action_show_pane((index + step) % len(layout.PANE_IDS) + 1)

    def action_zoom(self) -> None:
        self._zoomed = not self._zoomed
        self.apply_layout()

    def action_show_pane(self, number: int) -> None:
        if 1 <= number <= len(layout.PANE_IDS):
            with suppress(NoMatches):
                self._main.query_one(f"#{layout.PANE_IDS[number - 1]}").focus()

    def on_mount(self) -> None:
        self._main_screen = self.screen
        if self._overrides:
            self.set_keymap(self._overrides)
        self.header.run_id = self.run_id
        self.header.chair = self.chair
        self.header.update_view()
        self._main.query_one(ProposalsPane).focus()
        self.watch(self.screen, "focused", self._focus_moved, init=False)
        self.apply_layout()
        for note in self.startup_notes:
            self.notify(note, title="owner")
        self.request_refresh()
        self._watch_bus()
        if self.watch_files:
            self._watch_files()
        if self.live_clock:
            # Re-renders relative times (ages, countdowns, the Chair's next tick); reads nothing.
            self.set_interval(1.0, self._tick_clock)

    @_while_mounted
    def _tick_clock(self) -> None:
        self.header.update_view()
        if self.overview is not None:
            self._main.query_one(TurnsPane).show(self.overview)
            self._main.query_one(SessionsPane).show(self.overview)  # capability countdowns
        # Claim expiry counts down: repaint the visible lines (render only, no query).
        self._main.query_one(ClaimsPane).refresh()

    # --- refresh ----------------------------------------------------------------------------

    @work(group="bus", exit_on_error=False)
    async def _watch_bus(self) -> None:
        with self.runtime.bus.subscribe() as sub:
            while True:
                await sub.get()
                self.post_message(DatabaseChanged("bus"))

    @work(group="files", exit_on_error=False)
    async def _watch_files(self) -> None:
        """Writes by other processes touch the database file or its WAL; nothing else tells us."""
        from watchfiles import awatch

        db_path = Path(self.runtime.db.path)
        names = {db_path.name, f"{db_path.name}-wal"}
        async for _changes in awatch(
            db_path.parent,
            watch_filter=lambda _change, path: Path(path).name in names,
            debounce=120,
            step=20,
            recursive=False,
            rust_timeout=500,
            stop_event=self._stop_watch,
        ):
            self.post_message(DatabaseChanged("files"))

    def on_database_changed(self, message: DatabaseChanged) -> None:
        if len(self.screen_stack) > 1:
            self._dirty = True  # paused while a modal is open; caught up when it closes
            return
        self.request_refresh()

    def request_refresh(self) -> None:
        """Start a refresh, or mark one due if a refresh is running (a burst becomes one more)."""
        if self._refreshing:
            self._dirty = True
            return
        self._refreshing = True
        self._dirty = False
        self._refresh_worker()

    @work(exclusive=True, group="refresh", exit_on_error=False)
    async def _refresh_worker(self) -> None:
        try:
            while True:
                try:
                    check_database_file(Path(self.runtime.db.path))
                    async with self.runtime.db.read() as reader:
                        overview = await load_overview(reader, self.run_id, self.runtime.config)
                except Exception as exc:
                    self.post_message(RefreshFailed(_describe(exc)))
                else:
                    self.post_message(OverviewLoaded(overview))
                if not self._dirty:
                    break
                self._dirty = False
        finally:
            self._refreshing = False

    @_while_mounted
    def on_overview_loaded(self, message: OverviewLoaded) -> None:
        self.overview = message.overview
        self.refreshes += 1
        self.stale = None
        self.header.stale = None
        self.header.overview = message.overview
        self.header.update_view()
        for pane in self._main.query(TablePane):
            pane.show(message.overview)
        for vlist in self._main.query(VirtualList):
            vlist.reload()
        if self._inspecting is not None:
            self.load_inspector(*self._inspecting)

    @_while_mounted
    def on_refresh_failed(self, message: RefreshFailed) -> None:
        if self.stale is None:
            self.stale = Staleness(self.clock_ns(), message.reason)
        else:
            self.stale = replace(self.stale, reason=message.reason)
        self.header.stale = self.stale
        self.header.update_view()

    # --- selection and the inspector --------------------------------------------------------

    @_while_mounted
    def on_selected(self, message: Selected) -> None:
        if message.inspect or (message.pane is not None and message.pane is self.focused):
            self.load_inspector(message.kind, message.entity_id)
        if message.inspect and self.layout_single:  # one pane at a time: show what was asked for
            self._main.query_one(Inspector).focus()

    def load_inspector(self, kind: str, entity_id: str) -> None:
        """Show `kind` `entity_id` in the inspector (loaded in a worker; the latest request wins)."""
        self._inspecting = (kind, entity_id)
        self.inspections_requested += 1
        if not self._inspect_running:
            self._inspect_running = True
            self._inspect_worker()

    @property
    def inspector_idle(self) -> bool:
        """Every requested inspection has been shown (tests and benchmarks wait on this)."""
        return self.inspections_shown >= self.inspections_requested

    # Never cancelled mid-read (see VirtualList._load_count): requests arriving while one loads
    # are served afterwards, newest only.
    @work(exclusive=True, group="inspect", exit_on_error=False)
    async def _inspect_worker(self) -> None:
        try:
            while self._inspecting is not None and self._inspect_served < self.inspections_requested:
                seq = self._inspect_served = self.inspections_requested
                kind, entity_id = self._inspecting
                try:
                    check_database_file(Path(self.runtime.db.path))
                    async with self.runtime.db.read() as reader:
                        entity = await load_entity(reader, kind, entity_id)
                    if entity is not None and kind == "proposal":
                        text, note = await asyncio.to_thread(read_diff, self.runtime.root, entity.record)
                        entity = replace(entity, diff_text=text, diff_note=note)
                except Exception as exc:
                    self.inspections_shown = max(self.inspections_shown, seq)
                    self.post_message(RefreshFailed(_describe(exc)))
                    continue
                if seq == self.inspections_requested:
                    self.post_message(EntityLoaded(entity, kind, entity_id, seq=seq))
            # No await between the loop's last check and here: no request can slip through.
        finally:
            self._inspect_running = False

    @_while_mounted
    def on_entity_loaded(self, message: EntityLoaded) -> None:
        inspector = self._main.query_one(Inspector)
        inspector.gate = self.gate_reports.get(message.entity_id) if message.kind == "proposal" else None
        inspector.show_entity(message.entity, message.kind, message.entity_id)
        self.inspections_shown = max(self.inspections_shown, message.seq)

    @_while_mounted
    def on_gate_report(self, message: GateReport) -> None:
        self.gate_reports[message.proposal_id] = (message.report, message.error)
        if self._inspecting == ("proposal", message.proposal_id):
            self._main.query_one(Inspector).show_gates(message.report, message.error)

    # --- what is selected -------------------------------------------------------------------

    def _selected_approval(self) -> HumanApproval | None:
        key = self._main.query_one(ApprovalsPane).selected_key()
        if self.overview is None or key is None:
            return None
        return next((a for a in self.overview.approvals if a.id == key), None)

    def _selected_proposal(self) -> Proposal | None:
        key = self._main.query_one(ProposalsPane).selected_key()
        if self.overview is None or key is None:
            return None
        return next((p.proposal for p in self.overview.proposals if p.proposal.id == key), None)

    def _selected_transaction(self) -> Transaction | None:
        if self.overview is None:
            return None
        if isinstance(self.focused, ProposalsPane):
            proposal = self._selected_proposal()
            if proposal is not None:
                applied = [
                    t for t in self.overview.transactions if t.proposal_id == proposal.id and t.status == "applied"
                ]
                return applied[0] if applied else None
        key = self._main.query_one(TransactionsPane).selected_key()
        return next((t for t in self.overview.transactions if t.id == key), None)

    def _selected_session(self) -> SessionRow | None:
        key = self._main.query_one(SessionsPane).selected_key()
        if self.overview is None or key is None:
            return None
        return next((s for s in self.overview.sessions if s.session.id == key), None)

    # --- actions ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A read-only console hides every mutating command (footer and key) instead of offering
        it; the store refuses writes as well (`Database.read_only`)."""
        if self.read_only:
            command = commands.BY_ACTION.get(action)
            if command is not None and command.mutating:
                return False
        return True

    def _refused(self, command_id: str) -> bool:
        command = commands.BY_ID[command_id]
        if self.read_only and command.mutating:
            self.notify(f"Read-only console: {command.title.lower()} is disabled.", severity="warning", title="refused")
            return True
        return False

    def _missing(self, what: str, pane: str) -> None:
        self.notify(f"Select {what} in the {pane} pane first.", severity="warning")

    async def call_tool(
        self, tool: str, args: dict[str, Any], *, success: str, title: str = ""
    ) -> dict[str, Any] | None:
        """One audited call as the operator; errors become a notification, never a crash."""
        try:
            result = await self.runtime.call(tool, args, CONSOLE)
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title=title or tool, timeout=8)
            return None
        self.notify(success, title=title or tool)
        self.request_refresh()
        return result

    def _forget_gates(self, proposal_id: str) -> None:
        """A report from before an apply/reject/rollback no longer describes the proposal."""
        self.gate_reports.pop(proposal_id, None)
        if self._inspecting == ("proposal", proposal_id):
            with suppress(NoMatches):
                self._main.query_one(Inspector).show_gates(None, "")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(), lambda _result: self._after_modal())

    def action_refresh(self) -> None:
        self.request_refresh()

    def action_attention(self) -> None:
        if isinstance(self.screen, AttentionScreen):
            return
        items = attention(self.overview) if self.overview is not None else []
        self.push_screen(AttentionScreen(items), self._go_to_attention)

    def _go_to_attention(self, item: AttentionItem | None) -> None:
        self._after_modal()
        if item is None:
            return
        if not item.pane:
            self.notify(f"{item.item_id}: {item.text}", title="needs you")
            return
        pane = self._main.query_one(f"#{item.pane}", TablePane)
        pane.focus()
        for index, row_key in enumerate(pane.rows):
            if row_key.value == item.item_id:
                pane.move_cursor(row=index)
                break
        self.load_inspector(pane.kind, item.item_id)

    def action_inspect(self) -> None:
        focused = self.focused
        if isinstance(focused, TablePane):
            key = focused.selected_key()
            if key is not None:
                self.load_inspector(focused.kind, key)
        elif isinstance(focused, VirtualList):
            focused.action_inspect()
        else:
            return
        if self.layout_single:
            self._main.query_one(Inspector).focus()

    def action_filter(self) -> None:
        pane = self.focused
        if not isinstance(pane, TablePane | VirtualList):
            self.notify("Focus a list pane (tab) to filter it.", severity="warning")
            return
        self._filter_flow(pane)

    @work(group="dialog", exit_on_error=False)
    async def _filter_flow(self, pane: TablePane | VirtualList) -> None:
        title = str(pane.border_title or "pane")
        text = await self.push_screen_wait(
            PromptScreen(f"Filter {title}", "Show rows containing:", value=pane.filter_text)
        )
        self._after_modal()
        if text is not None:
            pane.set_filter(text)

    def action_approve(self) -> None:
        if self._refused("approve"):
            return
        approval = self._selected_approval()
        if approval is None:
            self._missing("an approval", "Approvals")
            return
        self._approve_flow(approval)

    @work(group="dialog", exit_on_error=False)
    async def _approve_flow(self, approval: HumanApproval) -> None:
        confirmed = await self.push_screen_wait(decision_dialog(approval, "approved"))
        self._after_modal()
        if confirmed:
            self._decide(approval, "approved", "")

    def action_deny(self) -> None:
        if self._refused("deny"):
            return
        approval = self._selected_approval()
        if approval is None:
            self._missing("an approval", "Approvals")
            return
        self._deny_flow(approval)

    @work(group="dialog", exit_on_error=False)
    async def _deny_flow(self, approval: HumanApproval) -> None:
        confirmed = await self.push_screen_wait(decision_dialog(approval, "denied"))
        self._after_modal()
        if not confirmed:
            return
        note = await self.push_screen_wait(
            PromptScreen(f"Deny {approval.id}", f"{approval.subject}\nNote (optional):", placeholder="why")
        )
        self._after_modal()
        if note is not None:
            self._decide(approval, "denied", note)

    @work(group="actions", exit_on_error=False)
    async def _decide(self, approval: HumanApproval, status: str, note: str) -> None:
        args: dict[str, Any] = {
            "approval_id": approval.id,
            "subject": approval.subject,
            "reason_md": approval.reason_md or approval.subject,
            "status": status,
            "decided_by": OPERATOR_NAME,
        }
        if approval.proposal_id:
            args["proposal_id"] = approval.proposal_id
        if note:
            args["decision_md"] = note
        await self.call_tool("human.request_approval", args, success=f"{approval.id} {status}", title="approval")

    def action_validate(self) -> None:
        proposal = self._selected_proposal()
        if proposal is None:
            self._missing("a proposal", "Proposals")
            return
        self._validate(proposal.id)

    @work(group="actions", exit_on_error=False)
    async def _validate(self, proposal_id: str) -> None:
        report = await self._gate_report(proposal_id)
        if report is not None:
            failing = _failing_gates(report)
            if report.get("applicable") and not failing:
                self.notify(f"{proposal_id}: every gate passes — ready to apply", title="validate")
            else:
                self.notify(
                    f"{proposal_id}: not ready — {len(failing)} gate(s) failing: {', '.join(failing) or 'see the report'}",
                    severity="warning",
                    title="validate",
                )

    async def _gate_report(self, proposal_id: str) -> dict[str, Any] | None:
        try:
            report = await self.runtime.call("patch.validate", {"proposal_id": proposal_id}, CONSOLE)
        except Exception as exc:
            self.post_message(GateReport(proposal_id, None, _describe(exc)))
            self.notify(_describe(exc), severity="error", title="patch.validate", timeout=8)
            return None
        self.post_message(GateReport(proposal_id, report))
        self.load_inspector("proposal", proposal_id)
        return report

    def action_run_tests(self) -> None:
        if self._refused("run_tests"):
            return
        proposal = self._selected_proposal()
        if proposal is None:
            self._missing("a proposal", "Proposals")
            return
        self._run_tests(proposal.id)

    @work(group="tests", exclusive=True, exit_on_error=False)
    async def _run_tests(self, proposal_id: str) -> None:
        """`tests_required` is met only by a passing run the host executed on the current revision:
        run the proposal's expected tests that are among the allowed commands (else every allowed
        command) on a scratch worktree of the revision, in the sandbox. Agent-written expected
        tests that are not allowed are skipped, never run. Where no sandbox works here, the tests
        run only after the operator confirms that unreviewed code will run unsandboxed."""
        try:
            proposal = (await self.runtime.call("proposal.get", {"proposal_id": proposal_id}, CONSOLE))["proposal"]
            suggested = await self.runtime.call("test.suggest", {"proposal_id": proposal_id}, CONSOLE)
            sandbox = await sandbox_for(self.runtime)
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title="test.suggest", timeout=8)
            return
        allowed = [str(c) for c in suggested.get("commands") or []]
        expected = [str(c) for c in proposal.get("expected_tests") or []]
        skipped = [c for c in expected if c not in allowed]
        if skipped:
            self.notify(
                f"Skipped expected tests that are not configured commands: {', '.join(skipped)}",
                severity="warning",
                title="test.run",
                timeout=8,
            )
        commands = [c for c in expected if c in allowed] or allowed
        if not commands:
            self.notify("No test command found for this proposal.", severity="warning", title="test.run")
            return
        unsandboxed = False
        if not sandbox.usable:
            confirmed = await self.push_screen_wait(_unsandboxed_dialog(proposal_id, commands, sandbox.reason))
            self._after_modal()
            if not confirmed:
                self.notify("Tests not run.", title="test.run")
                return
            unsandboxed = True
        try:
            for command in commands:
                # The header shows what runs and for how long until it ends (the progress indicator).
                self.header.activity = (f"testing {proposal_id}: {command}", self.clock_ns())
                self.header.update_view()
                args: dict[str, Any] = {"command": command, "proposal_id": proposal_id}
                if unsandboxed:
                    args["unsandboxed"] = True
                result = await self.call_tool("test.run", args, success=f"{command}: finished")
                if result is not None:
                    run = result.get("test_run", result)
                    self.notify(f"{command}: {run.get('status', '?')}", title="test.run")
        finally:
            self.header.activity = None
            self.header.update_view()
        await self._gate_report(proposal_id)

    def action_apply(self) -> None:
        if self._refused("apply"):
            return
        proposal = self._selected_proposal()
        if proposal is None:
            self._missing("a proposal", "Proposals")
            return
        self._apply_flow(proposal)

    @work(group="dialog", exit_on_error=False)
    async def _apply_flow(self, proposal: Proposal) -> None:
        if not domain.is_open(proposal.status):
            self.notify(
                f"{proposal.id} is {proposal.status}: only an open proposal can be applied.", severity="warning"
            )
            return
        report = await self._gate_report(proposal.id)
        if report is None:
            return  # _gate_report said why
        failing = _failing_gates(report)
        if failing or not report.get("applicable"):
            # patch.apply re-checks every gate and would refuse: offer nothing certain to fail.
            self.notify(
                f"{proposal.id} cannot be applied yet — failing: {', '.join(failing) or 'see the report'} "
                "(the Inspector shows why).",
                severity="warning",
                title="apply",
                timeout=8,
            )
            return
        confirmed = await self.push_screen_wait(apply_dialog(proposal, report))
        self._after_modal()
        if not confirmed:
            self.notify("Apply cancelled.")
            return
        # Bind the apply to the revision the operator just saw: it is refused if it changed since.
        revision = str((report or {}).get("revision") or proposal.current_revision or "")
        args = {"proposal_id": proposal.id, "applied_by": OPERATOR_NAME}
        if revision:
            args["revision"] = revision
        if self.run_id:
            args["run_id"] = self.run_id
        if await self.call_tool("patch.apply", args, success=f"{proposal.id} applied") is not None:
            self._forget_gates(proposal.id)

    def action_reject(self) -> None:
        if self._refused("reject"):
            return
        proposal = self._selected_proposal()
        if proposal is None:
            self._missing("a proposal", "Proposals")
            return
        self._reject_flow(proposal)

    @work(group="dialog", exit_on_error=False)
    async def _reject_flow(self, proposal: Proposal) -> None:
        if not domain.is_open(proposal.status):
            self.notify(
                f"{proposal.id} is {proposal.status}: only an open proposal can be rejected.", severity="warning"
            )
            return
        reason = await self.push_screen_wait(
            PromptScreen(f"Reject {proposal.id}", f"{proposal.title}\nReason (required):", required=True)
        )
        self._after_modal()
        if reason:
            args = {"proposal_id": proposal.id, "reason_md": reason, "decided_by": OPERATOR_NAME}
            if await self.call_tool("patch.reject", args, success=f"{proposal.id} rejected") is not None:
                self._forget_gates(proposal.id)

    def action_rollback(self) -> None:
        if self._refused("rollback"):
            return
        tx = self._selected_transaction()
        if tx is None:
            self._missing("a transaction", "Transactions")
            return
        self._rollback_flow(tx)

    @work(group="dialog", exit_on_error=False)
    async def _rollback_flow(self, tx: Transaction) -> None:
        if tx.status != domain.TransactionStatus.APPLIED:
            self.notify(f"{tx.id} is {tx.status}: only an applied transaction can be rolled back.", severity="warning")
            return
        confirmed = await self.push_screen_wait(rollback_dialog(tx))
        self._after_modal()
        if confirmed:
            args = {"transaction_id": tx.id, "reason_md": "rolled back from the console"}
            if await self.call_tool("patch.rollback", args, success=f"{tx.id} rolled back") is not None:
                self._forget_gates(tx.proposal_id)

    # Sessions are started and revoked by the supervisor (not a tool): it writes its own audit
    # events (`session.launched`, `capability.revoked`), and the bus refreshes the pane.

    def _supervisor(self) -> Supervisor | None:
        supervisor = supervisor_for(self.runtime)
        if supervisor is None:
            self.notify(
                f"{NOT_RUNNING}: start the console with `roundtable run` (or use `roundtable start`).",
                severity="warning",
                title="sessions",
                timeout=8,
            )
        return supervisor

    def _launch_initial(self) -> LaunchRequest:
        """Prefill from what the operator is looking at: a session (launch it again) or a proposal."""
        focused = self.focused
        if isinstance(focused, SessionsPane):
            row = self._selected_session()
            if row is not None:
                return LaunchRequest(row.session.agent_id, row.task_id, row.proposal_id, row.session.adapter)
        if isinstance(focused, ProposalsPane):
            proposal = self._selected_proposal()
            if proposal is not None:
                return LaunchRequest("", proposal.task_id, proposal.id)
        return LaunchRequest("", "")

    async def _launch_choices(self) -> LaunchChoices:
        """The Launch form's pickers: launchable configured agents, open tasks and proposals,
        and every adapter (configured ones plus the built-in scripted one)."""
        from roundtable.services.adapters import registry
        from roundtable.services.agents import configured_agents
        from roundtable.services.capabilities import role_for_agent

        config = self.runtime.config
        agents = tuple((a.id, a.role, a.adapter) for a in configured_agents(config) if role_for_agent(a.id) is not None)
        async with self.runtime.db.read() as reader:
            tasks = await reader.fetchall(
                "SELECT id, title FROM tasks WHERE status NOT IN ('completed', 'done', 'closed', 'cancelled',"
                " 'canceled', 'failed') ORDER BY priority, created_at, id LIMIT 200"
            )
        proposals = tuple(
            (row.proposal.id, row.proposal.title)
            for row in (self.overview.proposals if self.overview else [])
            if domain.is_open(row.proposal.status)
        )
        return LaunchChoices(
            agents=agents,
            tasks=tuple((str(r[0]), str(r[1])) for r in tasks),
            proposals=proposals,
            adapters=tuple(registry(config)),
        )

    def action_launch_session(self) -> None:
        if self._refused("launch_session") or self._supervisor() is None:
            return
        self._launch_flow(self._launch_initial())

    @work(group="dialog", exit_on_error=False)
    async def _launch_flow(self, initial: LaunchRequest) -> None:
        try:
            choices = await self._launch_choices()
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title="session.launch", timeout=8)
            return
        request = await self.push_screen_wait(LaunchScreen(initial, choices=choices))
        confirmed = request is not None and await self.push_screen_wait(launch_dialog(request, self.run_id))
        self._after_modal()
        if request is None or not confirmed:
            self.notify("Launch cancelled.")
            return
        supervisor = self._supervisor()
        if supervisor is None:
            return
        try:
            result = await supervisor.launch(
                agent_id=request.agent_id,
                task_id=request.task_id,
                proposal_id=request.proposal_id,
                run_id=self.run_id,
                adapter=request.adapter,
            )
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title="session.launch", timeout=8)
            return
        session = result.get("session", {})
        self.notify(
            f"{session.get('id', '?')} launched: {request.agent_id} via {request.adapter} (pid {result.get('pid')})",
            title="session.launch",
        )
        self.request_refresh()
        if session.get("id"):
            self.reveal("sessions", str(session["id"]))

    @work(group="reveal", exit_on_error=False)
    async def reveal(self, pane_id: str, key: str, timeout: float = 5.0) -> None:
        """Put the cursor on `key` in a pane once a refresh lists it (a new session, task or run
        appears where the operator can see it, not out of view)."""
        pane = self._main.query_one(f"#{pane_id}", TablePane)
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            keys = [row.value for row in pane.rows]
            if key in keys:
                pane.move_cursor(row=keys.index(key))
                return
            await asyncio.sleep(0.05)

    def action_revoke_session(self) -> None:
        if self._refused("revoke_session"):
            return
        row = self._selected_session()
        if row is None:
            self._missing("a session", "Sessions")
            return
        if not row.live and (row.capability_revoked_at or not row.capability_expires_at):
            self.notify(f"{row.session.id} has ended and holds no live capability.", severity="warning")
            return
        if self._supervisor() is None:
            return
        self._revoke_flow(row)

    @work(group="dialog", exit_on_error=False)
    async def _revoke_flow(self, row: SessionRow) -> None:
        confirmed = await self.push_screen_wait(revoke_dialog(row.session, row.role, row.task_id, row.proposal_id))
        self._after_modal()
        if not confirmed:
            self.notify("Revoke cancelled.")
            return
        supervisor = self._supervisor()
        if supervisor is None:
            return
        try:
            result = await supervisor.revoke(row.session.id, "operator")
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title="session.revoke", timeout=8)
            return
        if result.get("revoked"):
            stopping = "; stopping its process" if result.get("running") else ""
            self.notify(f"{row.session.id} revoked{stopping}", title="session.revoke")
        else:
            self.notify(
                f"{row.session.id} had no live capability to revoke.", severity="warning", title="session.revoke"
            )
        self.request_refresh()

    # --- runs -------------------------------------------------------------------------------

    def _selected_run(self) -> str | None:
        return self._main.query_one(RunsPane).selected_key()

    def _selected_run_record(self) -> Run | None:
        """The run selected in the Runs pane (a notice says so when none is)."""
        run_id = self._selected_run()
        run = next((r for r in (self.overview.runs if self.overview else []) if r.id == run_id), None)
        if run is None:
            self._missing("a run", "Runs")
        return run

    async def _change_run(self, run_id: str, change: Any, done: str) -> None:
        """Run one runs-service change (end, archive) with the console's error handling."""
        try:
            await change
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title="run", timeout=8)
            return
        self.notify(f"{run_id} {done}", title="run")
        self.request_refresh()

    def show_run(self, run_id: str) -> None:
        """Make `run_id` the run in view: the header and the turn queue follow it."""
        self.run_id = run_id
        self.header.run_id = run_id
        self.header.update_view()
        self.request_refresh()

    def action_new_run(self) -> None:
        if not self._refused("new_run"):
            self._new_run_flow()

    @work(group="dialog", exit_on_error=False)
    async def _new_run_flow(self) -> None:
        goal = await self.push_screen_wait(PromptScreen("New run", "Goal (required):", required=True))
        self._after_modal()
        if not goal:
            return
        from roundtable.services import runs as runs_service

        try:
            run = await runs_service.create_run(self.runtime, goal)
        except Exception as exc:
            self.notify(_describe(exc), severity="error", title="run", timeout=8)
            return
        self.show_run(run.id)
        self.notify(f"{run.id} started; the console shows it now", title="run")

    def action_view_run(self) -> None:
        run_id = self._selected_run()
        if run_id is None:
            self._missing("a run", "Runs")
            return
        self.show_run(run_id)
        self.notify(f"showing {run_id}", title="run")

    def action_end_run(self) -> None:
        if self._refused("end_run"):
            return
        run = self._selected_run_record()
        if run is None:
            return
        if run.status != "active":
            self.notify(f"{run.id} is {run.status}: only an active run can be ended.", severity="warning")
            return
        self._end_run_flow(run.id, run.goal)

    @work(group="dialog", exit_on_error=False)
    async def _end_run_flow(self, run_id: str, goal: str) -> None:
        body = Text.assemble(
            ("Run ", "dim"),
            (run_id, "bold"),
            "  goal: ",
            goal or "—",
            ("\nIts status becomes completed; the Chair stops ticking it.", "dim"),
        )
        confirmed = await self.push_screen_wait(ConfirmScreen(f"End {run_id}?", body, confirm_label="End run"))
        self._after_modal()
        if not confirmed:
            return
        from roundtable.services import runs as runs_service

        await self._change_run(run_id, runs_service.end_run(self.runtime, run_id, "completed"), "completed")

    def action_archive_run(self) -> None:
        if self._refused("archive_run"):
            return
        run = self._selected_run_record()
        if run is None:
            return
        if run.status == "active":
            self.notify(f"{run.id} is active: end it first (e).", severity="warning")
            return
        self._archive_run_flow(run.id, run.status)

    @work(group="dialog", exit_on_error=False)
    async def _archive_run_flow(self, run_id: str, status: str) -> None:
        body = Text.assemble(
            ("Run ", "dim"),
            (run_id, "bold"),
            (f"  [{status}]", "yellow"),
            ("\nHidden from the Runs pane and from resume; nothing is deleted (runs list --all shows it).", "dim"),
        )
        confirmed = await self.push_screen_wait(ConfirmScreen(f"Archive {run_id}?", body, confirm_label="Archive"))
        self._after_modal()
        if not confirmed:
            return
        from roundtable.services import runs as runs_service

        await self._change_run(run_id, runs_service.archive_run(self.runtime, run_id), "archived")

    # --- tasks ------------------------------------------------------------------------------

    def _selected_task(self) -> Task | None:
        key = self._main.query_one(TasksPane).selected_key()
        if self.overview is None or key is None:
            return None
        return next((t for t in self.overview.tasks if t.id == key), None)

    def action_new_task(self) -> None:
        if not self._refused("new_task"):
            self._new_task_flow()

    @work(group="dialog", exit_on_error=False)
    async def _new_task_flow(self) -> None:
        draft = await self.push_screen_wait(TaskForm())
        self._after_modal()
        if draft is None:
            return
        args: dict[str, Any] = {"title": draft.title, "body_md": draft.body_md, "priority": draft.priority}
        if draft.readable_paths:
            args["readable_paths"] = draft.readable_paths
        result = await self.call_tool("task.create", args, success=f"task created: {draft.title}", title="task")
        if result is not None:
            self._main.query_one(TasksPane).focus()
            self.reveal("tasks", str(result["task"]["id"]))

    def action_block_task(self) -> None:
        if self._refused("block_task"):
            return
        task = self._selected_task()
        if task is None:
            self._missing("a task", "Tasks")
            return
        if task.status in domain.TERMINAL_TASK_STATUSES or task.status == "blocked":
            self.notify(f"{task.id} is {task.status}: only open work can be blocked.", severity="warning")
            return
        self._block_flow(task)

    @work(group="dialog", exit_on_error=False)
    async def _block_flow(self, task: Task) -> None:
        reason = await self.push_screen_wait(
            PromptScreen(f"Block {task.id}", f"{task.title}\nWhy (required):", required=True)
        )
        self._after_modal()
        if reason:
            args = {"task_id": task.id, "status": "blocked", "reason_md": reason}
            await self.call_tool(
                "task.update_status",
                _known_args("task.update_status", args),
                success=f"{task.id} blocked",
                title="task",
            )

    def action_cancel_task(self) -> None:
        if self._refused("cancel_task"):
            return
        task = self._selected_task()
        if task is None:
            self._missing("a task", "Tasks")
            return
        if task.status in domain.TERMINAL_TASK_STATUSES:
            self.notify(f"{task.id} is {task.status} already.", severity="warning")
            return
        self._cancel_task_flow(task)

    @work(group="dialog", exit_on_error=False)
    async def _cancel_task_flow(self, task: Task) -> None:
        body = Text.assemble(("Task ", "dim"), (task.id, "bold"), "  ", task.title, (f"  [{task.status}]", "yellow"))
        confirmed = await self.push_screen_wait(ConfirmScreen(f"Cancel {task.id}?", body, confirm_label="Cancel task"))
        self._after_modal()
        if confirmed:
            args = {"task_id": task.id, "status": "cancelled"}
            await self.call_tool("task.update_status", args, success=f"{task.id} cancelled", title="task")

    async def action_tick(self) -> None:
        if self._refused("tick"):
            return
        if self.chair is None:
            self.notify("No Chair runs in this console.", severity="warning")
            return
        if getattr(self.chair, "paused", False):
            self.notify("The Chair is paused: p resumes it (a tick now would do nothing).", severity="warning")
            return
        await _maybe_await(self.chair.wake())
        self.notify("Chair woken for a tick.")

    async def action_pause(self) -> None:
        if self._refused("pause"):
            return
        if self.chair is None:
            self.notify("No Chair runs in this console.", severity="warning")
            return
        paused = bool(getattr(getattr(self.chair, "state", None), "paused", False))
        await _maybe_await(self.chair.resume() if paused else self.chair.pause())
        self.notify("Chair resumed." if paused else "Chair paused.")
        self.header.update_view()

    async def action_quit(self) -> None:
        self._stop_watch.set()
        self.exit()

    def _after_modal(self) -> None:
        if self._dirty and len(self.screen_stack) <= 1:
            self._dirty = False
            self.request_refresh()

    def focus_pane(self, widget_id: str) -> Widget:
        widget = self._main.query_one(f"#{widget_id}")
        widget.focus()
        return widget


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _unsandboxed_dialog(proposal_id: str, commands: list[str], reason: str) -> ConfirmScreen:
    """The `T` key's confirmation where no sandbox works: the revision's code is unreviewed and
    would run with the operator's full rights."""
    body = Group(
        Text.assemble(("Proposal ", "dim"), (proposal_id, "bold")),
        Text.assemble(("Commands ", "dim"), ", ".join(commands)),
        Text(""),
        Text("No sandbox works on this machine:", style="bold red"),
        Text(reason or "(no reason given)"),
        Text(""),
        Text(
            "The proposal's code is unreviewed. Its tests would run UNSANDBOXED, as you: with your "
            "network, your home directory and this project's .roundtable/ (database, credentials) "
            "within reach. Install bubblewrap to run them in a sandbox instead.",
            style="yellow",
        ),
    )
    return ConfirmScreen(f"Run unreviewed tests of {proposal_id} unsandboxed?", body, confirm_label="Run unsandboxed")


def _failing_gates(report: dict[str, Any]) -> list[str]:
    """The names of the gates a report marks failing."""
    return [str(g.get("name")) for g in report.get("gates") or [] if isinstance(g, dict) and not g.get("passed")]


def _known_args(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Only the arguments `tool` advertises (an optional reason is dropped where it has none)."""
    from roundtable.tools.registry import get_registry

    spec = get_registry().lookup(tool)
    allowed = set(spec.input_schema.get("properties", {})) if spec is not None else set(args)
    return {k: v for k, v in args.items() if k in allowed}
