"""Pilot: keys belong to the focused pane — an action key acts on that pane's selection (or the
proposal the Inspector shows), elsewhere it says which pane it needs; the footer shows the
focused pane's keys. The operator's approval is a gate the console honours and explains."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.views.models import attention
from roundtable.tui.app import RoundtableApp
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.claims_pane import ClaimsPane
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.runs_pane import RunsPane
from tests.tui.conftest import make_app, notifications, settle, wait_for
from tests.tui.flows import make_repo, ready_proposal, request_approval, scalar

pytestmark = pytest.mark.anyio


@pytest.fixture
async def rt(project: Path) -> AsyncIterator[Runtime]:
    make_repo(project)
    runtime = await Runtime.open(project)
    try:
        yield runtime
    finally:
        await runtime.close()


def footer_keys(app: RoundtableApp) -> list[str]:
    """The keys the footer shows, in its order."""
    return [key for key, active in app.screen.active_bindings.items() if active.binding.show]


async def _select(app: RoundtableApp, pane_type: type, key: str) -> None:
    pane = app.query_one(pane_type)
    pane.focus()
    await wait_for(lambda: key in [r.value for r in pane.rows], what=f"{key} listed")
    for index, row_key in enumerate(pane.rows):
        if row_key.value == key:
            pane.move_cursor(row=index)
    assert pane.selected_key() == key


async def test_a_key_acts_only_on_the_focused_pane(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        # Selections exist in Approvals and Proposals, but the Runs pane has focus.
        await _select(app, ApprovalsPane, approval["id"])
        await _select(app, ProposalsPane, proposal["id"])
        app.query_one(RunsPane).focus()
        await pilot.pause()
        await pilot.press("a")
        await wait_for(
            lambda: any("in the Approvals or Proposals pane first (press 3 or 5)" in n for n in notifications(app)),
            what="which pane a needs",
        )
        await pilot.press("R")
        await wait_for(
            lambda: any(
                "Select a transaction in the Transactions pane first (press 6)" in n for n in notifications(app)
            ),
            what="which pane R needs",
        )
        app.query_one(ClaimsPane).focus()
        await pilot.pause()
        await pilot.press("v")
        await wait_for(lambda: any("(press 3" in n and "proposal" in n for n in notifications(app)), what="v")
        assert not isinstance(app.screen, ConfirmScreen | PromptScreen)
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "requested"
        assert proposal["id"] not in app.gate_reports  # v validated nothing


async def test_the_footer_shows_the_focused_panes_keys_in_order(rt: Runtime) -> None:
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        app.query_one(ProposalsPane).focus()
        await pilot.pause()
        keys = footer_keys(app)
        assert keys[:8] == ["d", "v", "T", "a", "x", "A", "r", "R"], keys
        assert "question_mark" in keys and "exclamation_mark" in keys
        app.query_one(RunsPane).focus()
        await pilot.pause()
        keys = footer_keys(app)
        assert keys[:4] == ["u", "g", "e", "E"], keys
        assert "A" not in keys and "a" not in keys


async def test_a_on_a_proposal_approves_its_revision_and_the_apply_closes_the_rest(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        assert [i.item_id for i in attention(app.overview)] == [approval["id"]]  # type: ignore[arg-type]
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("a")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="approve dialog")
        body = str(app.screen.body.renderables[0])  # type: ignore[attr-defined]
        assert proposal["title"] in body  # titles, not only ids
        await pilot.press("y")
        await wait_for(lambda: any("approved" in n for n in notifications(app)), what="approved")
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "approved"
        await settle(app)
        assert attention(app.overview) == []  # type: ignore[arg-type]


async def test_the_apply_dialog_says_no_approval_is_required_and_records_it(rt: Runtime, project: Path) -> None:
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("A")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="apply dialog")
        line = str(app.screen.body.renderables[2])  # type: ignore[attr-defined]
        assert "no approval required by the policy; applying records your approval of revision 1" in line
        await pilot.press("y")
        await wait_for(lambda: (project / "src" / "app.py").read_text() == "print('v2')\n", what="applied")
        await wait_for(lambda: any("applied" in n for n in notifications(app)), what="apply notice")
        # Applying decided the open request (the implicit approval) and it left the ⚑ list.
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "approved"
        decided = await scalar(rt, "SELECT decision_md FROM human_approvals WHERE id = ?", (approval["id"],))
        assert decided.startswith("approved by applying revision 1")
        await settle(app)
        assert attention(app.overview) == []  # type: ignore[arg-type]
        await _select(app, ApprovalsPane, approval["id"])
        await pilot.press("a")
        await wait_for(lambda: any("is already approved" in n for n in notifications(app)), what="already approved")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_a_key_typed_right_after_a_pane_key_acts_on_that_pane(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        await pilot.press("0", "3", "x")  # no pause: x reaches the Proposals pane
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="deny note")
        await pilot.press(*"not yet", "enter")
        await wait_for(lambda: any("denied" in n for n in notifications(app)), what="denied")
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "denied"
        # a on the proposal changes that decision (the same record), and says so first.
        await pilot.press("a")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="approve dialog")
        assert "You denied this before" in "".join(str(r) for r in app.screen.body.renderables)  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait_for(lambda: any("approved" in n for n in notifications(app)), what="approved")
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "approved"
        assert await scalar(rt, "SELECT COUNT(*) FROM human_approvals") == 1


async def test_the_review_view_shows_the_diff_file_by_file_and_since_the_previous_revision(rt: Runtime) -> None:
    from roundtable.tui.screens.review import ReviewScreen
    from tests.helpers import agent
    from tests.tui.flows import one_line_patch

    proposal = await ready_proposal(rt)
    await rt.call(
        "proposal.attach_patch",
        {"proposal_id": proposal["id"], "patch": one_line_patch("src/app.py", "print('v1')", "print('v3')")},
        agent("implementer-1"),
    )
    app = make_app(rt)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("d")
        await wait_for(lambda: isinstance(app.screen, ReviewScreen), what="review view")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        assert "r2 · file 1/1" in str(screen.query_one("#review-box").border_title)
        assert "src/app.py" in str(screen.query_one("#review-note").render())
        body = screen.query_one("#review-body")
        assert any("print('v3')" in body.render_line(y).text for y in range(body.size.height))
        await pilot.press("v")
        await pilot.pause()
        assert "changes since r1" in str(screen.query_one("#review-note").render())
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, ReviewScreen), what="closed")
