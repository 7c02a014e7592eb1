"""`roundtable.proc.run`, the one short-lived process runner: output, stdin, sinks, timeouts and
cancellation — and never a process left behind."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from roundtable import proc

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone once reaped, which /proc shows.
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


async def gone(pid: int, within: float = 2.0) -> bool:
    """Whether `pid` is dead within `within` seconds (a killed process is reaped a moment later)."""
    for _ in range(int(within / 0.02)):
        if not alive(pid):
            return True
        await asyncio.sleep(0.02)
    return not alive(pid)


async def test_captures_output_and_feeds_stdin() -> None:
    done = await proc.run(["sh", "-c", "cat; echo err >&2; exit 3"], stdin=b"hello", timeout=10)
    assert (done.code, done.out, done.err, done.timed_out) == (3, b"hello", b"err\n", False)


async def test_merged_stderr_and_a_sink() -> None:
    chunks: list[bytes] = []
    done = await proc.run(["sh", "-c", "echo out; echo err >&2"], timeout=10, sink=chunks.append)
    assert done.code == 0 and done.out == b""
    assert b"".join(chunks).split() == [b"out", b"err"]


async def test_a_program_that_cannot_start_raises_oserror() -> None:
    with pytest.raises(OSError):
        await proc.run(["/nonexistent/program"], timeout=5)


async def test_timeout_kills_and_reaps_the_child() -> None:
    pids: list[int] = []
    done = await proc.run(["sleep", "30"], timeout=0.3, on_start=pids.append)
    assert done.timed_out and pids and not alive(pids[0])


async def test_cancellation_kills_and_reaps_the_child() -> None:
    pids: list[int] = []
    started = asyncio.Event()

    def on_start(pid: int) -> None:
        pids.append(pid)
        started.set()

    task = asyncio.create_task(proc.run(["sleep", "30"], timeout=60, on_start=on_start))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(pids[0])


async def test_a_group_takes_background_children_with_it(tmp_path: Path) -> None:
    marker = tmp_path / "bg.pid"
    # The background child's output goes elsewhere, so the run ends when `sh` does (no timeout):
    # the group is killed on the ordinary exit path.
    script = f"sleep 30 >/dev/null 2>&1 & echo $! > {marker}"
    done = await proc.run(["sh", "-c", script], timeout=10, new_group=True)
    assert done.code == 0 and not done.timed_out
    assert await gone(int(marker.read_text()))


async def test_a_timed_out_group_takes_background_children_with_it(tmp_path: Path) -> None:
    marker = tmp_path / "bg.pid"
    # The background child holds stdout open, so the run lasts until its timeout.
    done = await proc.run(["sh", "-c", f"sleep 30 & echo $! > {marker}"], timeout=0.5, new_group=True)
    assert done.timed_out
    assert await gone(int(marker.read_text()))
