"""The live transcript (`w`) at 80x24: a session's stream in words, following the log as the
supervisor appends to it, with whether the session needs the operator on its status line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.tui.screens.transcript import TranscriptScreen
from tests.tui.conftest import make_app, settle, wait_for
from tests.tui.seed import LIVE_SESSION, seed_live_session
from tests.tui.test_agents_pane import select_agent

pytestmark = pytest.mark.anyio

STREAMS = Path(__file__).parent.parent / "sessions" / "streams"


def shown(screen: TranscriptScreen) -> str:
    """What the view shows, its wrapped lines joined back."""
    return " ".join(strip.text.strip() for strip in screen.lines_view.lines)


def said(screen: TranscriptScreen) -> list[str]:
    return [e.line() for e in screen.transcript.entries]


async def test_the_transcript_streams_in_words_and_says_what_the_session_waits_for(seeded: Runtime) -> None:
    await seed_live_session(seeded)
    log = seeded.root / ".roundtable" / "logs" / "sessions" / f"{LIVE_SESSION}.log"
    stream = (STREAMS / "claude-code-2.1.197-refused-and-asks.jsonl").read_text(encoding="utf-8").splitlines(True)
    log.write_text("".join(stream[:3]), encoding="utf-8")  # started, read a file, got its result
    app = make_app(seeded)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app)
        await pilot.press("0")
        await select_agent(app, "implementer-1")
        await pilot.press("w")
        await wait_for(lambda: isinstance(app.screen, TranscriptScreen), what="transcript")
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        await wait_for(lambda: screen.shown == 3, what="the first entries")
        assert said(screen)[1:3] == ["→ Read(file_path=/etc/hostname)", "← Read: 1 vm 2"]
        assert "→ Read(file_path=/etc/hostname) ← Read: 1 vm 2" in shown(screen)
        note = screen.query_one("#log-note")
        assert "3 entries · working · following" in str(note.render())

        # What the harness prints next appears, as it streams.
        with log.open("a", encoding="utf-8") as out:
            out.writelines(stream[3:])
        await wait_for(lambda: screen.shown == 9, what="the rest of the stream")
        assert "→ Bash(command=ls /, description=list the root)" in said(screen)
        assert "agent I read the hostname." in shown(screen)
        await wait_for(lambda: "waiting for a permission" in str(note.render()), what="attention")
        assert "not allowed: Bash(command=ls /" in str(note.render())

        # Agent text is never markup, and escapes never reach the terminal.
        with log.open("a", encoding="utf-8") as out:
            out.write(
                '{"type":"assistant","message":{"content":[{"type":"text","text":"[bold]hi[/bold] \\u001b[2J"}]}}\n'
            )
        await wait_for(lambda: screen.shown == 10, what="a message with markup in it")
        assert said(screen)[-1] == "agent: [bold]hi[/bold]"
        assert shown(screen).endswith("agent [bold]hi[/bold]")
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, TranscriptScreen), what="closed")


async def test_m_in_the_transcript_sends_the_session_a_message_through_the_supervisor(
    seeded: Runtime, tmp_path: Path
) -> None:
    from roundtable.supervisor import start_supervisor
    from roundtable.tui.screens.prompt import PromptScreen
    from tests.tui.conftest import notifications

    await seed_live_session(seeded)
    supervisor = await start_supervisor(seeded, base_dir=tmp_path)
    try:
        app = make_app(seeded)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app)
            await pilot.press("0")
            await select_agent(app, "implementer-1")
            await pilot.press("w")
            await wait_for(lambda: isinstance(app.screen, TranscriptScreen), what="transcript")
            await pilot.press("m")
            await wait_for(lambda: isinstance(app.screen, PromptScreen), what="the message prompt")
            await pilot.press(*"go on", "enter")
            # The seeded session runs the scripted agent, which has no resume: the supervisor says so.
            await wait_for(
                lambda: any("adapter scripted has no resume" in n for n in notifications(app)), what="the refusal"
            )
            assert isinstance(app.screen, TranscriptScreen)
    finally:
        await supervisor.close()
