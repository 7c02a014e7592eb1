"""Telling the operator, outside the console, that something needs them (`notify:` in config).

`hub.Notifier` follows the committed event log, turns the events that need the operator into
notifications (`kinds`) and hands them to the sinks: webhooks (`webhooks`), `notify-send`
(`desktop`) and listeners such as the console's bell and terminal escapes. Every owner runs one
(`roundtable start` and the console alike)."""

from roundtable.notify.hub import Notifier
from roundtable.notify.kinds import Notification

__all__ = ["Notification", "Notifier"]
