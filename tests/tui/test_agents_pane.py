"""The Agents pane (who is doing what, live), the session log viewer behind `l`, and the
autopilot: `P` toggles the owner's dispatcher and the header badge says AUTO, MANUAL or
STOPPED: reason. A real supervisor and dispatcher, a real database and real log files."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from roundtable.autopilot import Dispatcher, DispatcherStatus
from roundtable.runtime import Runtime
from roundtable.services.sessions import records as sessions
from roundtable.services.views import overview
from roundtable.services.views.models import Activity
from roundtable.services.views.overview import ActivityLog
from roundtable.supervisor import start_supervisor
from roundtable.tools.context import SUPERVISOR
from roundtable.tui import commands
from roundtable.tui.autopilot import badge
from roundtable.tui.flows.chair import NO_CHAIR, NO_DISPATCHER
from roundtable.tui.screens.session_log import SessionLogScreen
from roundtable.tui.session_log import log_path, read_chunk
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.widgets.inspector import Inspector
from roundtable.tui.widgets.sessions_pane import SessionsPane
from tests.tui.conftest import make_app, notifications, settle, wait_for
from tests.tui.flows import scalar
from tests.tui.seed import FAILED_SESSION, LIVE_SESSION, LOG_LINES, RUN_ID, at, seed_live_session

pytestmark = pytest.mark.anyio


def cells(pane: AgentsPane, key: str) -> list[str]:
    return [str(c) for c in pane.get_row(key)]


async def select_agent(app, agent_id: str) -> AgentsPane:  # type: ignore[no-untyped-def]
    pane = app.query_one(AgentsPane)
    pane.focus()
    await wait_for(lambda: agent_id in [r.value for r in pane.rows], what=f"{agent_id} listed")
    for index, row_key in enumerate(pane.rows):
        if row_key.value == agent_id:
            pane.move_cursor(row=index)
    assert pane.selected_key() == agent_id
    return pane


async def test_agents_pane_shows_who_is_doing_what_and_follows_the_bus(seeded: Runtime) -> None:
    await seed_live_session(seeded)
    spent = {"input_tokens": 6180, "cached_input_tokens": 2400, "output_tokens": 1020, "cost_usd": 0.027495}
    await seeded.call("session.record_usage", {"session_id": LIVE_SESSION, **spent}, SUPERVISOR)
    app = make_app(seeded)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        await pilot.press("0", "z")  # zoomed: room for every column
        await settle(app)
        pane = app.query_one(AgentsPane)
        keys = [r.value for r in pane.rows]
        assert keys[0] == "implementer-1", "an agent at work comes first"
        assert len(keys) == 8 and pane.border_title == "Agents (8)"
        # agent, role, session, task, turn, failed sessions, spend, last action (how long ago first)
        assert cells(pane, "implementer-1") == [
            "implementer-1",
            "Implementer",
            "active",
            "Add mul()",  # the task it works on, by title
            "scheduled",
            "0",
            "7.2k tokens · $0.03",
            "  42s claim.granted",
        ]
        assert "spent 7.2k tokens · $0.03" in str(app.header.compose_text())
        assert cells(pane, "tester-1")[2] == "failed · exit 1" and cells(pane, "tester-1")[5] == "1"
        assert cells(pane, "reviewer-1")[4] == "requested"
        assert cells(pane, "security-1")[2:] == ["idle", "—", "—", "0", "—", "    —"]

        # enter inspects the agent with its sessions
        await select_agent(app, "implementer-1")
        await pilot.press("enter")
        inspector = app.query_one(Inspector)
        await wait_for(lambda: inspector.entity is not None and inspector.entity.kind == "agent", what="inspected")
        assert inspector.entity is not None and inspector.entity.id == "implementer-1"
        assert [s["id"] for s in inspector.entity.related["sessions"]] == [LIVE_SESSION]
        await pilot.press("0")  # back to the (zoomed) Agents pane
        await settle(app)

        # a session starting for security-1 and a vote it casts show up through the change bus alone
        async with seeded.db.write() as tx:
            draft = sessions.SessionDraft(
                id="S-sec", agent_id="security-1", run_id=RUN_ID, adapter="scripted", working_directory="/w"
            )
            await sessions.register(tx, draft)
            await tx.execute(
                "INSERT INTO events (run_id, type, actor_id, payload_json, created_at, principal) VALUES (?, ?, ?, ?, ?, ?)",
                (RUN_ID, "vote.cast", "security-1", "{}", at(-3), "agent:security-1"),
            )
        await wait_for(lambda: cells(pane, "security-1")[2] == "active", what="bus refresh")
        assert cells(pane, "security-1")[7] == "   3s reviewed and voted"
        assert [r.value for r in pane.rows][:2] == ["implementer-1", "security-1"]


async def test_log_viewer_follows_the_log_and_says_when_there_is_none(seeded: Runtime) -> None:
    await seed_live_session(seeded)
    path = log_path(seeded.root, LIVE_SESSION)
    assert path is not None
    app = make_app(seeded)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app)
        await select_agent(app, "implementer-1")
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, SessionLogScreen), what="log viewer")
        screen = app.screen
        assert isinstance(screen, SessionLogScreen)
        log = screen
        await wait_for(lambda: list(log.lines) == list(LOG_LINES), what="the log's lines")
        assert "[REDACTED]" in log.lines[2]
        note = str(screen.query_one("#log-note").render())
        assert f".roundtable/logs/sessions/{LIVE_SESSION}.log" in note and "4 lines" in note

        # lines appended by the supervisor appear; a line still being written waits for its newline
        with path.open("a", encoding="utf-8") as fh:
            fh.write("[scripted] proposal.create P-2\n[scripted] half a li")
        await wait_for(lambda: len(log.lines) == 5, what="appended line")
        assert log.lines[-1] == "[scripted] proposal.create P-2"
        with path.open("a", encoding="utf-8") as fh:
            fh.write("ne\n")
        await wait_for(lambda: len(log.lines) == 6, what="completed line")
        assert log.lines[-1] == "[scripted] half a line"
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, SessionLogScreen), what="viewer closed")

        # an agent whose ended session left no log: the viewer says so, and how it ended
        await select_agent(app, "tester-1")
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, SessionLogScreen), what="log viewer")
        note_widget = app.screen.query_one("#log-note")
        await wait_for(lambda: "No log for" in str(note_widget.render()), what="no-log message")
        assert FAILED_SESSION in str(note_widget.render())
        assert "it ended (exit 1: process_exited)" in str(note_widget.render())  # not "waiting for it'
        assert isinstance(app.screen, SessionLogScreen) and not app.screen.lines
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, SessionLogScreen), what="viewer closed")

        # an agent that never had a session: a notice, no viewer
        await select_agent(app, "architect-1")
        await pilot.press("l")
        await wait_for(lambda: any("architect-1 has no session yet" in n for n in notifications(app)), what="notice")
        assert not isinstance(app.screen, SessionLogScreen)


def test_first_read_of_a_long_log_starts_on_a_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "big.log"
    line = "x" * 99 + "\n"
    path.write_text(line * 5000, encoding="utf-8")  # 500 kB: more than the first read shows
    chunk = read_chunk(path, 0)
    assert chunk.exists and chunk.skipped > 0 and chunk.skipped % 100 == 0
    assert all(text == "x" * 99 for text in chunk.lines)
    assert chunk.next_offset == path.stat().st_size
    assert read_chunk(path, chunk.next_offset).lines == []
    path.write_text("short\n", encoding="utf-8")  # rewritten: reading starts over
    again = read_chunk(path, chunk.next_offset)
    assert again.restarted and again.lines == ["short"]
    assert not read_chunk(tmp_path / "missing.log", 0).exists
    assert log_path(tmp_path, "../../etc/passwd") is None and log_path(tmp_path, ".hidden") is None


@pytest.fixture
async def dispatcher(seeded: Runtime) -> AsyncIterator[Dispatcher]:
    supervisor = await start_supervisor(seeded)
    try:
        yield Dispatcher(seeded, supervisor, enabled=False)
    finally:
        await supervisor.close()


async def test_autopilot_toggle_and_badge(seeded: Runtime, dispatcher: Dispatcher) -> None:
    app = make_app(seeded, dispatcher=dispatcher)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        header = app.header.compose_text().plain
        assert " MANUAL " in header.splitlines()[0] and "Autopilot 0 sessions" in header
        await pilot.press("P")
        await wait_for(lambda: dispatcher.enabled, what="autopilot on")
        await wait_for(lambda: " AUTO " in app.header.compose_text().plain, what="AUTO badge")
        assert any("Autopilot AUTO" in n for n in notifications(app))
        await pilot.press("P")
        await wait_for(lambda: not dispatcher.enabled, what="autopilot off")
        await wait_for(lambda: " MANUAL " in app.header.compose_text().plain, what="MANUAL badge")
    # each switch is an audited operator operation
    recorded = await scalar(
        seeded,
        "SELECT group_concat(type || ':' || principal, ' ') FROM events WHERE type LIKE 'autopilot.%' ORDER BY id",
    )
    assert recorded == "autopilot.enabled:operator autopilot.disabled:operator"


@pytest.mark.parametrize(
    ("status", "label"),
    [
        (DispatcherStatus(True, "auto", 2, 0, ""), "AUTO"),
        (DispatcherStatus(False, "manual", 0, 0, ""), "MANUAL"),
        (DispatcherStatus(False, "manual", 0, 3, "3 consecutive failures"), "STOPPED: 3 consecutive failures"),
    ],
)
def test_badge_labels(status: DispatcherStatus, label: str) -> None:
    assert badge(status)[0] == label


async def test_autopilot_refused_read_only_and_without_an_owner(seeded: Runtime, dispatcher: Dispatcher) -> None:
    app = make_app(seeded, dispatcher=dispatcher, read_only=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        await pilot.press("P")
        refusal = commands.read_only_refusal(commands.BY_ID["autopilot"])
        await wait_for(lambda: refusal in notifications(app), what="read-only refusal")
        assert not dispatcher.enabled
    app = make_app(seeded)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        assert "MANUAL" not in app.header.compose_text().plain  # no dispatcher, no badge
        await pilot.press("P")
        await wait_for(lambda: NO_DISPATCHER in notifications(app), what="no-dispatcher notice")
        # an app built on a bare runtime (no owner) has no Chair either: t and p say so
        await pilot.press("t", "p")
        await wait_for(lambda: notifications(app).count(NO_CHAIR) == 2, what="no-Chair notices")
    assert await scalar(seeded, "SELECT COUNT(*) FROM events WHERE type LIKE 'autopilot.%'") == 0


async def test_activity_log_reads_only_new_events_and_never_too_many(
    seeded: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = ActivityLog()
    async with seeded.db.read() as r:
        latest = await log.update(r)
    assert latest["implementer-1"].event_type == "agent.turn_requested"
    first = log.after
    async with seeded.db.write() as tx:
        await tx.execute(
            "INSERT INTO events (run_id, type, actor_id, payload_json, principal) VALUES (?, ?, ?, ?, ?)",
            (RUN_ID, "proposal.created", "", "{}", "agent:implementer-2"),  # the principal names the agent
        )
    async with seeded.db.read() as r:
        latest = await log.update(r)
    assert log.after == first + 1 and latest["implementer-2"].event_type == "proposal.created"

    monkeypatch.setattr(overview, "ACTIVITY_LOOKBACK", 2)
    fresh = ActivityLog()
    async with seeded.db.read() as r:
        latest = await fresh.update(r)
    assert set(latest) == {"reviewer-1", "implementer-2"}  # only the last two events were read


async def test_l_on_the_sessions_pane_opens_that_sessions_log(seeded: Runtime) -> None:
    await seed_live_session(seeded)
    app = make_app(seeded)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        pane = app.query_one(SessionsPane)
        pane.focus()
        await wait_for(lambda: pane.row_count == 2, what="sessions listed")
        assert pane.selected_key() == LIVE_SESSION
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, SessionLogScreen), what="log viewer")
        assert isinstance(app.screen, SessionLogScreen) and app.screen.session.id == LIVE_SESSION
        log = app.screen
        await wait_for(lambda: len(log.lines) == len(LOG_LINES), what="the log's lines")


async def test_the_log_viewer_wraps_long_lines_and_says_how_a_killed_session_ended(seeded: Runtime) -> None:
    from textual.widgets import RichLog

    await seed_live_session(seeded)
    path = log_path(seeded.root, LIVE_SESSION)
    assert path is not None
    long_line = "[scripted] " + "x" * 150 + " END"
    path.write_text(long_line + "\n", encoding="utf-8")
    app = make_app(seeded)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        await pilot.press("0")
        await select_agent(app, "implementer-1")
        await pilot.press("l")
        await wait_for(lambda: isinstance(app.screen, SessionLogScreen), what="log viewer")
        screen = app.screen
        assert isinstance(screen, SessionLogScreen)
        view = screen.query_one(RichLog)
        await wait_for(lambda: len(view.lines) >= 2, what="the long line wrapped")
        shown = [strip.text.rstrip() for strip in view.lines]
        assert all(len(line) <= 80 for line in shown) and shown[-1].endswith("END")  # nothing cut off

        # the supervisor stops it: the viewer says it was killed, by which signal, not "waiting"
        await seeded.call(
            "session.record_exit", {"session_id": LIVE_SESSION, "exit_code": -15, "reason": "revoked"}, SUPERVISOR
        )
        note = screen.query_one("#log-note")
        said = "the session ended: killed by SIGTERM: revoked"
        await wait_for(lambda: said in str(note.render()), what="the end in the note")
        await wait_for(
            lambda: "— session ended: killed by SIGTERM: revoked —" in [s.text.rstrip() for s in view.lines],
            what="the end line",
        )
        assert "failed" in str(screen.query_one("#log-box").border_title)


@pytest.mark.parametrize(
    ("activity", "said"),
    [
        (Activity("claim.created", "", path="calc/ops.py", mode="write"), "editing calc/ops.py"),
        (Activity("claim.created", "", path="calc/ops.py", mode="read"), "reading calc/ops.py"),
        (Activity("proposal.revised", "", revision_number=2), "proposed r2, waiting for review"),
        (Activity("test.started", ""), "running tests"),
        (Activity("agent.turn_requested", ""), "waiting for its turn"),
        (Activity("memory.recorded", ""), "memory.recorded"),
    ],
)
def test_what_an_agent_is_doing_in_words(activity: Activity, said: str) -> None:
    assert activity.doing() == said
