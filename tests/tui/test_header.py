"""The header fits the terminal: at 80 columns the least important parts give way (the
addresses, the project name, the help hint) or take a shorter form, and what matters — the
⚑ count, READ-ONLY, the run and the Chair's state — is always whole; at 200 columns nothing
is cut."""

from __future__ import annotations

import pytest

from roundtable.runtime import Runtime
from roundtable.tui.widgets.header import OwnerInfo
from tests.tui.conftest import make_app, settle

pytestmark = pytest.mark.anyio

OWNER = OwnerInfo(
    project="Roundtable",
    http_url="http://127.0.0.1:7117/mcp",
    socket_path=".roundtable/mcp/roundtable.sock",
    note="read-only: no Chair, no listeners, nothing is written",
)


@pytest.mark.parametrize("width", [80, 100])
async def test_the_header_keeps_what_matters_at_80_columns(seeded: Runtime, width: int) -> None:
    app = make_app(seeded, read_only=True, owner_info=OWNER)
    async with app.run_test(size=(width, 24)):
        await settle(app)
        lines = app.header.compose_text().plain.split("\n")
        assert all(len(line) <= width for line in lines), lines
        assert not any(line.endswith("…") and "goal" not in line for line in lines), lines
        first, second, third = lines
        assert "READ-ONLY" in first and "⚑ 1" in first and "RUN-demo [active]" in first
        assert "Chair off" in second
        assert "live" in third and "? help" in third


async def test_the_header_shows_everything_at_200_columns(seeded: Runtime) -> None:
    app = make_app(seeded, read_only=True, owner_info=OWNER)
    async with app.run_test(size=(200, 50)):
        await settle(app)
        text = app.header.compose_text().plain
        for whole in (
            "READ-ONLY",
            "⚑ 1 need you (!)",
            "Roundtable",
            "goal: Improve the calculator",
            "claims 4 active · events 11",
            "HTTP http://127.0.0.1:7117/mcp",
            "socket .roundtable/mcp/roundtable.sock",
            OWNER.note,
            "? help · ctrl+p commands · tab panes · q quit",
        ):
            assert whole in text, whole
        assert "…" not in text
