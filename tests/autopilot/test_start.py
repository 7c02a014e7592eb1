"""`roundtable start --autopilot`: the long-running owner hosts the dispatcher; its log says whom
it launched and why (a real `start` process on the demo project, its run created beforehand —
`start` never creates runs)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.autopilot.helpers import demo_project, edit_config
from tests.support.owners import free_port

pytestmark = pytest.mark.anyio
ROUNDTABLE = [sys.executable, "-m", "roundtable"]


async def test_start_with_the_autopilot_launches_and_logs_why(tmp_path: Path) -> None:
    root = await demo_project(tmp_path / "p")
    port = free_port()
    sock = Path(f"/tmp/rt-ap-{os.getpid()}-{port}.sock")

    def listeners(data: dict) -> None:  # type: ignore[type-arg]
        data["mcp"]["http_address"] = f"127.0.0.1:{port}"
        data["mcp"]["socket_path"] = str(sock)

    edit_config(root, listeners)
    seed = await asyncio.create_subprocess_exec(
        *ROUNDTABLE,
        "run",
        "--root",
        str(root),
        "--headless",
        "--run",
        "RUN-start",
        "--goal",
        "Improve the calculator",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert await seed.wait() == 0
    proc = await asyncio.create_subprocess_exec(
        *ROUNDTABLE,
        "start",
        "--root",
        str(root),
        "--autopilot",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while not any("autopilot launched implementer-1" in line for line in lines):
            assert time.monotonic() < deadline, "\n".join(lines)
            raw = await asyncio.wait_for(proc.stdout.readline(), max(0.1, deadline - time.monotonic()))
            assert raw, "\n".join(lines)
            lines.append(raw.decode().rstrip())
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = await asyncio.wait_for(proc.communicate(), 60)
        lines += rest.decode().splitlines()
    text = "\n".join(lines)
    assert proc.returncode == 0, text
    assert "roundtable coordinator ready" in text and "autopilot=on" in text
    assert "autopilot launched architect-1 for task" in text and "(plan_goal, attempt 1)" in text
    assert "(task_assigned, attempt 1)" in text
    assert "roundtable coordinator stopped" in text
