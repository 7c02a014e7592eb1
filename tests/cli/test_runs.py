"""`roundtable runs list|end|archive`, and a second `make run` resuming the demo's run instead
of starting a duplicate run, task and proposal."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from roundtable.cli import cli
from roundtable.demo import workspace as demo
from roundtable.demo.team import _demo_task
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.services.views.overview import load_overview

pytestmark = pytest.mark.anyio


async def _invoke(*args: str) -> Result:
    runner = CliRunner()
    return await anyio.to_thread.run_sync(lambda: runner.invoke(cli, list(args)))


async def test_create_and_resume_from_the_cli(project: Path) -> None:
    blank = await _invoke("runs", "create", "--goal", " ", "--root", str(project))
    assert blank.exit_code == 2 and "must not be blank" in blank.output
    made = await _invoke("runs", "create", "--goal", "Ship it", "--run", "RUN-cli", "--root", str(project))
    assert made.exit_code == 0 and "created run RUN-cli (goal: Ship it)" in made.output
    again = await _invoke("runs", "create", "--goal", "Ship it", "--run", "RUN-cli", "--root", str(project))
    assert again.exit_code == 1 and "RUN-cli already exists" in again.output
    assert (await _invoke("runs", "end", "RUN-cli", "--root", str(project))).exit_code == 0
    resumed = await _invoke("runs", "resume", "RUN-cli", "--json", "--root", str(project))
    assert resumed.exit_code == 0 and '"status": "active"' in resumed.output
    rt = await Runtime.open(project)
    try:
        async with rt.db.read() as r:
            rows = await r.fetchall(
                "SELECT type, principal, transport FROM events WHERE run_id = 'RUN-cli' ORDER BY id"
            )
    finally:
        await rt.close()
    assert [tuple(row) for row in rows] == [
        ("run.created", "operator", "cli"),
        ("run.ended", "operator", "cli"),
        ("run.resumed", "operator", "cli"),
    ]


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
        assert types == ["run.ended", "run.archived"]  # seeded without the operation's run.created
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
    assert not demo.has_run(root, demo.DEMO_RUN)
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
    assert demo.has_run(root, demo.DEMO_RUN)
