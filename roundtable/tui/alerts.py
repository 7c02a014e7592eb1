"""Terminal alerts: the console tells the operator, even when its window is in the background.

For each notification the owner's notifier hands it (`notify.terminal`): the terminal bell, a
desktop-notification escape — OSC 9 (iTerm2, Windows Terminal, WezTerm, kitty, foot) and OSC 777
(`notify;title;body`: VTE terminals, rxvt, Ghostty) — and a toast in the console. The window title
carries the count of what needs the operator (`roundtable — 2 need you`), kept in step with the
header's ⚑ badge. Text from the table (an agent's reason, a task's title) is written into these
sequences only after every control character is removed, so nothing it holds can end the
sequence early or send one of its own.
"""

from __future__ import annotations

import re
from typing import Any

from roundtable.notify import Notification

BEL = "\a"
ST = "\x1b\\"  # string terminator
MAX_TEXT = 200
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """`text` without control characters (C0, DEL, C1), on one line, at most `limit` long."""
    text = _CONTROLS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def notification_sequence(n: Notification) -> str:
    """Bell, OSC 9 and OSC 777 for `n`."""
    title = clean(n.title).replace(";", ",")
    body = clean(n.message)
    return f"{BEL}\x1b]9;{title}: {body}{ST}\x1b]777;notify;{title};{body.replace(';', ',')}{ST}"


def title_sequence(project: str, count: int) -> str:
    """OSC 2: the window title, with the count of what needs the operator."""
    name = clean(project or "roundtable", 60)
    return f"\x1b]2;{name} — {count} need you{ST}" if count else f"\x1b]2;{name}{ST}"


class TerminalAlerts:
    """Writes the sequences through the app's driver (nothing without a terminal)."""

    def __init__(self, app: Any, project: str) -> None:
        self.app = app
        self.project = project
        self.count = -1

    def notify(self, n: Notification) -> None:
        self._write(notification_sequence(n))
        self.app.notify(clean(n.message, 400), title=n.title, severity="warning", timeout=10)

    def set_count(self, count: int) -> None:
        if count != self.count:
            self.count = count
            self._write(title_sequence(self.project, count))

    def _write(self, sequence: str) -> None:
        driver = getattr(self.app, "_driver", None)
        if driver is not None:
            driver.write(sequence)
            driver.flush()
