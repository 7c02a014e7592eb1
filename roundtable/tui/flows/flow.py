"""`Flow`: the widget every operator flow is.

A flow has no place on screen (`display: none`): it is mounted in the console's main screen, so
its workers (`@work`) and the dialogs it opens belong to the console, and the console's keys and
palette run its `action_*` methods (`RoundtableApp.run_action` finds the flow that has the
action). It reads the console's state and uses its shared helpers through `console` (the
selection guard, the audited call, the dialogs), and tells the rest of the console what it
changed with typed messages (`RefreshRequested`, `InspectRequested`, `GatesStale`,
`DialogClosed`), which bubble up to where the refresh, the inspector and the gate reports live.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.widget import Widget

if TYPE_CHECKING:
    from roundtable.tui.base import ConsoleBase


class Flow(Widget):
    """One kind of operator work (approvals, proposals, sessions, runs, tasks, the owner's loops)."""

    DEFAULT_CSS = "Flow { display: none; }"

    @property
    def console(self) -> ConsoleBase:
        """The console this flow works for (its state and shared helpers)."""
        return cast("ConsoleBase", self.app)
