"""The autopilot: the dispatcher that launches agents for the table's work in auto
mode, hosted beside the Chair by every owner that hosts the supervisor.

    from roundtable.autopilot import Dispatcher, DispatcherStatus
"""

from roundtable.autopilot.dispatcher import Dispatcher, DispatcherStatus, PassReport, SessionHost
from roundtable.autopilot.settings import Overrides, Settings
from roundtable.services.sessions.records import SessionExit

__all__ = ["Dispatcher", "DispatcherStatus", "Overrides", "PassReport", "SessionExit", "SessionHost", "Settings"]
