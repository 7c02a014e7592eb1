"""The console's Agents pane shows the live work in each agent's workspace."""

from __future__ import annotations

import pytest

from roundtable.services.views.overview import load_overview
from roundtable.tui.widgets.agents_pane import AgentsPane
from roundtable.tui.workstats import WorkStats
from tests.helpers import AUTHOR
from tests.workspaces.conftest import Work

pytestmark = pytest.mark.anyio


async def test_agents_pane_shows_the_workspace_diffstat(work: Work) -> None:
    (work.path / "src" / "app.py").write_text("print('v2')\nprint('more')\n")
    stats = WorkStats(interval=60)
    work_stats = await stats.update(work.rt.root, work.rt.db)
    assert work_stats == {AUTHOR: "1 file +2 -1"}
    (work.path / "notes.md").write_text("changed\n")
    assert await stats.update(work.rt.root, work.rt.db) == work_stats  # not recomputed within the interval
    async with work.rt.db.read() as reader:
        overview = await load_overview(reader, "", work.rt.config, work=work_stats)
    [row] = [a for a in overview.agents if a.agent_id == AUTHOR]
    assert row.work == "1 file +2 -1"
    cells = AgentsPane.cells(row, 0)
    assert "· 1 file +2 -1" in str(cells[3])
