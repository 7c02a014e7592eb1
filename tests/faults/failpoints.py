"""Failpoint hooks for the fault tests (installed through `roundtable.services.applying.failpoints`).

`CrashAt` ends the process at a point as if it were killed; `FailAt` raises an `OSError` there
(a failure after git ran, which the apply must undo at once). Child processes get a hook through
the entry script `tests/faults/crash_entry.py` (`crash_argv` builds its command line).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from roundtable.services.applying.failpoints import POINTS

CRASH_EXIT = 86
ENTRY = Path(__file__).with_name("crash_entry.py")


def _known(point: str) -> str:
    if point not in POINTS:
        raise ValueError(f"unknown failpoint {point!r}; known: {', '.join(POINTS)}")
    return point


class CrashAt:
    """Ends the process with exit status `CRASH_EXIT` at `point`, without cleanup (`os._exit`)."""

    def __init__(self, point: str) -> None:
        self.point = _known(point)

    def reached(self, point: str) -> None:
        if point == self.point:
            sys.stdout.flush()
            os._exit(CRASH_EXIT)


class FailAt:
    """Raises an `OSError` at `point`; counts how often it fired."""

    def __init__(self, point: str) -> None:
        self.point = _known(point)
        self.fired = 0

    def reached(self, point: str) -> None:
        if point == self.point:
            self.fired += 1
            raise OSError(f"injected failure at {point}")


def crash_argv(point: str, *cli_args: str) -> list[str]:
    """The command line of a `roundtable CLI_ARGS…` child that dies at `point`."""
    return [sys.executable, str(ENTRY), _known(point), *cli_args]
