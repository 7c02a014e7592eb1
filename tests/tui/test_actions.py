"""Pilot: every operator action goes through `Runtime.call` and changes real state; the
read-only console refuses them all and changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.tui import commands
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.transactions_pane import TransactionsPane
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


async def _select(app, pane_type, key: str) -> None:  # type: ignore[no-untyped-def]
    pane = app.query_one(pane_type)
    pane.focus()
    await wait_for(lambda: any(k == key for k in [r.value for r in pane.rows]), what=f"{key} listed")
    for index, row_key in enumerate(pane.rows):
        if row_key.value == key:
            pane.move_cursor(row=index)
    assert pane.selected_key() == key


async def test_approve_validate_apply_and_roll_back(rt: Runtime, project: Path) -> None:
    run = await runs.create_run(rt, "ship v2")
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt, run_id=run.id)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ApprovalsPane, approval["id"])
        await pilot.press("a")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="approve confirmation")
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "requested"
        await pilot.press("y")
        await wait_for(lambda: any("approved" in n for n in notifications(app)), what="approve notice")
        assert any(n.title == "approval" for n in app._notifications)
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "approved"
        assert await scalar(rt, "SELECT decided_by FROM human_approvals WHERE id = ?", (approval["id"],)) == "operator"

        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("v")
        await wait_for(lambda: proposal["id"] in app.gate_reports, what="gate report")
        report, error = app.gate_reports[proposal["id"]]
        assert error == "" and report is not None and report["valid"] is True
        await wait_for(lambda: any("ready to apply" in n for n in notifications(app)), what="ready notice")
        inspector = app.query_one(Inspector)
        await wait_for(lambda: inspector.gate is not None and inspector.entity is not None, what="inspector gates")

        await pilot.press("A")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="apply confirmation")
        assert proposal["current_revision"] in str(app.screen.body.renderables[1])  # type: ignore[attr-defined]
        await pilot.press("y")
        await wait_for(lambda: (project / "src" / "app.py").read_text() == "print('v2')\n", what="patch applied")
        await wait_for(lambda: any("applied" in n for n in notifications(app)), what="apply notice")
        tx_id = await scalar(rt, "SELECT id FROM transactions WHERE proposal_id = ?", (proposal["id"],))
        assert await scalar(rt, "SELECT status FROM transactions WHERE id = ?", (tx_id,)) == "applied"
        assert await scalar(rt, "SELECT applied_by FROM transactions WHERE id = ?", (tx_id,)) == "operator"

        await settle(app)
        await _select(app, TransactionsPane, tx_id)
        await pilot.press("R")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="rollback confirmation")
        await pilot.press("y")
        await wait_for(lambda: (project / "src" / "app.py").read_text() == "print('v1')\n", what="rolled back")
        assert await scalar(rt, "SELECT status FROM transactions WHERE id = ?", (tx_id,)) == "rolled_back"

        # Rolling back again is certain to fail: it is refused before any confirmation.
        await settle(app)
        await _select(app, TransactionsPane, tx_id)
        await pilot.press("R")
        await wait_for(lambda: any("only an applied transaction" in n for n in notifications(app)), what="refusal")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_cancelled_apply_changes_nothing(rt: Runtime, project: Path) -> None:
    proposal = await ready_proposal(rt)
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("A")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="apply confirmation")
        await pilot.press("n")
        await wait_for(lambda: not isinstance(app.screen, ConfirmScreen), what="dialog closed")
        assert (project / "src" / "app.py").read_text() == "print('v1')\n"
        assert await scalar(rt, "SELECT COUNT(*) FROM transactions") == 0


async def test_deny_with_a_note_and_reject_with_a_reason(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ApprovalsPane, approval["id"])
        await pilot.press("x")  # deny asks for its note directly
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="note prompt")
        await pilot.press(*"too risky", "enter")
        await wait_for(lambda: any("denied" in n for n in notifications(app)), what="deny notice")
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "denied"
        assert (
            await scalar(rt, "SELECT decision_md FROM human_approvals WHERE id = ?", (approval["id"],)) == "too risky"
        )

        # The denial is a gate: the console does not offer the apply, and says why.
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("A")
        await wait_for(
            lambda: any("cannot be applied yet — failing: approval" in n for n in notifications(app)), what="refusal"
        )
        assert not isinstance(app.screen, ConfirmScreen)
        assert await scalar(rt, "SELECT COUNT(*) FROM transactions") == 0

        await pilot.press("r")
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="reason prompt")
        await pilot.press("enter")  # a reason is required: the prompt stays
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"not needed", "enter")
        await wait_for(lambda: any("rejected" in n for n in notifications(app)), what="reject notice")
        assert await scalar(rt, "SELECT status FROM proposals WHERE id = ?", (proposal["id"],)) == "rejected"
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "denied"


async def test_actions_certain_to_fail_are_not_offered(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    await rt.call("patch.reject", {"proposal_id": proposal["id"], "reason_md": "no"})
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("A")
        await wait_for(
            lambda: any("only an open proposal can be applied" in n for n in notifications(app)), what="apply"
        )
        await pilot.press("r")
        await wait_for(
            lambda: any("only an open proposal can be rejected" in n for n in notifications(app)), what="reject"
        )
        assert not isinstance(app.screen, ConfirmScreen | PromptScreen)
        assert app.is_running
        assert await scalar(rt, "SELECT COUNT(*) FROM transactions") == 0


async def test_a_proposal_with_failing_gates_is_not_offered_for_apply(rt: Runtime) -> None:
    proposal = await ready_proposal(rt)
    async with rt.db.write(tool="test.unvote") as tx:
        await tx.execute("DELETE FROM votes WHERE proposal_id = ?", (proposal["id"],))
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("v")
        await wait_for(lambda: any("not ready" in n and "policy" in n for n in notifications(app)), what="verdict")
        await pilot.press("A")
        await wait_for(lambda: any("cannot be applied yet" in n for n in notifications(app)), what="apply refusal")
        assert not isinstance(app.screen, ConfirmScreen)
        assert await scalar(rt, "SELECT COUNT(*) FROM transactions") == 0


async def test_read_only_refuses_every_mutating_action(rt: Runtime, project: Path) -> None:
    proposal = await ready_proposal(rt)
    approval = await request_approval(rt, proposal["id"])
    app = make_app(rt, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ApprovalsPane, approval["id"])
        events_before = await scalar(rt, "SELECT COUNT(*) FROM events")
        await pilot.press("a", "x")
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("A", "r", "R", "t", "p", "v", "T")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, ConfirmScreen | PromptScreen)
        assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (approval["id"],)) == "requested"
        assert await scalar(rt, "SELECT status FROM proposals WHERE id = ?", (proposal["id"],)) != "rejected"
        assert (project / "src" / "app.py").read_text() == "print('v1')\n"
        # validate records a patch.validated event, so it is disabled too: nothing was written
        assert await scalar(rt, "SELECT COUNT(*) FROM events") == events_before
        assert proposal["id"] not in app.gate_reports
        # the mutating keys are not offered in the footer
        offered = {active.binding.action for active in app.active_bindings.values()}
        assert offered, "the console offers its read-only keys"
        assert not offered & {c.action for c in commands.COMMANDS if c.mutating}
        # ... and every one of them, pressed anyway, says the same kind of refusal (none silent)
        for command in commands.COMMANDS:
            if command.mutating and command.bind:
                app.clear_notifications()
                await pilot.press(command.key)
                refusal = commands.read_only_refusal(command)
                await wait_for(lambda r=refusal: r in notifications(app), what=f"refusal of {command.key}")
        assert await scalar(rt, "SELECT COUNT(*) FROM events") == events_before
        assert {"help", "refresh", "filter"} <= offered
        assert "READ-ONLY" in str(app.header.compose_text())


async def test_run_tests_key_records_a_passing_run_for_the_revision(rt: Runtime, project: Path) -> None:
    run = await runs.create_run(rt, "ship v2")
    (project / "Makefile").write_text("test:\n\tsleep 0.5; printf ok\n")
    proposal = await ready_proposal(rt)
    before = await scalar(rt, "SELECT count(*) FROM test_runs WHERE proposal_id = ?", (proposal["id"],))
    app = make_app(rt, run_id=run.id)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ProposalsPane, proposal["id"])
        await pilot.press("T")
        # A visible progress indicator while the tests run, gone when they end.
        await wait_for(
            lambda: f"testing {proposal['id']}: make test" in app.header.compose_text().plain, what="progress"
        )
        await wait_for(lambda: proposal["id"] in app.gate_reports, what="gate report after the tests")
        assert "testing" not in app.header.compose_text().plain
    rows = await scalar(rt, "SELECT count(*) FROM test_runs WHERE proposal_id = ?", (proposal["id"],))
    assert rows == before + 1
    latest = await scalar(
        rt,
        "SELECT command || ' ' || status FROM test_runs WHERE proposal_id = ? ORDER BY created_at DESC",
        (proposal["id"],),
    )
    assert latest == "make test passed"


async def test_tick_while_paused_says_so(rt: Runtime) -> None:
    from roundtable.chair import ChairLoop

    loop = ChairLoop(rt, interval=30.0)
    app = make_app(rt, chair=loop)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("p")
        await wait_for(lambda: loop.paused, what="paused")
        await pilot.press("t")
        await wait_for(lambda: any("paused: p resumes it" in n for n in notifications(app)), what="paused notice")
        assert not loop._wake.is_set()
        await pilot.press("p")
        await wait_for(lambda: not loop.paused, what="resumed")
        loop._wake.clear()
        await pilot.press("t")
        await wait_for(lambda: any("Chair woken" in n for n in notifications(app)), what="woken notice")
        assert loop._wake.is_set()
    await loop.close()


async def test_a_new_run_is_the_run_create_operation(rt: Runtime) -> None:
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await app.run_action("new_run")  # as the palette runs it: the runs flow has the action
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="goal prompt")
        await pilot.press(*"ship v3", "enter")
        await wait_for(lambda: any("run started" in n for n in notifications(app)), what="new run notice")
        row = await scalar(rt, "SELECT id FROM runs WHERE goal = 'ship v3' AND status = 'active'")
        assert row and app.run_id == row
        by = await scalar(rt, "SELECT principal || '/' || transport FROM events WHERE type = 'run.created'")
        assert by == "operator/tui"


async def test_the_approvals_cursor_moves_on_when_its_request_is_closed(rt: Runtime) -> None:
    """Revision 2 closes revision 1's request and asks again: the cursor follows to the new
    request, so `a` approves what is waiting instead of refusing a closed one."""
    proposal = await ready_proposal(rt)
    first = await request_approval(rt, proposal["id"])
    other = await request_approval(rt, proposal["id"], subject="another")  # stays waiting, another row
    app = make_app(rt)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, ApprovalsPane, first["id"])
        pane = app.query_one(ApprovalsPane)
        async with rt.db.write(tool="test.revise") as tx:
            await tx.update("human_approvals", {"id": first["id"]}, {"status": "closed"})
            await tx.update("human_approvals", {"id": other["id"]}, {"status": "closed"})
        second = await request_approval(rt, proposal["id"], subject="revision 2")
        await wait_for(lambda: pane.selected_key() == second["id"], what="the cursor on the waiting request")
        await pilot.press("a")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="approve confirmation")
        await pilot.press("y")
        await wait_for(lambda: any("approved" in n for n in notifications(app)), what="approved notice")
    assert await scalar(rt, "SELECT status FROM human_approvals WHERE id = ?", (second["id"],)) == "approved"
