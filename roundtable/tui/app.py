"""The operator's console: a Textual app over one open `Runtime`.

The app reads the database through the services read model (`services/views`: one read
snapshot per refresh, keyed pages for long lists) and changes it only through `Runtime.call`
with the operator as caller, exactly like an agent's call, so every action is validated,
transactional and audited. It refreshes when the change bus announces a commit — this
process's, or another process's seen by the store's one commit watch (`Database.watch_commits`,
`PRAGMA data_version`); bursts coalesce into one refresh, and the console itself runs no timer
that polls the database.

How it is composed: `base.ConsoleBase` is the console's state and the helpers every flow uses;
`live.LiveConsole` keeps that state current (refresh, inspector, staleness); `RoundtableApp`
adds its main screen (`screens/console.ConsoleScreen`: the panes, the bindings, moving around)
and the read-only gate. The operator flows (`flows/`) are widgets mounted in that screen: a
key's action runs on the flow that has it (`run_action`), and a flow tells the console what it
changed with typed messages (`messages.py`). `RoundtableApp` needs only an open runtime, so
tests build it from the `runtime` fixture; `launch.run_console` wraps it with the owner (lock,
Chair, dispatcher, HTTP and socket listeners).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from textual import actions
from textual.actions import ActionParseResult
from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import Screen

from roundtable import clock
from roundtable.autopilot import Dispatcher
from roundtable.notify import Notifier
from roundtable.runtime import Runtime
from roundtable.tui import commands
from roundtable.tui.alerts import TerminalAlerts
from roundtable.tui.live import LiveConsole
from roundtable.tui.screens.console import ConsoleScreen
from roundtable.tui.widgets.header import OwnerInfo


class RoundtableApp(LiveConsole):
    """The console. `clock_ns` is injectable so snapshots are stable; `watch_commits=False` and
    `live_clock=False` keep tests deterministic. `dispatcher` is the owner's autopilot (None
    when the owner hosts none)."""

    CSS_PATH = "app.tcss"
    TITLE = "roundtable"
    # The console's own keys are its main screen's (`ConsoleScreen.BINDINGS`), so a dialog on
    # top has only its keys; quitting and help work everywhere.
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        b for b in commands.bindings() if b.id in commands.GLOBAL
    ]
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

    def get_default_screen(self) -> Screen[Any]:
        self._main_screen = ConsoleScreen()
        return self._main_screen

    @property
    def console_screen(self) -> ConsoleScreen:
        screen = self._main
        assert isinstance(screen, ConsoleScreen)
        return screen

    def keymap_for(self, command_id: str) -> str | None:
        return self._overrides.get(command_id)

    def on_mount(self) -> None:
        if self._overrides:
            self.set_keymap(self._overrides)
        for note in self.startup_notes:
            self.notify(note, title="owner")
        if self.notifier is not None and self.alerts is not None:
            self.notifier.add_listener(self.alerts.notify)

    def screen_ready(self) -> None:
        """The main screen's panes exist (its mount): show the header and start keeping current."""
        header = self.header
        header.run_id = self.run_id
        header.chair = self.chair
        header.dispatcher = self.dispatcher
        header.update_view()
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
        """Every key, pane binding and palette entry comes here. In a read-only console a
        mutating command is refused with one message, the same for every key; otherwise the
        action runs where it lives — the node that declared it, else the flow that has it, else
        the main screen, else the app."""
        destination, name, params = actions.parse(action) if isinstance(action, str) else action
        if self.read_only:
            command = commands.BY_ACTION.get(name)
            if command is not None and command.mutating:
                self.notify(commands.read_only_refusal(command), severity="warning", title="read-only")
                return True
        asked = self if destination == "app" else (default_namespace or self)
        if destination in ("", "app") and not _has_action(asked, name):
            target = self._action_target(name)
            if target is not None:
                return await super().run_action(("", name, params), target, namespaces)
        return await super().run_action(action, default_namespace, namespaces)

    def _action_target(self, name: str) -> DOMNode | None:
        """Where `name` runs when the node that asked has no such action."""
        screen = self._main_screen
        if not isinstance(screen, ConsoleScreen) or not screen.is_mounted:
            return None
        flow = screen.flow_for(name)
        if flow is not None:
            return flow
        if _has_action(screen, name):
            return screen
        return self if _has_action(self, name) else None

    async def action_quit(self) -> None:
        self.exit()

    def action_focus_next(self) -> None:
        """tab (Textual's own key): on the main screen the next pane (hidden ones too when one
        pane is shown at a time); in a dialog its next field."""
        if self.screen is self._main_screen:
            self.console_screen.cycle_panes(+1)
        else:
            super().action_focus_next()

    def action_focus_previous(self) -> None:
        if self.screen is self._main_screen:
            self.console_screen.cycle_panes(-1)
        else:
            super().action_focus_previous()


def _has_action(node: DOMNode, name: str) -> bool:
    return callable(getattr(node, f"action_{name}", None)) or callable(getattr(node, f"_action_{name}", None))
