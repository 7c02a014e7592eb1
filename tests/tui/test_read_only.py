"""`roundtable run --read-only` is read-only: it opens the existing run, runs no Chair, takes no
lock, and writes nothing — the database's contents are identical before and after a session in
which the operator presses every key."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable.cli import cli
from roundtable.errors import NotFound, StoreError
from roundtable.runtime import Runtime
from roundtable.services.coordination import runs
from roundtable.tui import commands
from roundtable.tui.launch import existing_run
from tests.tui.conftest import make_app, settle
from tests.tui.flows import make_repo, ready_proposal, request_approval


def _dump(db_path: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@pytest.mark.anyio
async def test_a_read_only_console_writes_nothing(project: Path) -> None:
    make_repo(project)
    rt = await Runtime.open(project)
    try:
        older = await runs.create_run(rt, "older run")
        await runs.end_run(rt, older.id, "completed")
        current = await runs.create_run(rt, "ship v2")
        proposal = await ready_proposal(rt)
        await request_approval(rt, proposal["id"])
        db_path = Path(rt.db.path)
    finally:
        await rt.close()
    before = _dump(db_path)

    ro = await Runtime.open(project, read_only=True)
    try:
        assert await existing_run(ro) == current.id  # the existing active run, none created
        app = make_app(ro, run_id=current.id, read_only=True)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(app)
            keys = [c.key for c in commands.COMMANDS if c.bind and c.mutating and "," not in c.key]
            for key in keys:
                await pilot.press(key)
                await pilot.pause(0.05)
                await pilot.press("escape")
            await pilot.pause(0.2)
            assert app.is_running
        with pytest.raises(StoreError, match="read-only"):
            async with ro.db.write(tool="test.write"):
                pass
        with pytest.raises(Exception, match="read-only"):
            await ro.call("task.create", {"title": "t", "body_md": "b"})
    finally:
        await ro.close()
    assert _dump(db_path) == before


@pytest.mark.anyio
async def test_read_only_picks_an_existing_run_and_never_creates_one(project: Path) -> None:
    rt = await Runtime.open(project)
    await rt.close()  # the database exists, with no run in it
    ro = await Runtime.open(project, read_only=True)
    try:
        assert await existing_run(ro) == ""
        with pytest.raises(NotFound, match="RUN-nope"):
            await existing_run(ro, "RUN-nope")
    finally:
        await ro.close()
    ro = await Runtime.open(project, read_only=True)
    try:
        async with ro.db.read() as reader:
            assert await reader.scalar("SELECT COUNT(*) FROM runs") == 0
    finally:
        await ro.close()


@pytest.mark.anyio
async def test_read_only_never_creates_a_database(project: Path) -> None:
    db = project / ".roundtable" / "roundtable.db"
    for leftover in project.joinpath(".roundtable").glob("roundtable.db*"):
        leftover.unlink()  # init created it; a read-only console must not bring it back
    with pytest.raises(StoreError, match="no database"):
        await Runtime.open(project, read_only=True)
    assert not db.exists()


@pytest.mark.parametrize("flag", [["--headless"], ["--demo"], ["--goal", "x"]])
def test_read_only_refuses_flags_that_would_write(project: Path, flag: list[str]) -> None:
    result = CliRunner().invoke(cli, ["run", "--root", str(project), "--read-only", *flag])
    assert result.exit_code == 2
    assert "--read-only" in result.output and "writes nothing" in result.output


@pytest.mark.anyio
async def test_a_second_console_points_to_read_only(project: Path) -> None:
    """While one console owns the project, a second is refused with the way to watch it."""
    from roundtable.errors import LockError
    from roundtable.owner import acquire_lock
    from roundtable.tui.launch import console_main

    with acquire_lock(project), pytest.raises(LockError) as refused:
        await console_main(root=project, goal="", resume=True, read_only=False, demo=False)
    text = str(refused.value)
    assert "already owned by another process" in text
    assert f"roundtable run --root {project} --read-only" in text
