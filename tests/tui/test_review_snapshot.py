"""Snapshot (pytest-textual-snapshot) of the review view at 80x24: the seeded proposal's diff with
the cursor on a line and the operator's comment shown under the line it is about.

Synchronous, as snap_compare runs the app on its own event loop (see test_snapshots.py).
Update with `pytest tests/tui/test_review_snapshot.py --snapshot-update`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from roundtable.runtime import Runtime
from roundtable.tui.screens.review import ReviewScreen
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import DIFF, seed

COMMENT = "Say in a docstring that mul multiplies."


async def _open(root: Path) -> Runtime:
    from roundtable.services.governance.comments import read_revision

    runtime = await Runtime.open(root)
    await seed(runtime)
    line = next(d.new for d in read_revision(DIFF).file_lines()["calc/ops.py"] if d.text == "+    return a * b")
    await runtime.call(
        "proposal.comment", {"proposal_id": "P-1", "path": "calc/ops.py", "line": line, "body_md": COMMENT}
    )
    return runtime


@pytest.fixture
def commented_runtime(project: Path) -> Iterator[Runtime]:
    runtime = asyncio.run(_open(project))
    try:
        yield runtime
    finally:
        asyncio.run(runtime.close())


def test_review_view_with_a_line_comment_at_80x24(snap_compare: Any, commented_runtime: Runtime) -> None:
    app = make_app(commented_runtime)

    async def ready(pilot: Pilot[None]) -> None:
        await settle(app)
        await pilot.press("3", "d")
        await wait_for(lambda: isinstance(app.screen, ReviewScreen), what="review view")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        await wait_for(lambda: bool(screen.comments), what="comments loaded")
        await pilot.press(*"jjjjjjjjj")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
