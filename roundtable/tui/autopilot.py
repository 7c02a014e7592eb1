"""The autopilot as the console shows it: the header badge for the owner's dispatcher
(`roundtable.autopilot.Dispatcher`) — AUTO, MANUAL or STOPPED: reason."""

from __future__ import annotations

from roundtable.autopilot import DispatcherStatus


def badge(status: DispatcherStatus) -> tuple[str, str]:
    """(label, style) of the header badge."""
    if status.stopped_reason:
        return f"STOPPED: {status.stopped_reason}", "bold white on red"
    if status.enabled:
        return "AUTO", "bold black on green"
    return "MANUAL", "bold white on blue"
