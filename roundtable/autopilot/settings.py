"""The autopilot's effective limits: the `autopilot` section of the config, with what the
command line overrides (`run --max-iterations`, `--retry-backoff`, `--max-consecutive-errors`).

Read again on every dispatch pass, so a reloaded config takes effect at once; the overrides stay.
"""

from __future__ import annotations

from dataclasses import dataclass

from roundtable.config import Config


@dataclass(frozen=True)
class Overrides:
    """Values given on the command line; `None` keeps the config's."""

    max_iterations: int | None = None
    retry_backoff_seconds: float | None = None
    max_consecutive_failures: int | None = None


@dataclass(frozen=True)
class Settings:
    """What the dispatcher obeys."""

    max_sessions: int
    max_sessions_per_role: int
    max_attempts: int
    retry_backoff_seconds: float
    max_consecutive_failures: int
    max_iterations: int  # dispatches per run; 0 = unlimited
    planner_agent: str
    session_timeout: float
    launches_per_minute: int = (
        0  # over all runs; 0 = unlimited  # seconds a dispatched session may live before it is stopped and retried
    )

    def backoff(self, attempt: int) -> float:
        """The wait before attempt `attempt + 1` (the first retry waits the configured time,
        each further one twice as long as the one before)."""
        return self.retry_backoff_seconds * (2 ** max(0, attempt - 1))


def settings(config: Config, overrides: Overrides, session_timeout: float | None = None) -> Settings:
    """The config's `autopilot` section with the overrides applied. A session may live as long
    as a turn may wait and run (`chair.turn_start_timeout` + `chair.turn_timeout`) unless
    `session_timeout` says otherwise."""
    a = config.autopilot
    return Settings(
        max_sessions=a.max_sessions,
        max_sessions_per_role=a.max_sessions_per_role,
        max_attempts=a.max_attempts,
        retry_backoff_seconds=(
            a.retry_backoff_seconds if overrides.retry_backoff_seconds is None else overrides.retry_backoff_seconds
        ),
        max_consecutive_failures=(
            a.max_consecutive_failures
            if overrides.max_consecutive_failures is None
            else overrides.max_consecutive_failures
        ),
        max_iterations=a.max_iterations if overrides.max_iterations is None else overrides.max_iterations,
        planner_agent=a.planner_agent,
        launches_per_minute=a.launches_per_minute,
        session_timeout=(
            session_timeout
            if session_timeout is not None
            else config.chair.turn_start_timeout + config.chair.turn_timeout
        ),
    )
