"""The project's policy as a running owner sees it: `POLICIES.ROUNDTABLE.md`, re-read when it
changes. A valid edit applies to the next call; an invalid one is reported (file, line, key) in
the owner's log and ignored, so a typo never leaves the table without rules.

Changes are noticed by `watchfiles` (inotify and its kin): `LivePolicy.watch` watches the
project's directory, not the file, because editors save by writing a new file and renaming it
over the old one. Nothing polls: a process that never runs `watch` (a one-shot command) keeps
the policy it read when it opened.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from roundtable.errors import RoundtableError
from roundtable.services.policy.engine import POLICY_FILE, Policy, load_policy

if TYPE_CHECKING:
    import watchfiles

log = logging.getLogger("roundtable.policy")
# How long a burst of file events may take to settle into one reload (ms).
DEBOUNCE_MS = 200

Stamp = tuple[int, int, int] | None  # (inode, size, mtime ns); None when the file is absent


def _stamp(path: Path) -> Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class LivePolicy:
    """Holds the policy of `root`; `watch()` re-reads the file whenever it changes."""

    def __init__(self, root: Path, policy: Policy) -> None:
        self.path = Path(root) / POLICY_FILE
        self._policy = policy
        self._stamp = _stamp(self.path)
        self._refused: Stamp = None
        self.reloads = 0  # valid edits applied (for tests and diagnostics)

    @classmethod
    def load(cls, root: Path) -> LivePolicy:
        """Read the policy now; an invalid file raises (an owner must not start without rules)."""
        return cls(root, load_policy(root))

    def replace(self, policy: Policy) -> None:
        """Use `policy` until the file changes again."""
        self._policy = policy
        self._stamp = _stamp(self.path)

    def current(self) -> Policy:
        return self._policy

    async def watch(self, stop: asyncio.Event) -> None:
        """Follow the file until `stop` is set: each change that settles re-reads it (on a worker
        thread). Set `stop` before cancelling: the watcher's thread looks at it every 50 ms."""
        import watchfiles  # only a long-lived owner watches; commands need not load it

        def ours(_change: watchfiles.Change, path: str) -> bool:
            return os.path.basename(path) == POLICY_FILE

        async for _changes in watchfiles.awatch(
            self.path.parent, watch_filter=ours, recursive=False, debounce=DEBOUNCE_MS, stop_event=stop
        ):
            await anyio.to_thread.run_sync(self.check)

    def check(self) -> bool:
        """Re-read the file if it differs from the one in force (blocking); True when a valid edit
        was applied. An invalid edit is reported once and the rules in force stay."""
        stamp = _stamp(self.path)
        if stamp == self._stamp or stamp == self._refused:
            return False
        try:
            policy = load_policy(self.path.parent)
        except RoundtableError as exc:
            self._refused = stamp
            log.warning("%s changed but is invalid; the previous rules stay in force: %s", POLICY_FILE, exc)
            return False
        self._policy, self._stamp, self._refused = policy, stamp, None
        self.reloads += 1
        log.info("%s changed: the new rules apply from the next call", POLICY_FILE)
        return True
