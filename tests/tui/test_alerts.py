"""The console's terminal alerts: a notification rings the bell and sends the desktop escapes
(OSC 9, OSC 777) through the terminal driver; the window title carries the count of what needs
the operator; text from the table cannot smuggle a sequence of its own. Real notifier on a real
database, Textual Pilot (the driver's output is captured)."""

from __future__ import annotations

from typing import Any

import pytest

from roundtable.notify import Notifier
from roundtable.runtime import Runtime
from roundtable.tools.context import DISPATCHER
from roundtable.tui.alerts import clean
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import RUN_ID

pytestmark = pytest.mark.anyio


def capture(app: Any) -> list[str]:
    """Everything the app writes to its (headless) terminal driver from now on."""
    written: list[str] = []
    driver = app._driver
    original = driver.write

    def write(data: str) -> None:
        written.append(data)
        original(data)

    driver.write = write
    return written


async def test_a_notification_rings_the_bell_and_sends_osc_9_and_777(seeded: Runtime) -> None:
    notifier = Notifier(seeded, desktop=False, poll=0.1)
    await notifier.start()
    try:
        app = make_app(seeded, notifier=notifier)
        async with app.run_test(size=(160, 45)):
            await settle(app)
            out = capture(app)
            task = await seeded.call("task.create", {"title": "Add mul()", "body_md": "b", "readable_paths": ["calc"]})
            reason = "harness missing \x1b]2;pwned\x07 now"  # hostile text: an escape of its own
            await seeded.call(
                "autopilot.block_task",
                {"task_id": task["task"]["id"], "reason": reason, "run_id": RUN_ID},
                DISPATCHER,
            )
            await wait_for(lambda: any("\x1b]9;" in chunk for chunk in out), what="the OSC 9 escape")
            sent = "".join(out)
            message = f"task {task['task']['id']} is blocked: {clean(reason)}"
            assert f"\a\x1b]9;Task blocked: {message}\x1b\\" in sent
            assert f"\x1b]777;notify;Task blocked;{message.replace(';', ',')}\x1b\\" in sent  # ; separates fields
            assert "pwned\x07" not in sent and "\x1b]2;pwned" not in sent
            # The window title counts what needs the operator, as the header's badge does.
            app.request_refresh()
            await wait_for(lambda: "need you" in "".join(out), what="the title's count")
            needs = app.header.compose_text().plain.split("⚑ ", 1)[1].split(" ", 1)[0]
            assert f"\x1b]2;Roundtable — {needs} need you\x1b\\" in "".join(out)
    finally:
        await notifier.close()
