"""`roundtable runs list|end|archive`, and a second `make run` resuming the demo's run instead
of starting a duplicate run, task and proposal (issue 16 item 6)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from roundtable import demo
from roundtable.agents.demo import _demo_task
from roundtable.cli import cli
from roundtable.runtime import Runtime
from roundtable.services import runs
from roundtable.tui.overview import load_overview

pytestmark = pytest.mark.anyio


async def _invoke(*args: str) -> Result:
    runner = CliRunner()
    return await anyio.to_thread.run_sync(lambda: runner.invoke(cli, list(args)))


async def test_list_end_and_archive(project: Path) -> None:
    empty = await _invoke("runs", "list", "--root", str(project))
    assert empty.exit_code == 0 and "no runs yet" in empty.output
    rt = await Runtime.open(project)
    try:
        old = await runs.create_run(rt, "old goal", run_id="RUN-old")
        await runs.create_run(rt, "new goal", run_id="RUN-new")
    finally:
        await rt.close()

    refused = await _invoke("runs", "archive", "RUN-old", "--root", str(project))
    assert refused.exit_code == 1 and "end it first" in refused.output
    ended = await _invoke("runs", "end", "RUN-old", "--status", "blocked", "--root", str(project))
    assert ended.exit_code == 0 and "RUN-old is blocked" in ended.output
    archived = await _invoke("runs", "archive", "RUN-old", "--root", str(project))
    assert archived.exit_code == 0 and "archived" in archived.output

    listed = await _invoke("runs", "list", "--root", str(project))
    assert "RUN-new" in listed.output and "RUN-old" not in listed.output
    everything = await _invoke("runs", "list", "--all", "--root", str(project))
    assert "RUN-old  [archived]" in everything.output

    rt = await Runtime.open(project)
    try:
        async with rt.db.read() as r:
            types = [
                row[0] for row in await r.fetchall("SELECT type FROM events WHERE run_id = ? ORDER BY id", (old.id,))
            ]
            overview = await load_overview(r, "RUN-new", rt.config)
        assert types == ["run.ended", "run.archived"]
        assert [run.id for run in overview.runs] == ["RUN-new"]  # archived runs leave the console
        await runs.end_run(rt, "RUN-new", "completed")
        resumed = await runs.resume_run(rt)
        assert resumed.id == "RUN-new"  # never an archived run
    finally:
        await rt.close()
    bad = await _invoke("runs", "end", "RUN-nope", "--root", str(project))
    assert bad.exit_code == 1 and "RUN-nope" in bad.output


async def test_a_second_demo_start_resumes_its_run_and_task(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    await anyio.to_thread.run_sync(demo.prepare, root)
    assert not demo._has_run(root, demo.DEMO_RUN)
    rt = await Runtime.open(root)
    try:
        await runs.create_run(rt, demo.DEMO_GOAL, run_id=demo.DEMO_RUN)
        first = await _demo_task(rt)
        again = await _demo_task(rt)
        async with rt.db.read() as r:
            assert await r.scalar("SELECT COUNT(*) FROM tasks") == 1
    finally:
        await rt.close()
    assert first == again
    assert demo._has_run(root, demo.DEMO_RUN)
