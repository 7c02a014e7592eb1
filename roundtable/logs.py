"""Logging: the one `logging.dictConfig` of the command line, and the owner's event log.

`configure(command)` is called once, at the CLI entry (the `roundtable` group), before any
subcommand runs. `roundtable start` logs at INFO to stdout with a timestamp, one line per
meaningful event; every other command logs warnings and errors only, to stderr (never stdout:
`mcp stdio` writes protocol frames there, `--json` commands their JSON). The interactive console adds its own file handler
(`.roundtable/logs/console.log`) while it owns the terminal.

`describe_event` turns a committed event (as the change bus carries it) into that one line;
the owner subscribes to the bus and logs through `roundtable.events`, so services never call
logging for this.
"""

from __future__ import annotations

import json
import logging
import logging.config
import string
import sys
from typing import IO, Any

from roundtable.domain import EventType, ReviewEvent, TurnEvent

LOGGER = "roundtable"
EVENTS_LOGGER = "roundtable.events"
# Subcommands that run an owner in the foreground and narrate what it does.
OWNER_COMMANDS = frozenset({"start"})


class CurrentStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that writes to whatever `sys.stdout`/`sys.stderr` is when a record is
    emitted, not when logging was configured: click's test runner and Textual swap them, and a
    handler holding a replaced (closed) stream would fail on every later record."""

    def __init__(self, which: str = "stderr") -> None:
        self._which = which
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> IO[str]:
        return getattr(sys, self._which)  # type: ignore[no-any-return]

    @stream.setter
    def stream(self, value: IO[str]) -> None:
        pass  # always the current one


def config_dict(command: str | None = None) -> dict[str, Any]:
    """The `dictConfig` for one invocation of `roundtable COMMAND`."""
    handlers: dict[str, Any] = {
        "stderr": {"class": "roundtable.logs.CurrentStreamHandler", "which": "stderr", "formatter": "plain"},
    }
    loggers: dict[str, Any] = {}
    if command in OWNER_COMMANDS:
        handlers["owner"] = {"class": "roundtable.logs.CurrentStreamHandler", "which": "stdout", "formatter": "owner"}
        loggers[LOGGER] = {"level": "INFO", "handlers": ["owner"], "propagate": False}
    else:
        # Warnings and errors reach stderr through the root handler. The console (`run`) routes
        # `roundtable` to its log file while it owns the terminal (it stops propagation).
        loggers[LOGGER] = {"level": "WARNING", "handlers": [], "propagate": True}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "owner": {"format": "%(asctime)s %(message)s", "datefmt": "%Y-%m-%dT%H:%M:%S%z"},
            "plain": {"format": "roundtable: %(levelname)s: %(message)s"},
        },
        "handlers": handlers,
        "loggers": loggers,
        # Libraries (asyncio, uvicorn, the MCP SDK): warnings and errors only, to stderr.
        "root": {"level": "WARNING", "handlers": ["stderr"]},
    }


def configure(command: str | None = None) -> None:
    """Apply `config_dict(command)` (replacing any earlier configuration of this process)."""
    logging.config.dictConfig(config_dict(command))


# --- the owner's event log ---------------------------------------------------------------------

# event type → (level, one-line template over the payload and the event's own fields)
EVENT_LINES: dict[str, tuple[int, str]] = {
    EventType.RUN_CREATED: (logging.INFO, "run {run_id} created"),
    EventType.RUN_ENDED: (logging.INFO, "run {run_id} ended ({status})"),
    EventType.SESSION_LAUNCHED: (logging.INFO, "session {session_id} launched: {agent_id} ({role}) on task {task_id}"),
    EventType.SESSION_EXITED: (logging.INFO, "session {session_id} exited: {status} (exit code {exit_code})"),
    TurnEvent.REQUESTED: (logging.INFO, "turn requested by {agent_id} in run {run_id} (request {id})"),
    TurnEvent.SCHEDULED: (
        logging.INFO,
        "turn scheduled for {agent_id} in run {run_id} (request {request_event_id})",
    ),
    TurnEvent.STARTED: (logging.INFO, "turn started by {agent_id} in run {run_id} (request {request_event_id})"),
    TurnEvent.COMPLETED: (logging.INFO, "turn completed by {agent_id} in run {run_id} (request {request_event_id})"),
    TurnEvent.EXPIRED: (logging.WARNING, "turn of {agent_id} expired in run {run_id}: {timeout}"),
    EventType.APPROVAL_REQUESTED: (
        logging.INFO,
        "approval {approval_id} requested by {requested_by} for proposal {proposal_id}",
    ),
    EventType.PATCH_APPLIED: (logging.INFO, "applied proposal {proposal_id} as transaction {transaction_id}"),
    EventType.PATCH_APPLY_FAILED: (logging.ERROR, "apply of proposal {proposal_id} failed: {error}"),
    EventType.PATCH_REJECTED: (logging.INFO, "proposal {proposal_id} rejected"),
    ReviewEvent.COMMENTED: (
        logging.INFO,
        "{actor_id} commented on proposal {proposal_id} r{revision_number} {where}",
    ),
    EventType.PATCH_ROLLED_BACK: (
        logging.WARNING,
        "rolled back transaction {transaction_id} (proposal {proposal_id}): {reason}",
    ),
    EventType.PATCH_ROLLBACK_FAILED: (logging.ERROR, "rollback of transaction {transaction_id} failed: {error}"),
    EventType.TRANSACTION_RECOVERED: (logging.WARNING, "recovered interrupted transaction {transaction_id}: {outcome}"),
    EventType.CONFIG_RELOADED: (logging.INFO, "configuration reloaded"),
    # The autopilot: whom it launched and why, what failed, what it gave up on.
    EventType.AUTOPILOT_DISPATCHED: (
        logging.INFO,
        "autopilot launched {agent_id} for task {task_id} ({reason}, attempt {attempt}) as session {session_id}",
    ),
    EventType.AUTOPILOT_SESSION_FAILED: (logging.WARNING, "autopilot: {agent_id} failed on task {task_id}: {reason}"),
    EventType.AUTOPILOT_STOPPED: (logging.ERROR, "autopilot stopped: {reason}"),
    EventType.AUTOPILOT_ENABLED: (logging.INFO, "autopilot turned on by {principal}"),
    EventType.AUTOPILOT_DISABLED: (logging.INFO, "autopilot turned off by {principal}"),
    EventType.TASK_BLOCKED: (logging.WARNING, "task {task_id} blocked: {reason}"),
    # Limits that stop a runaway agent without the operator.
    "session.limit_reached": (logging.WARNING, "session {session_id} of {agent_id} stopped by a limit: {reason}"),
    EventType.QUOTA_REACHED: (logging.WARNING, "{reason}"),
    EventType.AUTOPILOT_RATE_LIMITED: (logging.WARNING, "autopilot launches held back: {reason}"),
}


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "-"


def describe_event(event: dict[str, Any]) -> tuple[int, str] | None:
    """(level, line) for an event worth a line in the owner's log, else None."""
    kind = str(event.get("type", ""))
    known = EVENT_LINES.get(kind)
    if known is None:
        return None
    level, template = known
    try:
        payload = json.loads(event.get("payload_json") or "{}")
    except ValueError:
        payload = {}
    fields = _Blank({k: v for k, v in event.items() if k != "payload_json"})
    if isinstance(payload, dict):
        fields.update({k: v for k, v in payload.items() if v not in (None, "")})
    if "run_id" in fields and not fields["run_id"]:
        fields["run_id"] = "-"
    line = string.Formatter().vformat(template, (), fields)
    return level, line[:500]
