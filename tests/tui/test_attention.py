"""What needs the operator: the header's ⚑ badge counts it, `!` lists it most urgent first, and
enter goes to the item in its pane."""

from __future__ import annotations

import pytest

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.views.models import attention
from roundtable.services.views.overview import load_overview
from roundtable.tui.screens.attention import AttentionScreen
from roundtable.tui.widgets.approvals_pane import ApprovalsPane
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.tasks_pane import TasksPane
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import RUN_ID

pytestmark = pytest.mark.anyio


async def _block_a_task(rt: Runtime) -> None:
    async with rt.db.write(tool="test.block") as tx:
        await tx.insert(
            "tasks",
            {
                "id": "T-stuck",
                "title": "Stuck on a flaky test",
                "body_md": "b",
                "status": "blocked",
                "updated_at": clock.now(),
            },
        )


async def test_attention_orders_what_needs_the_operator(seeded: Runtime) -> None:
    await _block_a_task(seeded)
    async with seeded.db.read() as r:
        items = attention(await load_overview(r, RUN_ID, seeded.config))
    assert [(i.kind, i.item_id) for i in items] == [("approval", "H-1"), ("task", "T-stuck")]
    assert items[0].pane == "approvals" and items[1].pane == "tasks"


async def test_a_blocked_task_says_why_when_the_autopilot_gave_up(seeded: Runtime) -> None:
    await _block_a_task(seeded)
    reason = "implementer-1 failed 3 times (exit 1)"
    async with seeded.db.write() as tx:
        await tx.append_event(RUN_ID, "task.blocked", {"task_id": "T-stuck", "reason": reason}, task_id="T-stuck")
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    assert [i.text for i in attention(overview) if i.kind == "task"] == [
        f"task blocked: Stuck on a flaky test — {reason}"
    ]
    app = make_app(seeded)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        await pilot.press("9", "z")  # zoomed, the title column has room for the reason
        await settle(app)
        row = [str(c) for c in app.query_one(TasksPane).get_row("T-stuck")]
        assert row[0] == f"Stuck on a flaky test — {reason}"
        await pilot.press("z", "enter")
        inspector = app.query_one(Inspector)
        await wait_for(lambda: inspector.entity is not None and inspector.entity.id == "T-stuck", what="inspected")
        assert inspector.entity is not None and inspector.entity.related["blocked"] == [{"reason": reason}]


async def test_badge_list_and_go_to(seeded: Runtime) -> None:
    await _block_a_task(seeded)
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        assert "⚑ 2 need you" in app.header.compose_text().plain
        await pilot.press("exclamation_mark")
        await wait_for(lambda: isinstance(app.screen, AttentionScreen), what="needs-you list")
        assert [i.item_id for i in app.screen.items] == ["H-1", "T-stuck"]  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, AttentionScreen), what="list closed")
        pane = app.query_one(ApprovalsPane)
        assert app.focused is pane and pane.selected_key() == "H-1"


async def test_gates_column_follows_the_last_validation(seeded: Runtime) -> None:
    from roundtable.services.views.overview import load_proposals
    from tests.tui.seed import REVISION

    async with seeded.db.read() as r:
        before = {row.proposal.id: row.gate_summary for row in await load_proposals(r)}
    assert before == {"P-1": "not validated", "P-0": "rejected"}
    async with seeded.db.write(tool="test.validated") as tx:
        payload = {"proposal_id": "P-1", "revision": REVISION, "applicable": False, "failed_gates": ["policy", "tests"]}
        await tx.append_event(RUN_ID, "patch.validated", payload)
    async with seeded.db.read() as r:
        after = {row.proposal.id: row.gate_summary for row in await load_proposals(r)}
    assert after["P-1"] == "failing: policy,tests"


async def test_help_has_a_legend_for_every_glyph(seeded: Runtime) -> None:
    from roundtable.tui.screens.help import LEGEND, HelpScreen

    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, HelpScreen), what="help")
        glyphs = {g for g, _ in LEGEND}
        assert {"⚑ N need you", "⚔", "✓ ready", "+N -M", "▶"} <= glyphs


@pytest.mark.parametrize(
    ("code", "reason", "said"),
    [
        (1, "exited", "exit 1: exited"),
        (-9, "revoked", "killed by SIGKILL: revoked"),
        (-1, "launch_failed", "exit -1: launch_failed"),
    ],
)
async def test_a_failed_session_says_how_it_ended(seeded: Runtime, code: int, reason: str, said: str) -> None:
    from roundtable.services.sessions import records as sessions
    from roundtable.tools.context import SUPERVISOR

    async with seeded.db.write() as tx:
        draft = sessions.SessionDraft(
            id="S-dead", agent_id="tester-1", run_id=RUN_ID, adapter="scripted", working_directory="/w"
        )
        await sessions.register(tx, draft)
    await seeded.call("session.record_exit", {"session_id": "S-dead", "exit_code": code, "reason": reason}, SUPERVISOR)
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    texts = [i.text for i in attention(overview) if i.item_id == "S-dead"]
    assert texts == [f"session failed: tester-1 — {said}"]


async def test_an_item_can_be_dismissed_and_a_retried_session_clears(seeded: Runtime) -> None:
    from roundtable.services.sessions import records as sessions
    from roundtable.tools.context import SUPERVISOR

    await _block_a_task(seeded)
    async with seeded.db.write() as tx:
        draft = sessions.SessionDraft(
            id="S-1", agent_id="tester-1", run_id=RUN_ID, adapter="scripted", working_directory="/w"
        )
        await sessions.register(tx, draft)
        await tx.update(
            "agent_sessions", {"id": "S-1"}, {"started_at": clock.format_ns(clock.parse("2026-01-15T09:00:00Z"))}
        )
    await seeded.call("session.record_exit", {"session_id": "S-1", "exit_code": 1, "reason": "exited"}, SUPERVISOR)
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        assert "⚑ 3 need you" in app.header.compose_text().plain
        await pilot.press("exclamation_mark")
        await wait_for(lambda: isinstance(app.screen, AttentionScreen), what="needs-you list")
        await pilot.press("end", "d")  # the failed session, last
        await wait_for(lambda: "session:S-1" in app.dismissed, what="dismissed")
        assert "Needs you (2)" in str(app.screen.query_one("#attention-box").border_title)
        await pilot.press("escape")
        assert "⚑ 2 need you" in app.header.compose_text().plain

    # A later session of the same agent that did not fail clears the failure by itself.
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    assert "S-1" in [i.item_id for i in attention(overview)]
    async with seeded.db.write() as tx:
        draft = sessions.SessionDraft(
            id="S-2", agent_id="tester-1", run_id=RUN_ID, adapter="scripted", working_directory="/w"
        )
        await sessions.register(tx, draft)
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    assert "S-1" not in [i.item_id for i in attention(overview)]


async def test_refused_and_held_launches_are_listed_until_a_session_starts(seeded: Runtime) -> None:
    from roundtable.services.sessions import records as sessions
    from roundtable.tools.context import DISPATCHER, SUPERVISOR

    refused = {"agent_id": "implementer-1", "task_id": "T-1", "run_id": RUN_ID, "launched_by": "dispatcher"}
    for reason in ("launch refused: no sandbox works for agent sessions here", "implementer-1 cannot run (codex)"):
        await seeded.call("session.record_refusal", {**refused, "reason": reason}, SUPERVISOR)
    held = {"reason": "run budget reached: 50k of 50k tokens", "scope": "run"}
    await seeded.call("autopilot.record", {"type": "autopilot.skipped", "payload": held, "run_id": RUN_ID}, DISPATCHER)
    async with seeded.db.read() as r:
        items = [i for i in attention(await load_overview(r, RUN_ID, seeded.config)) if i.kind == "launch"]
    # the newest refusal of the launch stands for it; the hold is listed on its own
    assert [i.text for i in items] == [
        "launch held: run budget reached: 50k of 50k tokens",
        "launch refused: implementer-1 for Add mul() — implementer-1 cannot run (codex)",
    ]
    assert items[1].pane == "agents" and items[1].row == "implementer-1" and items[0].pane == ""

    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("exclamation_mark")
        await wait_for(lambda: isinstance(app.screen, AttentionScreen), what="needs-you list")
        await pilot.press("end", "enter")  # the refusal, last: enter goes to the agent
        await wait_for(lambda: not isinstance(app.screen, AttentionScreen), what="list closed")
        agents = app.query_one("#agents")
        await wait_for(lambda: app.focused is agents, what="Agents pane focused")
        assert agents.selected_key() == "implementer-1"  # type: ignore[attr-defined]

    # A session of that agent starting since clears both (the hold clears with any session).
    async with seeded.db.write() as tx:
        draft = sessions.SessionDraft(
            id="S-after", agent_id="implementer-1", run_id=RUN_ID, adapter="scripted", working_directory="/w"
        )
        await sessions.register(tx, draft)
        await tx.update("agent_sessions", {"id": "S-after"}, {"started_at": clock.now()})
    async with seeded.db.read() as r:
        assert not [i for i in attention(await load_overview(r, RUN_ID, seeded.config)) if i.kind == "launch"]


async def test_a_session_waiting_for_the_operator_is_queued_until_a_later_one_starts(seeded: Runtime) -> None:
    from roundtable.services.sessions import records as sessions
    from roundtable.tools.context import SUPERVISOR

    async with seeded.db.write() as tx:
        for sid in ("S-ask", "S-perm"):
            draft = sessions.SessionDraft(
                id=sid,
                agent_id="tester-1" if sid == "S-ask" else "reviewer-1",
                run_id=RUN_ID,
                adapter="claude",
                working_directory="/w",
            )
            await sessions.register(tx, draft)
    said = {
        "S-ask": ("waiting_answer", "Shall I run the slow tests too?"),
        "S-perm": ("waiting_permission", "not allowed: Bash(command=make test)"),
    }
    for sid, (state, detail) in said.items():
        await seeded.call(
            "session.record_stream", {"session_id": sid, "attention": state, "detail": detail}, SUPERVISOR
        )
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    texts = {i.item_id: i.text for i in attention(overview) if i.kind == "session"}
    assert texts == {
        "S-ask": "session waits for your answer: tester-1 — Shall I run the slow tests too?",
        "S-perm": "session waits for a permission: reviewer-1 — not allowed: Bash(command=make test)",
    }
    app = make_app(seeded)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        assert "⚑ 3 need you" in app.header.compose_text().plain
        await pilot.press("exclamation_mark")
        await wait_for(lambda: isinstance(app.screen, AttentionScreen), what="needs-you list")
        listed = [i.item_id for i in app.screen.items]  # type: ignore[attr-defined]
        assert listed[0] == "H-1" and set(listed[1:]) == {"S-ask", "S-perm"}
        shown = app.screen.query_one("#attention-list").render_line(1).text  # the first session's row
        assert "session waits for" in shown
        await pilot.press("escape")

    # Resumed (a later session of that agent for the same work): no longer waiting.
    async with seeded.db.write() as tx:
        draft = sessions.SessionDraft(
            id="S-ask2", agent_id="tester-1", run_id=RUN_ID, adapter="claude", working_directory="/w"
        )
        await sessions.register(tx, draft)
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    assert [i.item_id for i in attention(overview) if i.kind == "session"] == ["S-perm"]


async def test_an_ended_runs_blocked_task_and_proposals_are_not_the_selected_runs(seeded: Runtime) -> None:
    """ "Needs you" lists the blocked tasks of active runs (and of no run), not an ended run's; the
    Proposals pane (and so `d`) lists the selected run's proposals, not every run's."""
    async with seeded.db.write(tool="test.ended") as tx:
        await tx.insert("runs", {"id": "RUN-ended", "goal": "g", "status": "blocked", "started_at": clock.now()})
        await tx.insert(
            "tasks",
            {
                "id": "T-old",
                "title": "Old",
                "body_md": "b",
                "status": "blocked",
                "run_id": "RUN-ended",
                "updated_at": clock.now(),
            },
        )
        await tx.insert(
            "proposals",
            {
                "id": "P-old",
                "task_id": "T-old",
                "agent_id": "implementer-1",
                "title": "old",
                "summary_md": "s",
                "patch_path": "",
                "status": "pending",
                "run_id": "RUN-ended",
            },
        )
    await _block_a_task(seeded)  # a blocked task of no run still needs the operator
    async with seeded.db.read() as r:
        overview = await load_overview(r, RUN_ID, seeded.config)
    assert [i.item_id for i in attention(overview) if i.kind == "task"] == ["T-stuck"]
    assert "P-old" not in {row.proposal.id for row in overview.proposals}
    async with seeded.db.read() as r:
        old = await load_overview(r, "RUN-ended", seeded.config)
    assert "P-old" in {row.proposal.id for row in old.proposals}
