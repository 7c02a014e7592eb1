"""A running owner follows POLICIES.ROUNDTABLE.md through a file watch (watchfiles): a valid edit
applies from the next call, an invalid one is logged with its line and ignored (the previous
rules stay in force), an editor's save-by-rename is seen, and a runtime that does not watch
keeps the policy it opened with. Real edits on disk; every wait is on a condition with a deadline."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.policy.engine import POLICY_FILE

pytestmark = pytest.mark.anyio

DEADLINE_S = 20.0
APPROVALS = "    approvals_required: {}\n    blockers_allowed: 0\n    tests_required: true"


def _edit(root: Path, old: str, new: str, *, by_rename: bool = False) -> None:
    path = root / POLICY_FILE
    text = path.read_text(encoding="utf-8")
    assert old in text
    if by_rename:  # as editors save: a new file renamed over the old one
        tmp = root / f".{POLICY_FILE}.swp"
        tmp.write_text(text.replace(old, new, 1), encoding="utf-8")
        os.replace(tmp, path)
    else:
        path.write_text(text.replace(old, new, 1), encoding="utf-8")


async def _until(done: Callable[[], bool], path: Path, *, touch: bool = True) -> None:
    """Wait for `done()`. The watch starts asynchronously, so an edit made in its first moments
    may precede it: the file's mtime is bumped once a second until the change is seen (`touch`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    nudge = loop.time() + 1.0
    while not done():
        now = loop.time()
        assert now < deadline, f"the edit to {path.name} was not picked up within {DEADLINE_S} s"
        if touch and now >= nudge:
            os.utime(path)
            nudge = now + 1.0
        await asyncio.sleep(0.02)


def _approvals(runtime: Runtime) -> int:
    return runtime.policy.profile("default").approvals_required


async def test_a_valid_edit_applies_and_an_invalid_one_is_ignored(
    runtime: Runtime, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = project / POLICY_FILE
    runtime.watch_policy()
    assert _approvals(runtime) == 2

    _edit(project, APPROVALS.format(2), APPROVALS.format(3))
    await _until(lambda: _approvals(runtime) == 3, path)
    # What the tools see is the same object.
    state = await runtime.call("proposal.list", {})
    assert state is not None and _approvals(runtime) == 3

    def warnings() -> list[str]:
        return [
            r.getMessage() for r in caplog.records if r.name == "roundtable.policy" and r.levelno >= logging.WARNING
        ]

    with caplog.at_level(logging.INFO, logger="roundtable.policy"):
        _edit(project, "    approvals_required: 3", "    approvals_required: lots")
        await _until(lambda: bool(warnings()), path, touch=False)
        assert _approvals(runtime) == 3  # the previous rules
        assert "previous rules stay in force" in warnings()[0]
        assert f"{POLICY_FILE}:" in warnings()[0] and "approvals_required" in warnings()[0]

        # A later valid edit is the sync point: the watch has handled everything before it.
        _edit(project, "    approvals_required: lots", "    approvals_required: 1")
        await _until(lambda: _approvals(runtime) == 1, path, touch=False)
    assert len(warnings()) == 1  # the invalid file was reported once


async def test_a_save_by_rename_is_seen(runtime: Runtime, project: Path) -> None:
    runtime.watch_policy()
    _edit(project, APPROVALS.format(2), APPROVALS.format(4), by_rename=True)
    await _until(lambda: _approvals(runtime) == 4, project / POLICY_FILE)


async def test_a_runtime_that_does_not_watch_keeps_its_policy(runtime: Runtime, project: Path) -> None:
    watching = await Runtime.open(project)
    try:
        watching.watch_policy()
        before = runtime.policy
        _edit(project, APPROVALS.format(2), APPROVALS.format(5))
        await _until(lambda: _approvals(watching) == 5, project / POLICY_FILE)
        assert runtime.policy is before and _approvals(runtime) == 2
    finally:
        await watching.close()
    assert watching._policy_watch is None  # close stopped the watch


async def test_closing_stops_the_watch_promptly(project: Path) -> None:
    rt = await Runtime.open(project)
    rt.watch_policy()
    assert rt._policy_watch is not None
    task = rt._policy_watch[1]
    loop = asyncio.get_running_loop()
    started = loop.time()
    await rt.close()
    assert task.done() and loop.time() - started < 2.0
