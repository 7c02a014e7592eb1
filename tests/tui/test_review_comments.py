"""Pilot: line comments in the review view — a cursor on the diff's lines, `c` opens a comment
dialog for the line under it (a file comment on a header), the comment is recorded through
`proposal.comment` and shown under its line; the Inspector counts the open comments; a read-only
console refuses `c` and records nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import OptionList

from roundtable.runtime import Runtime
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.screens.review import READ_ONLY_COMMENT, ReviewScreen
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from tests.tui.conftest import make_app, notifications, settle, wait_for
from tests.tui.flows import make_repo, ready_proposal, scalar

pytestmark = pytest.mark.anyio


@pytest.fixture
async def rt(project: Path) -> AsyncIterator[Runtime]:
    make_repo(project)
    runtime = await Runtime.open(project)
    try:
        yield runtime
    finally:
        await runtime.close()


def shown(screen: ReviewScreen) -> str:
    body = screen.query_one("#review-body", OptionList)
    return "\n".join(body.render_line(y).text for y in range(body.size.height))


async def open_review(app: object, pilot: object, proposal_id: str) -> ReviewScreen:
    pane = app.query_one(ProposalsPane)  # type: ignore[attr-defined]
    pane.focus()
    await wait_for(lambda: proposal_id in [r.value for r in pane.rows], what="proposal listed")
    await pilot.press("d")  # type: ignore[attr-defined]
    await wait_for(lambda: isinstance(app.screen, ReviewScreen), what="review view")  # type: ignore[attr-defined]
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, ReviewScreen)
    return screen


async def test_c_comments_on_the_line_under_the_cursor_and_shows_it_there(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    app = make_app(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        screen = await open_review(app, pilot, proposal["id"])
        body = screen.query_one("#review-body", OptionList)
        # diff --git, ---, +++, @@, -print('v1'), +print('v2'): the cursor starts on the first.
        assert body.highlighted == 0
        await pilot.press("j", "j", "j", "j", "j")
        assert screen._lines[body.highlighted or 0].text == "+print('v2')"
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="comment dialog")
        assert "src/app.py:1" in str(app.screen.query_one("#prompt-box").border_title)
        await pilot.press(*"Say why v2.")
        await pilot.press("enter")
        await wait_for(lambda: app.screen is screen, what="back in the review view")
        await wait_for(lambda: "operator: Say why v2." in shown(screen), what="comment shown")
        text = shown(screen)
        assert text.index("+print('v2')") < text.index("operator: Say why v2.")
        assert "1 comment" in str(screen.query_one("#review-note").render())
        row = await scalar(rt, "SELECT path || ':' || line || ':' || side || ':' || author FROM proposal_comments")
        assert row == "src/app.py:1:new:operator"

        # On the file header: a comment on the whole file (no line).
        await pilot.press("k", "k", "k", "k", "k")
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="file comment dialog")
        assert "Comment on src/app.py ·" in str(app.screen.query_one("#prompt-box").border_title)
        await pilot.press(*"Whole file.", "enter")
        await wait_for(lambda: "operator: Whole file." in shown(screen), what="file comment shown")
        assert await scalar(rt, "SELECT count(*) FROM proposal_comments WHERE line IS NULL") == 1

        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, ReviewScreen), what="closed")
        inspector = app.query_one(Inspector)
        app.load_inspector("proposal", proposal["id"])
        await wait_for(
            lambda: inspector.entity is not None and len(inspector.entity.related.get("comments", [])) == 2,
            what="inspector comments",
        )
        entity = inspector.entity
        assert entity is not None
        summary = [p.plain for p in inspector._proposal_parts(entity) if isinstance(p, Text)]
        assert "2 comments on r1 (d: review view)" in summary


async def test_a_read_only_console_refuses_c_and_records_nothing(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    app = make_app(rt, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        await open_review(app, pilot, proposal["id"])
        await pilot.press("j", "c")
        await wait_for(lambda: READ_ONLY_COMMENT in notifications(app), what="refusal")
        assert not isinstance(app.screen, PromptScreen)
    assert await scalar(rt, "SELECT count(*) FROM proposal_comments") == 0
