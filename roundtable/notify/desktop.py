"""Desktop notifications through `notify-send` (libnotify), when it is installed and a desktop
session is there (`DISPLAY` or `WAYLAND_DISPLAY`). Each one runs in the background with a short
timeout; at most `MAX_PENDING` are in flight (more are dropped: the desktop is already told)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil

from roundtable import proc
from roundtable.notify.kinds import Notification

log = logging.getLogger("roundtable.notify")

TIMEOUT = 5.0
MAX_PENDING = 4


def available() -> str:
    """The path of `notify-send` when it can reach a desktop session here, else ''."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return ""
    return shutil.which("notify-send") or ""


class Desktop:
    def __init__(self, program: str) -> None:
        self.program = program
        self._pending: set[asyncio.Task[None]] = set()
        self.failed = ""

    def submit(self, n: Notification) -> None:
        if len(self._pending) >= MAX_PENDING:
            return
        task = asyncio.get_running_loop().create_task(self._send(n), name="notify-desktop")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _send(self, n: Notification) -> None:
        urgency = "critical" if n.kind in ("apply_failed", "transaction_attention") else "normal"
        # Notification servers read the body as markup: escaped, so it is shown as written.
        body = n.message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        argv = [self.program, "--app-name=roundtable", f"--urgency={urgency}", "--", n.title, body]
        try:
            done = await proc.run(argv, timeout=TIMEOUT)
        except OSError as exc:
            done = None
            self.failed = exc.strerror or type(exc).__name__
        if done is not None and done.code != 0 and not self.failed:
            self.failed = (done.err.decode("utf-8", "replace").strip() or f"exit {done.code}")[:200]
            log.warning("notify-send failed: %s", self.failed)

    async def close(self) -> None:
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)
