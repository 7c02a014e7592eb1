"""The project's policy as a running owner sees it: `POLICIES.ROUNDTABLE.md`, re-read when it
changes. A valid edit applies to the next call; an invalid one is reported (file, line, key) in
the owner's log and ignored, so a typo never leaves the table without rules. The file is looked
at (one `stat`) at most once per `CHECK_INTERVAL_S`."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from roundtable.errors import RoundtableError
from roundtable.services.policy import POLICY_FILE, Policy, load_policy

log = logging.getLogger("roundtable.policy")
CHECK_INTERVAL_S = 1.0

Stamp = tuple[int, int, int] | None  # (inode, size, mtime ns); None when the file is absent


def _stamp(path: Path) -> Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class LivePolicy:
    """Holds the policy of `root`; `current()` re-reads the file when it changed."""

    def __init__(self, root: Path, policy: Policy, *, interval: float = CHECK_INTERVAL_S) -> None:
        self.path = Path(root) / POLICY_FILE
        self.interval = interval
        self._policy = policy
        self._stamp = _stamp(self.path)
        self._checked = time.monotonic()
        self._refused: Stamp = None

    @classmethod
    def load(cls, root: Path) -> LivePolicy:
        """Read the policy now; an invalid file raises (an owner must not start without rules)."""
        return cls(root, load_policy(root))

    def replace(self, policy: Policy) -> None:
        """Use `policy` until the file changes again."""
        self._policy = policy
        self._stamp = _stamp(self.path)

    def current(self) -> Policy:
        now = time.monotonic()
        if now - self._checked >= self.interval:
            self._checked = now
            stamp = _stamp(self.path)
            if stamp != self._stamp and stamp != self._refused:
                self._reload(stamp)
        return self._policy

    def _reload(self, stamp: Stamp) -> None:
        try:
            policy = load_policy(self.path.parent)
        except RoundtableError as exc:
            self._refused = stamp
            log.warning("%s changed but is invalid; the previous rules stay in force: %s", POLICY_FILE, exc)
            return
        self._policy, self._stamp, self._refused = policy, stamp, None
        log.info("%s changed: the new rules apply from the next call", POLICY_FILE)
