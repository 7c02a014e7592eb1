"""Console responsiveness with big tables: time to first paint and key-press latency with
10,000 claims and 100,000 events (headless Textual, 140x40).

- first paint: from starting the app until the header, the short panes and the first page of
  both virtual lists (claims, events) are on screen;
- key press → repaint: a press through Textual's Pilot, returning once the app is idle again
  and every row in view has been read (moving one row, paging, jumping to the far end of the
  event list; a page the list reads ahead of the view may still be on its way);
- filter: from submitting a filter over 100,000 events until the filtered count is shown.

`ROUNDTABLE_BENCH_EVENTS=1000000 python -m bench tui` measures a bigger event log.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

CLAIMS = 10_000
EVENTS = int(os.environ.get("ROUNDTABLE_BENCH_EVENTS", "100000"))
SIZE = (140, 40)


async def _fill(runtime: Any, claims: int, events: int, batch: int = 50_000) -> None:
    from roundtable import clock

    stamp = clock.now()
    async with runtime.db.write() as tx:
        await tx.insert("runs", {"id": "RUN-bench", "goal": "bench", "status": "active", "started_at": stamp})
    for start in range(0, claims, batch):
        rows = [
            (
                f"C-{i:08d}",
                f"file:src/pkg_{i % 500:03d}/mod_{i:08d}.py",
                f"agent-{i % 9}",
                "T-1",
                "write",
                "active",
                stamp,
                i + 1,
            )
            for i in range(start, min(start + batch, claims))
        ]
        async with runtime.db.write() as tx:
            await tx.executemany(
                "INSERT INTO claims (id, resource_id, agent_id, task_id, claim_type, status, expires_at, fence) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    for start in range(0, events, batch):
        erows = [
            ("RUN-bench", "bench.event", f"agent-{i % 9}", "T-1", json.dumps({"i": i}), stamp)
            for i in range(start, min(start + batch, events))
        ]
        async with runtime.db.write() as tx:
            await tx.executemany(
                "INSERT INTO events (run_id, type, actor_id, task_id, payload_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                erows,
            )


async def _settled(app: Any, timeout: float = 60.0) -> None:
    from roundtable.tui.widgets.virtual_list import VirtualList

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lists = list(app.query(VirtualList))
        if (
            app.overview is not None
            and lists
            and all(v.loaded and v.on_screen() and (v._pages or not v.total) for v in lists)
        ):
            return
        await asyncio.sleep(0.002)
    raise TimeoutError("console did not settle")


async def _measure(root: Path) -> list[dict[str, Any]]:
    from roundtable.runtime import Runtime
    from roundtable.tui.app import RoundtableApp
    from roundtable.tui.widgets.claims_pane import ClaimsPane
    from roundtable.tui.widgets.events_pane import EventsPane

    runtime = await Runtime.open(root)
    rows: list[dict[str, Any]] = []
    note = f"{CLAIMS:,} claims, {EVENTS:,} events, {SIZE[0]}x{SIZE[1]}"
    try:
        started = time.perf_counter()
        await _fill(runtime, CLAIMS, EVENTS)
        rows.append(_row("seed database", time.perf_counter() - started, "s", note))

        cold = RoundtableApp(runtime, run_id="RUN-bench", watch_commits=False, live_clock=False)
        started = time.perf_counter()
        async with cold.run_test(size=SIZE):
            await _settled(cold)
            rows.append(
                _row(
                    "time to first paint (cold: first console in the process)",
                    (time.perf_counter() - started) * 1000,
                    "ms",
                    note,
                )
            )

        app = RoundtableApp(runtime, run_id="RUN-bench", watch_commits=False, live_clock=False)
        started = time.perf_counter()
        async with app.run_test(size=SIZE) as pilot:
            await _settled(app)
            rows.append(
                _row(
                    "time to first paint (warm: styles already parsed)",
                    (time.perf_counter() - started) * 1000,
                    "ms",
                    note,
                )
            )

            events = app.query_one(EventsPane)
            events.focus()
            await pilot.pause()
            rows.append(_press_row("key → repaint: move one event (k)", await _presses(pilot, app, ["k"] * 30), note))
            rows.append(
                _press_row("key → repaint: page up (pageup)", await _presses(pilot, app, ["pageup"] * 15), note)
            )
            rows.append(
                _press_row("key → repaint: jump to first/last (g/G)", await _presses(pilot, app, ["g", "G"] * 5), note)
            )
            claims = app.query_one(ClaimsPane)
            claims.focus()
            await pilot.pause()
            rows.append(_press_row("key → repaint: move one claim (j)", await _presses(pilot, app, ["j"] * 30), note))

            started = time.perf_counter()
            events.set_filter("agent-3")
            while not (events.filter_text and events.loaded and events._pages and not events._pending):  # noqa: ASYNC110
                await asyncio.sleep(0.002)
            await _settled(app)
            rows.append(
                _row(
                    "filter events (substring) to first page",
                    (time.perf_counter() - started) * 1000,
                    "ms",
                    f"{events.total:,} of {EVENTS:,} match; input stays live meanwhile",
                )
            )
    finally:
        await runtime.close()
    rows.append(
        _press_row("key → repaint floor: Pilot on an empty app", await _floor(), "Textual + Pilot overhead alone")
    )
    return rows


async def _floor() -> list[float]:
    """The same measurement on an app with one static line: what Pilot and Textual cost alone."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    class Empty(App[None]):
        BINDINGS = [("k", "noop", "")]

        def compose(self) -> ComposeResult:
            yield Static("x")

        def action_noop(self) -> None:
            self.query_one(Static).update(str(time.perf_counter()))

    app = Empty()
    out = []
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(30):
            started = time.perf_counter()
            await pilot.press("k")
            out.append((time.perf_counter() - started) * 1000)
    return out


async def _presses(pilot: Any, app: Any, keys: list[str]) -> list[float]:
    out = []
    for key in keys:
        started = time.perf_counter()
        await pilot.press(key)
        await _settled(app)
        out.append((time.perf_counter() - started) * 1000)
    return out


def _press_row(metric: str, samples: list[float], note: str) -> dict[str, Any]:
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return _row(metric, statistics.median(samples), "ms (median)", f"p95 {p95:.1f} ms; {note}")


def _row(metric: str, value: float, unit: str, note: str) -> dict[str, Any]:
    return {"benchmark": "tui", "metric": metric, "value": round(value, 3), "unit": unit, "note": note}


def run() -> list[dict[str, Any]]:
    from roundtable.scaffold import init_project

    with tempfile.TemporaryDirectory(prefix="rt-bench-tui-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        init_project(root)
        return asyncio.run(_measure(root))


if __name__ == "__main__":
    for row in run():
        print(row)
