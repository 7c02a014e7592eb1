"""Failpoints: named steps of the crash-safe apply where a fault test may stop the process.

Production code only announces that it reached a point (`reached("apply:intent")`); what happens
there is decided by the hook installed in the process, which by default does nothing. The fault
tests install a hook that kills the process (`os._exit`) or raises, through a test-only entry
script for child processes or `installed(...)` in their own process — nothing here reads the
environment, so no setting can make a production process crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

APPLY_INTENT = "apply:intent"  # the apply's intent (pending transaction, artefact) committed
APPLY_FILES = "apply:files"  # `git apply` wrote the tree, the final commit not yet made
ROLLBACK_INTENT = "rollback:intent"  # the `rolling_back` intent committed, nothing reverted yet
POINTS: tuple[str, ...] = (APPLY_INTENT, APPLY_FILES, ROLLBACK_INTENT)


class Failpoints(Protocol):
    """What the apply path calls at each of `POINTS`."""

    def reached(self, point: str) -> None:
        """Called when the apply path reaches `point`; may raise or end the process."""


class NoFailpoints:
    """The default hook: every point passes."""

    def reached(self, point: str) -> None:
        return None


_hook: Failpoints = NoFailpoints()


def install(hook: Failpoints) -> Failpoints:
    """Make `hook` this process's failpoint hook; returns the one it replaces."""
    global _hook
    previous, _hook = _hook, hook
    return previous


@contextmanager
def installed(hook: Failpoints) -> Iterator[Failpoints]:
    """`hook` is this process's failpoint hook inside the block; the previous one after it."""
    previous = install(hook)
    try:
        yield hook
    finally:
        install(previous)


def reached(point: str) -> None:
    """The apply path reached `point` (one of `POINTS`): let the installed hook act."""
    if point not in POINTS:
        raise ValueError(f"unknown failpoint {point!r}; known: {', '.join(POINTS)}")
    _hook.reached(point)
