"""Processes seen through /proc, shared by the test directories (a test that a sandbox or a
test run leaves nothing behind)."""

from __future__ import annotations

import os
import re
import threading
import time
from typing import IO


def processes_with(marker: str) -> list[int]:
    """Live (non-zombie) processes with `marker` in their command line."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if marker.encode() not in handle.read():
                    continue
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry))
    return found


class LineReader:
    """A child's text stream read line by line on a thread, so a test can wait for a line (with
    a deadline) instead of sleeping for a fixed time."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = 30.0) -> str:
        """The first line matching the regular expression `pattern`, waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((line for line in self.lines if re.search(pattern, line)), None)
                if found is not None:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n{''.join(self.lines)}")
                self._changed.wait(remaining)

    def text(self, timeout: float = 30.0) -> str:
        """Everything read, once the stream has ended (the child closed it or exited)."""
        self._thread.join(timeout)
        with self._changed:
            return "".join(self.lines)
