"""Pilot: the Sessions pane lists sessions with their binding and capability lifetime (never the
token); `L` launches a session through a real supervisor and `K` revokes it, both confirmed in a
modal, refused read-only, and reported (not crashed) when no supervisor runs in the process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import Button, Select, Static

from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.sessions import records as sessions
from roundtable.supervisor import NOT_RUNNING, start_supervisor
from roundtable.tools.context import SUPERVISOR
from roundtable.tui import commands
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.screens.launch import LaunchScreen
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.sessions_pane import SessionsPane
from tests.tui.conftest import make_app, notifications, settle, wait_for
from tests.tui.flows import make_repo, scalar
from tests.tui.seed import RUN_ID, at

pytestmark = pytest.mark.anyio

TOKEN_HASH = "f" * 64


async def seed_sessions(rt: Runtime) -> None:
    """A live implementer session with a capability, a live reviewer one whose capability was
    revoked, and an ended tester session; times relative to the frozen clock."""
    async with rt.db.write() as tx:
        for sid, agent, adapter in (
            ("S-impl", "implementer-1", "scripted"),
            ("S-rev", "reviewer-1", "codex"),
            ("S-old", "tester-1", "scripted"),
        ):
            await sessions.register(
                tx,
                sessions.SessionDraft(
                    id=sid, agent_id=agent, run_id=RUN_ID, adapter=adapter, working_directory="/w", status="active"
                ),
            )
        await sessions.end(tx, "S-old")
        for sid, started, seen in (("S-impl", -300, -10), ("S-rev", -200, -20), ("S-old", -900, -800)):
            await tx.update("agent_sessions", {"id": sid}, {"started_at": at(started), "last_seen_at": at(seen)})
        for cap_id, sid, agent, role, proposal, expires, revoked in (
            ("C-impl", "S-impl", "implementer-1", "implementer", "", 600, ""),
            ("C-rev", "S-rev", "reviewer-1", "reviewer", "P-1", 600, at(-5)),
        ):
            await tx.insert(
                "session_capabilities",
                {
                    "id": cap_id,
                    "token_sha256": TOKEN_HASH[:-1] + cap_id[-1],
                    "session_id": sid,
                    "agent_id": agent,
                    "run_id": RUN_ID,
                    "role": role,
                    "task_id": "T-1",
                    "proposal_id": proposal or None,
                    "issued_at": at(-300),
                    "expires_at": at(expires),
                    "max_expires_at": at(3600),
                    "revoked_at": revoked or None,
                    "revoked_reason": "operator" if revoked else None,
                    "created_at": at(-300),
                },
            )


def cells(pane: SessionsPane, key: str) -> list[str]:
    return [str(c) for c in pane.get_row(key)]


async def select_session(app, key: str) -> SessionsPane:  # type: ignore[no-untyped-def]
    pane = app.query_one(SessionsPane)
    pane.focus()
    await wait_for(lambda: key in [r.value for r in pane.rows], what=f"{key} listed")
    for index, row_key in enumerate(pane.rows):
        if row_key.value == key:
            pane.move_cursor(row=index)
    assert pane.selected_key() == key
    return pane


async def test_pane_lists_sessions_live_first_without_tokens(seeded: Runtime) -> None:
    await seed_sessions(seeded)
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("4", "z")  # zoomed: room for every column
        await settle(app)
        pane = app.query_one(SessionsPane)
        assert [r.value for r in pane.rows] == ["S-rev", "S-impl", "S-old"]  # live (newest first), then ended
        assert pane.border_title == "Sessions (3)"
        impl = cells(pane, "S-impl")
        assert impl[:7] == ["implementer-1", "active", "implementer", "10m00s", "<1m", "T-1", "—"]
        assert impl[7:] == ["scripted", "5m", "S-impl"]
        assert cells(pane, "S-rev")[2:7] == ["reviewer", "revoked", "<1m", "T-1", "P-1"]
        old = cells(pane, "S-old")
        assert old[1] == "ended" and old[3] == "—"
        await pilot.press("z")
        assert not any(TOKEN_HASH[:20] in c for key in ("S-impl", "S-rev", "S-old") for c in cells(pane, key))

        await select_session(app, "S-impl")
        await pilot.press("enter")
        inspector = app.query_one(Inspector)
        await wait_for(lambda: inspector.entity is not None and inspector.entity.id == "S-impl", what="inspected")
        assert inspector.entity is not None
        caps = inspector.entity.related["capabilities"]
        assert [c["id"] for c in caps] == ["C-impl"] and "token_sha256" not in caps[0]
        assert "Inspector · session S-impl" in str(inspector.border_title)

        await pilot.press("slash")
        await pilot.press(*"reviewer", "enter")
        await wait_for(lambda: pane.row_count == 1, what="filtered")
        assert pane.selected_key() == "S-rev"
        pane.set_filter("")

        # A session registered elsewhere in the process shows up through the change bus alone.
        async with seeded.db.write() as tx:
            draft = sessions.SessionDraft(
                id="S-new", agent_id="security-1", run_id=RUN_ID, adapter="scripted", working_directory="/w"
            )
            await sessions.register(tx, draft)
        await wait_for(lambda: "S-new" in [r.value for r in pane.rows], what="bus refresh")
        assert pane.border_title == "Sessions (4)"


async def test_a_session_that_failed_shows_its_exit_in_the_sessions_and_agents_panes(seeded: Runtime) -> None:
    await seed_sessions(seeded)
    await seeded.call("session.record_exit", {"session_id": "S-impl", "exit_code": -9, "reason": "revoked"}, SUPERVISOR)
    await seeded.call(
        "session.record_exit", {"session_id": "S-rev", "exit_code": 2, "reason": "process_exited"}, SUPERVISOR
    )
    app = make_app(seeded)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(app)
        pane = app.query_one(SessionsPane)
        assert cells(pane, "S-impl")[1] == "failed · SIGKILL"
        assert cells(pane, "S-rev")[1] == "failed · exit 2"
        assert cells(pane, "S-old")[1] == "ended"  # ended before an exit was recorded: nothing to add
        await pilot.press("0")
        agents = app.query_one(AgentsPane)
        await wait_for(lambda: "implementer-1" in [r.value for r in agents.rows], what="agents listed")
        assert [str(c) for c in agents.get_row("implementer-1")][2] == "failed · SIGKILL"
        assert [str(c) for c in agents.get_row("reviewer-1")][2] == "failed · exit 2"


async def test_read_only_refuses_launch_and_revoke(seeded: Runtime) -> None:
    await seed_sessions(seeded)
    app = make_app(seeded, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await select_session(app, "S-impl")
        await pilot.press("L", "K")
        # refused aloud in a read-only console, the same way for both keys: no dialog, nothing written
        for command in ("launch_session", "revoke_session"):
            said = commands.read_only_refusal(commands.BY_ID[command])
            await wait_for(lambda s=said: s in notifications(app), what=f"{command} refused")
        assert not isinstance(app.screen, ConfirmScreen | LaunchScreen)
    assert await scalar(seeded, "SELECT revoked_at FROM session_capabilities WHERE id = 'C-impl'") is None


async def test_without_a_supervisor_launch_and_revoke_say_so(seeded: Runtime) -> None:
    await seed_sessions(seeded)
    app = make_app(seeded)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await pilot.press("L")
        await wait_for(lambda: any(NOT_RUNNING in n for n in notifications(app)), what="launch notice")
        assert not isinstance(app.screen, LaunchScreen)
        await select_session(app, "S-old")
        await pilot.press("K")
        await wait_for(lambda: any("holds no live capability" in n for n in notifications(app)), what="ended notice")
        await select_session(app, "S-impl")
        await pilot.press("K")
        await wait_for(lambda: sum(NOT_RUNNING in n for n in notifications(app)) == 2, what="revoke notice")
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.is_running
    assert await scalar(seeded, "SELECT revoked_at FROM session_capabilities WHERE id = 'C-impl'") is None


@pytest.fixture
async def rt(project: Path) -> AsyncIterator[Runtime]:
    make_repo(project)
    runtime = await Runtime.open(project)
    try:
        yield runtime
    finally:
        await runtime.close()


async def submit(pilot, app) -> None:  # type: ignore[no-untyped-def]
    """Press the form's Continue button (a click can miss while the form re-lays out under load)."""
    await pilot.pause()
    app.screen.query_one("#launch-yes", Button).press()
    await pilot.pause()


def fill(app, **values: str) -> None:  # type: ignore[no-untyped-def]
    for name, value in values.items():
        app.screen.query_one(f"#launch-{name}", Select).value = value


async def test_launch_and_revoke_through_the_supervisor(rt: Runtime) -> None:
    await sync_agents(rt)
    run = await runs.create_run(rt, "sessions from the console")
    task = await rt.call(
        "task.create",
        {"title": "Add mul", "body_md": "do it", "assigned_agent_id": "implementer-1", "readable_paths": ["src"]},
    )
    task_id = task["task"]["id"]
    supervisor = await start_supervisor(rt, revoke_grace=0.2)
    try:
        app = make_app(rt, run_id=run.id)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(app)
            # A refused launch (task not assigned to this agent): an error notice, nothing recorded.
            await pilot.press("L")
            await wait_for(lambda: isinstance(app.screen, LaunchScreen), what="launch form")
            # Pickers: the agents come from the config, the tasks are the open ones.
            form = app.screen
            agents = [v for _label, v in form.query_one("#launch-agent_id", Select)._options if v != Select.NULL]
            assert "implementer-1" in agents and "reviewer-1" in agents and "chair-1" not in agents
            await submit(pilot, app)  # nothing chosen: refused, the cursor goes to the agent
            assert "required: Agent, Task" in str(form.query_one("#launch-error", Static).render())
            assert form.query_one("#launch-agent_id", Select).has_focus
            fill(app, agent_id="implementer-2", task_id=task_id, adapter="scripted")
            await pilot.pause()
            assert form.values()["adapter"] == "scripted"  # an explicit choice is kept
            await submit(pilot, app)
            await wait_for(lambda: isinstance(app.screen, ConfirmScreen), timeout=15, what="launch confirmation")
            await pilot.press("y")
            await wait_for(
                lambda: any(n.title == "session.launch" and n.severity == "error" for n in app._notifications),
                what="launch error",
            )
            assert any("is not assigned to implementer-2" in n for n in notifications(app))
            assert await scalar(rt, "SELECT COUNT(*) FROM agent_sessions") == 0

            # Cancelling the confirmation starts nothing.
            await pilot.press("L")
            await wait_for(lambda: isinstance(app.screen, LaunchScreen), what="launch form")
            fill(app, agent_id="implementer-1", task_id=task_id, adapter="scripted")
            await submit(pilot, app)
            await wait_for(lambda: isinstance(app.screen, ConfirmScreen), timeout=15, what="launch confirmation")
            await pilot.press("n")
            await wait_for(lambda: any("Launch cancelled" in n for n in notifications(app)), what="cancel notice")
            assert await scalar(rt, "SELECT COUNT(*) FROM agent_sessions") == 0

            await pilot.press("L")
            await wait_for(lambda: isinstance(app.screen, LaunchScreen), what="launch form")
            fill(app, agent_id="implementer-1", task_id=task_id)
            await pilot.pause()
            configured = rt.config.agents.implementers.adapter
            # The adapter follows the chosen agent's configured one until the operator picks another.
            assert app.screen.query_one("#launch-adapter", Select).value == configured
            fill(app, adapter="scripted")
            await submit(pilot, app)
            await wait_for(lambda: isinstance(app.screen, ConfirmScreen), timeout=15, what="launch confirmation")
            await pilot.press("y")
            await wait_for(lambda: any(" launched: " in n for n in notifications(app)), what="launched notice")
            session_id = await scalar(rt, "SELECT id FROM agent_sessions")
            assert await scalar(rt, "SELECT adapter FROM agent_sessions WHERE id = ?", (session_id,)) == "scripted"
            launched = await scalar(
                rt, "SELECT COUNT(*) FROM events WHERE type = 'session.launched' AND actor_id = 'supervisor'"
            )
            assert launched == 1

            sessions_pane = app.query_one(SessionsPane)
            # The new session is put under the cursor, not left out of view.
            await wait_for(lambda: sessions_pane.selected_key() == session_id, what="new session selected")
            pane = await select_session(app, session_id)  # the bus refreshed the pane
            row = cells(pane, session_id)
            assert row[0] == "implementer-1" and row[1] in ("starting", "active")
            await pilot.press("K")
            await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="revoke confirmation")
            assert session_id in str(app.screen.title_text)  # type: ignore[attr-defined]
            await pilot.press("y")
            await wait_for(lambda: any(f"{session_id} revoked" in n for n in notifications(app)), what="revoked")
            assert await scalar(
                rt, "SELECT COUNT(*) FROM events WHERE type = 'capability.revoked' AND actor_id = 'supervisor'"
            )
            await asyncio.wait_for(supervisor.wait(session_id), 20)
            assert await scalar(rt, "SELECT ended_at FROM agent_sessions WHERE id = ?", (session_id,))
            assert (
                await scalar(rt, "SELECT revoked_reason FROM session_capabilities WHERE session_id = ?", (session_id,))
                == "operator"
            )
            pane.focus()
            await pilot.press("z")  # zoomed: the capability column has room
            await wait_for(lambda: "revoked" in cells(pane, session_id), what="pane shows the revocation")
            status = cells(pane, session_id)[1]
        assert status == "ended" or status.startswith("failed · "), status  # with its exit code or signal
    finally:
        await supervisor.close()
