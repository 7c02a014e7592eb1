"""The operator's console: a Textual app over one open `Runtime`.

The app reads the database directly (one read snapshot per refresh, keyed pages for long
lists) and changes it only through `Runtime.call` with the operator as caller, exactly like an
agent's call, so every action is validated, transactional and audited. It refreshes when the
change bus announces a commit — this process's, or another process's seen by the store's one
commit watch (`Database.watch_commits`, `PRAGMA data_version`); bursts coalesce into one
refresh, and the console itself runs no timer that polls the database.

The app is assembled from parts with one job each: `live.py` (refresh, inspector, staleness),
`panes.py` (layout and navigation) and the operator flows in `flows/`; `base.py` holds what they
share. `RoundtableApp` needs only an open runtime, so tests build it from the `runtime` fixture;
`launch.run_console` wraps it with the owner (lock, Chair, dispatcher, HTTP and socket listeners).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from textual import actions
from textual.actions import ActionParseResult
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.dom import DOMNode
from textual.widgets import Footer, Static

from roundtable import clock
from roundtable.autopilot import Dispatcher
from roundtable.notify import Notifier
from roundtable.runtime import Runtime
from roundtable.tui import commands
from roundtable.tui.alerts import TerminalAlerts
from roundtable.tui.flows.approvals import ApprovalFlows
from roundtable.tui.flows.chair import ChairFlows
from roundtable.tui.flows.proposals import ProposalFlows
from roundtable.tui.flows.runs import RunFlows
from roundtable.tui.flows.sessions import SessionFlows
from roundtable.tui.flows.tasks import TaskFlows
from roundtable.tui.live import LiveMixin
from roundtable.tui.panes import PanesMixin
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.claims_pane import ClaimsPane
from roundtable.tui.widgets.events_pane import EventsPane
from roundtable.tui.widgets.header import ConsoleHeader, OwnerInfo
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.runs_pane import RunsPane
from roundtable.tui.widgets.sessions_pane import SessionsPane
from roundtable.tui.widgets.tasks_pane import TasksPane
from roundtable.tui.widgets.transactions_pane import TransactionsPane
from roundtable.tui.widgets.turns_pane import TurnsPane


class RoundtableApp(LiveMixin, PanesMixin, ApprovalFlows, ProposalFlows, SessionFlows, RunFlows, TaskFlows, ChairFlows):
    """The console. `clock_ns` is injectable so snapshots are stable; `watch_commits=False` and
    `live_clock=False` keep tests deterministic. `dispatcher` is the owner's autopilot (None
    when the owner hosts none)."""

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
        dispatcher: Dispatcher | None = None,
        owner_info: OwnerInfo | None = None,
        read_only: bool = False,
        clock_ns: Callable[[], int] = clock.now_ns,
        watch_commits: bool = True,
        live_clock: bool = True,
        notifier: Notifier | None = None,
    ) -> None:
        super().__init__(
            runtime,
            run_id=run_id,
            chair=chair,
            dispatcher=dispatcher,
            owner_info=owner_info,
            read_only=read_only,
            clock_ns=clock_ns,
        )
        self._overrides = commands.keymap(runtime.config.tui.bindings)
        # The owner's notifier (None without an owner): bell, OSC 9/777 and the title's count.
        self.notifier = notifier
        self.alerts = TerminalAlerts(self, runtime.config.project_name) if runtime.config.notify.terminal else None
        self.startup_notes: list[str] = []
        self._setup_live(watch_commits=watch_commits, live_clock=live_clock)
        self._setup_panes()

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
            yield AgentsPane(id="agents", clock_ns=ck)
            yield ClaimsPane(self.runtime, id="claims", clock_ns=ck)
            yield EventsPane(self.runtime, id="events", clock_ns=ck)
        yield Footer()

    def keymap_for(self, command_id: str) -> str | None:
        return self._overrides.get(command_id)

    def on_mount(self) -> None:
        self._main_screen = self.screen
        if self._overrides:
            self.set_keymap(self._overrides)
        header = self.header
        header.run_id = self.run_id
        header.chair = self.chair
        header.dispatcher = self.dispatcher
        header.update_view()
        self._main.query_one(ProposalsPane).focus()
        self.watch(self.screen, "focused", self._focus_moved, init=False)
        self.apply_layout()
        for note in self.startup_notes:
            self.notify(note, title="owner")
        if self.notifier is not None and self.alerts is not None:
            self.notifier.add_listener(self.alerts.notify)
        self.start_live()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A read-only console does not offer a mutating command (footer); pressed anyway, its
        key is refused aloud (`run_action`). The store refuses writes as well
        (`Database.read_only`)."""
        if self.read_only:
            command = commands.BY_ACTION.get(action)
            if command is not None and command.mutating:
                return False
        return True

    async def run_action(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        """Every key, pane binding and palette entry comes here: in a read-only console a
        mutating command is refused with one message, the same for every key."""
        if self.read_only:
            name = actions.parse(action)[1] if isinstance(action, str) else action[1]
            command = commands.BY_ACTION.get(name)
            if command is not None and command.mutating:
                self.notify(commands.read_only_refusal(command), severity="warning", title="read-only")
                return True
        return await super().run_action(action, default_namespace, namespaces)

    async def action_quit(self) -> None:
        self.exit()
