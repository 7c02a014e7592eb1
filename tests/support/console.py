"""Console helpers shared by the test directories: an app factory with a frozen clock and a fixed
header, a wait until the console has settled, a wait on a condition, and the notifications shown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from roundtable.runtime import Runtime
from roundtable.tui.app import RoundtableApp
from roundtable.tui.widgets.header import OwnerInfo
from roundtable.tui.widgets.table_pane import TablePane
from roundtable.tui.widgets.virtual_list import VirtualList
from tests.tui.seed import RUN_ID, frozen_clock


def make_app(runtime: Runtime, **kwargs: Any) -> RoundtableApp:
    options: dict[str, Any] = {
        "run_id": RUN_ID,
        "clock_ns": frozen_clock,
        "watch_commits": False,
        "live_clock": False,
        "owner_info": OwnerInfo(
            project="Roundtable", http_url="http://127.0.0.1:7117/mcp", socket_path=".roundtable/mcp/roundtable.sock"
        ),
    }
    options.update(kwargs)
    return RoundtableApp(runtime, **options)


async def settle(app: RoundtableApp, *, timeout: float = 5.0) -> None:
    """Wait until an overview is on screen, no refresh or inspection is running or due, every
    table has rebuilt and every virtual list has its pages."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lists = list(app.query(VirtualList))
        tables = list(app.query(TablePane))
        if (
            app.overview is not None
            and app.refresher.idle
            and app.inspections.idle
            and all(v.loaded and not v._pending for v in lists)
            and not any(t.rebuild_pending or t._require_update_dimensions for t in tables)
        ):
            await asyncio.sleep(0.05)
            return
        await asyncio.sleep(0.02)
    raise AssertionError("console did not settle")


async def wait_for(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def notifications(app: RoundtableApp) -> list[str]:
    return [n.message for n in app._notifications]
