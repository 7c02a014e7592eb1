"""Typed messages between the console's workers, panes and the app.

Change notices coalesce: `can_replace` lets a burst of `DatabaseChanged` (one per committed
write, plus file-system notices for writes by other processes) collapse into one refresh.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from roundtable.services.views.models import Overview


class DatabaseChanged(Message):
    """Something committed (in this process or another): reload what is on screen."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DatabaseChanged)


class OverviewLoaded(Message):
    """A refresh finished: the header and short panes get `overview`."""

    def __init__(self, overview: Overview) -> None:
        super().__init__()
        self.overview = overview

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, OverviewLoaded)


class RefreshFailed(Message):
    """A refresh could not read the database; panes keep their data, the header turns stale."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class Selected(Message):
    """A pane's cursor moved to a record (`kind` is a key of `entity.ENTITY_TABLES`)."""

    def __init__(self, kind: str, entity_id: str, *, inspect: bool = False, pane: Any = None) -> None:
        super().__init__()
        self.pane = pane
        self.kind = kind
        self.entity_id = entity_id
        self.inspect = inspect


class RefreshRequested(Message):
    """A flow changed something: reload the overview (a burst becomes one more refresh)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RefreshRequested)


class InspectRequested(Message):
    """Show `kind` `entity_id` in the inspector (the latest request wins)."""

    def __init__(self, kind: str, entity_id: str) -> None:
        super().__init__()
        self.kind = kind
        self.entity_id = entity_id


class GatesStale(Message):
    """A proposal was applied, rejected or rolled back: its gate report no longer describes it."""

    def __init__(self, proposal_id: str) -> None:
        super().__init__()
        self.proposal_id = proposal_id


class DialogClosed(Message):
    """A dialog the console opened closed: catch up on refreshes held back while it was open."""


class GateReport(Message):
    """`patch.validate` answered (or failed) for a proposal."""

    def __init__(self, proposal_id: str, report: dict[str, Any] | None, error: str = "") -> None:
        super().__init__()
        self.proposal_id = proposal_id
        self.report = report
        self.error = error
