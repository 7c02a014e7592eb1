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
    "run.created": (logging.INFO, "run {run_id} created"),
    "run.ended": (logging.INFO, "run {run_id} ended ({status})"),
    "session.launched": (logging.INFO, "session {session_id} launched: {agent_id} ({role}) on task {task_id}"),
    "session.exited": (logging.INFO, "session {session_id} exited: {status} (exit code {exit_code})"),
    "agent.turn_requested": (logging.INFO, "turn requested by {agent_id} in run {run_id} (request {id})"),
    "agent.turn_scheduled": (
        logging.INFO,
        "turn scheduled for {agent_id} in run {run_id} (request {request_event_id})",
    ),
    "agent.turn_started": (logging.INFO, "turn started by {agent_id} in run {run_id} (request {request_event_id})"),
    "agent.turn_completed": (logging.INFO, "turn completed by {agent_id} in run {run_id} (request {request_event_id})"),
    "agent.turn_expired": (logging.WARNING, "turn of {agent_id} expired in run {run_id}: {timeout}"),
    "approval.requested": (logging.INFO, "approval requested: {subject}"),
    "patch.applied": (logging.INFO, "applied proposal {proposal_id} as transaction {transaction_id}"),
    "patch.apply_failed": (logging.ERROR, "apply of proposal {proposal_id} failed: {error}"),
    "patch.rejected": (logging.INFO, "proposal {proposal_id} rejected"),
    "proposal.commented": (
        logging.INFO,
        "{actor_id} commented on proposal {proposal_id} r{revision_number} {where}",
    ),
    "patch.rolled_back": (
        logging.WARNING,
        "rolled back transaction {transaction_id} (proposal {proposal_id}): {reason}",
    ),
    "patch.rollback_failed": (logging.ERROR, "rollback of transaction {transaction_id} failed: {error}"),
    "transaction.recovered": (logging.WARNING, "recovered interrupted transaction {transaction_id}: {outcome}"),
    "config.reloaded": (logging.INFO, "configuration reloaded"),
    # The autopilot: whom it launched and why, what failed, what it gave up on.
    "autopilot.dispatched": (
        logging.INFO,
        "autopilot launched {agent_id} for task {task_id} ({reason}, attempt {attempt}) as session {session_id}",
    ),
    "autopilot.session_failed": (logging.WARNING, "autopilot: {agent_id} failed on task {task_id}: {reason}"),
    "autopilot.stopped": (logging.ERROR, "autopilot stopped: {reason}"),
    "autopilot.enabled": (logging.INFO, "autopilot turned on by {principal}"),
    "autopilot.disabled": (logging.INFO, "autopilot turned off by {principal}"),
    "task.blocked": (logging.WARNING, "task {task_id} blocked: {reason}"),
    # Limits that stop a runaway agent without the operator.
    "session.limit_reached": (logging.WARNING, "session {session_id} of {agent_id} stopped by a limit: {reason}"),
    "limits.quota_reached": (logging.WARNING, "{reason}"),
    "autopilot.rate_limited": (logging.WARNING, "autopilot launches held back: {reason}"),
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
