"""Snapshots (pytest-textual-snapshot) of the main screen, the proposal inspector, the apply
confirmation, the help screen, the Agents pane with a live session and the session log viewer,
from a seeded database with a frozen clock.

snap_compare runs the app on its own event loop, so these tests are synchronous: the runtime
is opened and seeded on a short-lived loop first (aiosqlite connections are loop-independent).
Update with `pytest tests/tui/test_snapshots.py --snapshot-update`; SVGs live in snapshots/tui/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from roundtable.autopilot import Dispatcher
from roundtable.runtime import Runtime
from roundtable.store.records import Proposal
from roundtable.supervisor import Supervisor
from roundtable.tui.messages import GateReport
from roundtable.tui.screens.confirm import apply_dialog
from roundtable.tui.screens.session_log import SessionLogScreen
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.inspector import Inspector
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import LOG_LINES, REVISION, seed, seed_live_session

SIZE = (140, 40)

REPORT: dict[str, Any] = {
    "revision": REVISION,
    "revision_number": 1,
    "valid": True,
    "applicable": False,
    "gates": [
        {"name": "status", "passed": True, "reason": "proposal is in_review"},
        {"name": "patch", "passed": True, "reason": "revision 1 (" + REVISION[:12] + ") parses"},
        {"name": "claims", "passed": True, "reason": "1 claim(s) cover the patch"},
        {"name": "dry_run", "passed": True, "reason": "git apply --check accepts the patch"},
        {"name": "policy", "passed": False, "reason": "needs 2 approvals, has 1 (tester voted reject)"},
        {"name": "security", "passed": True, "reason": "no security review required"},
        {"name": "tests", "passed": False, "reason": "no passed test run for this revision"},
    ],
}


@pytest.fixture
def seeded_runtime(project: Path) -> Iterator[Runtime]:
    runtime = asyncio.run(_open_seeded(project))
    try:
        yield runtime
    finally:
        asyncio.run(runtime.close())


async def _open_seeded(root: Path) -> Runtime:
    runtime = await Runtime.open(root)
    await seed(runtime)
    return runtime


async def _ready(app: Any) -> None:
    """Everything on screen, including the inspector's first record (the focused proposal)."""
    await settle(app)
    inspector = app.query_one(Inspector)
    await wait_for(lambda: inspector.entity is not None, what="inspector filled")
    await settle(app)


def test_main_screen(snap_compare: Any, seeded_runtime: Runtime) -> None:
    app = make_app(seeded_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)

    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


@pytest.mark.parametrize("size", [(80, 24), (160, 45), (220, 60)], ids=["80x24", "160x45", "220x60"])
def test_main_screen_at_every_size(snap_compare: Any, seeded_runtime: Runtime, size: tuple[int, int]) -> None:
    """80x24 shows one pane at a time with the pane bar; larger terminals show every pane."""
    app = make_app(seeded_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)

    assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.fixture
def live_runtime(seeded_runtime: Runtime) -> Runtime:
    """implementer-1 at work in a live session (with a log), tester-1 with a failed one."""
    asyncio.run(seed_live_session(seeded_runtime))
    return seeded_runtime


@pytest.mark.parametrize("size", [(160, 45), (80, 24)], ids=["160x45", "80x24"])
def test_agents_pane_with_a_live_session(snap_compare: Any, live_runtime: Runtime, size: tuple[int, int]) -> None:
    """The Agents pane beside Claims and Events at 160x45 (reached by 0 at 80x24), with the
    autopilot badge of a real dispatcher switched on."""
    dispatcher = Dispatcher(live_runtime, Supervisor(live_runtime), enabled=True)
    app = make_app(live_runtime, dispatcher=dispatcher)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)
        await pilot.press("0")
        await settle(app)

    assert snap_compare(app, terminal_size=size, run_before=ready)


def test_session_log_viewer_at_80x24(snap_compare: Any, live_runtime: Runtime) -> None:
    app = make_app(live_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)
        await pilot.press("0", "l")
        await wait_for(lambda: isinstance(app.screen, SessionLogScreen), what="log viewer")
        screen = app.screen
        assert isinstance(screen, SessionLogScreen)
        await wait_for(lambda: len(screen.lines) == len(LOG_LINES), what="log lines")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


def test_apply_dialog_at_80x24(snap_compare: Any, seeded_runtime: Runtime) -> None:
    app = make_app(seeded_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)
        assert app.overview is not None
        app.push_screen(apply_dialog(app.overview.proposals[0].proposal, REPORT))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


def test_help_at_80x24(snap_compare: Any, seeded_runtime: Runtime) -> None:
    app = make_app(seeded_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)
        await pilot.press("question_mark")
        await wait_for(lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


def test_proposal_inspector(snap_compare: Any, seeded_runtime: Runtime) -> None:
    app = make_app(seeded_runtime)

    async def inspect(pilot: Pilot[None]) -> None:
        await _ready(app)
        app.post_message(GateReport("P-1", REPORT))
        await pilot.press("enter")
        inspector = app.query_one(Inspector)
        await wait_for(lambda: inspector.entity is not None and inspector.gate is not None, what="inspector")
        await settle(app)

    assert snap_compare(app, terminal_size=SIZE, run_before=inspect)


def test_apply_confirmation(snap_compare: Any, seeded_runtime: Runtime) -> None:
    app = make_app(seeded_runtime)

    async def confirm(pilot: Pilot[None]) -> None:
        await _ready(app)
        assert app.overview is not None
        proposal: Proposal = app.overview.proposals[0].proposal
        app.push_screen(apply_dialog(proposal, REPORT))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=confirm)


def test_help_screen(snap_compare: Any, seeded_runtime: Runtime) -> None:
    app = make_app(seeded_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await _ready(app)
        app.query_one(ApprovalsPane).focus()

    assert snap_compare(app, press=["question_mark"], terminal_size=SIZE, run_before=ready)
