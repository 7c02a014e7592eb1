"""How `run --headless --autopilot` ends: a run whose only task the autopilot blocked exits 3
whatever the Chair's timing, and SIGTERM (a CI timeout) or SIGINT ends its sessions, records
them, prints one line and exits 128+N. Real processes, real SQLite."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination.runs import create_run
from roundtable.tools.context import OPERATOR
from tests.autopilot.helpers import demo_project, implementers_run

pytestmark = pytest.mark.anyio

HANGS = "import time; print('working', flush=True); time.sleep(600)"


def _rows(root: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{root / '.roundtable' / 'roundtable.db'}?mode=ro", uri=True, timeout=30)
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()


async def test_a_run_whose_only_task_ended_blocked_exits_3_whatever_the_chair_interval(project: Path) -> None:
    """The Chair ticks every 30 s here, so the table goes quiet long before it would settle the
    run: the run is settled when it does (it used to end `idle`, exit 0, when the quiet came first)."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"}
    if shutil.which("claude", path=env["PATH"]):
        pytest.skip("claude is installed here")
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "roundtable", "run", "--root", str(project), "--headless", "--autopilot"),
        *("--goal", "Do something", "--interval", "30s"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    text = out.decode()
    assert process.returncode == 3, text
    assert "is blocked after" in text and "(all_remaining_tasks_blocked)" in text


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_ends_the_sessions_records_them_and_exits_non_zero(tmp_path: Path, sig: signal.Signals) -> None:
    root = await demo_project(tmp_path / "p", max_attempts=1, retry_backoff_seconds=0.1)
    implementers_run(root, "hanging", HANGS)
    rt = await Runtime.open(root)
    try:
        run = await create_run(rt, "")
        await rt.call(
            "task.create",
            {"title": "Add mul()", "body_md": "Add mul() to calc/ops.py.", "readable_paths": ["calc"]},
            OPERATOR.with_run(run.id),
        )
    finally:
        await rt.close()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "roundtable", "run", "--root", str(root), "--headless", "--autopilot"),
        *("--resume", "--run", run.id, "--interval", "0.2s"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not _rows(root, "SELECT id FROM agent_sessions WHERE status = 'active'"):
            assert process.returncode is None and time.monotonic() < deadline, "no session became active"
            await asyncio.sleep(0.2)
        process.send_signal(sig)
        out, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 128 + int(sig), out.decode() + err.decode()
    said = [line for line in err.decode().splitlines() if f"stopped by {sig.name}" in line]
    assert said == [
        f"roundtable: run {run.id} stopped by {sig.name}: 1 session(s) ended and recorded; the run stays active "
        f"(resume it with `roundtable run --headless --resume --run {run.id}`)"
    ], err.decode()
    sessions = _rows(root, "SELECT id, status FROM agent_sessions")
    assert len(sessions) == 1 and sessions[0][1] == "failed"  # killed, recorded: not `active` for ever
    exited = _rows(root, "SELECT payload_json FROM events WHERE type = 'session.exited'")
    assert len(exited) == 1 and str(sessions[0][0]) in str(exited[0][0])
    assert _rows(root, f"SELECT status FROM runs WHERE id = '{run.id}'") == [("active",)]
