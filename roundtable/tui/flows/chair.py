"""The owner's loops: `t` wakes the Chair for a tick, `p` pauses or resumes it, `P` turns
the autopilot (the dispatcher that launches agents for the Chair's decisions) on or off."""

from __future__ import annotations

import inspect
from typing import Any

from roundtable.tui.autopilot import badge
from roundtable.tui.flows.flow import Flow

NO_CHAIR = "No Chair runs in this console."
NO_DISPATCHER = "No autopilot in this console: the owner hosts no dispatcher."


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


class ChairFlow(Flow):
    async def action_tick(self) -> None:
        if self.console.chair is None:
            self.notify(NO_CHAIR, severity="warning")
            return
        if getattr(getattr(self.console.chair, "state", None), "paused", False):
            self.notify("The Chair is paused: p resumes it (a tick now would do nothing).", severity="warning")
            return
        await _maybe_await(self.console.chair.wake())
        self.notify("Chair woken for a tick.")

    async def action_pause(self) -> None:
        if self.console.chair is None:
            self.notify(NO_CHAIR, severity="warning")
            return
        paused = bool(getattr(getattr(self.console.chair, "state", None), "paused", False))
        await _maybe_await(self.console.chair.resume() if paused else self.console.chair.pause())
        self.notify("Chair resumed." if paused else "Chair paused.")
        self.console.header.update_view()

    async def action_autopilot(self) -> None:
        """Toggle the dispatcher (a read-only console refuses it before it gets here)."""
        dispatcher = self.console.dispatcher
        if dispatcher is None:
            self.notify(NO_DISPATCHER, severity="warning", title="autopilot")
            return
        on = not dispatcher.enabled
        ok, _ = await self.console.attempt(dispatcher.set_enabled(on, self.console.caller), title="autopilot")
        self.console.header.update_view()
        if ok:
            label, _style = badge(dispatcher.status())
            what = "agents are launched for the work the Chair hands out" if on else "nothing is launched without you"
            self.notify(f"Autopilot {label}: {what}.", title="autopilot")
