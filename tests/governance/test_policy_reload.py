"""A running owner follows POLICIES.ROUNDTABLE.md: a valid edit applies from the next call, an
invalid one is logged with its line and ignored (the previous rules stay in force)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.policy import POLICY_FILE

pytestmark = pytest.mark.anyio


def _edit(root: Path, old: str, new: str) -> None:
    path = root / POLICY_FILE
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


async def test_a_valid_edit_applies_and_an_invalid_one_is_ignored(
    runtime: Runtime, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert runtime._policy is not None
    runtime._policy.interval = 0.0  # look at the file on every read
    assert runtime.policy is not None and runtime.policy.profile("default").approvals_required == 2

    _edit(
        project,
        "    approvals_required: 2\n    blockers_allowed: 0\n    tests_required: true",
        "    approvals_required: 3\n    blockers_allowed: 0\n    tests_required: true",
    )
    assert runtime.policy.profile("default").approvals_required == 3
    # What the tools see is the same object.
    state = await runtime.call("proposal.list", {})
    assert state is not None and runtime.policy.profile("default").approvals_required == 3

    with caplog.at_level(logging.WARNING, logger="roundtable.policy"):
        _edit(project, "    approvals_required: 3", "    approvals_required: lots")
        assert runtime.policy.profile("default").approvals_required == 3  # the previous rules
        assert runtime.policy.profile("default").approvals_required == 3  # reported once
    warnings = [r.getMessage() for r in caplog.records if r.name == "roundtable.policy"]
    assert len(warnings) == 1 and "previous rules stay in force" in warnings[0]
    assert f"{POLICY_FILE}:" in warnings[0] and "approvals_required" in warnings[0]

    _edit(project, "    approvals_required: lots", "    approvals_required: 1")
    assert runtime.policy.profile("default").approvals_required == 1


async def test_the_file_is_looked_at_at_most_once_per_interval(runtime: Runtime, project: Path) -> None:
    assert runtime._policy is not None and runtime._policy.interval >= 1.0  # the default
    runtime._policy.interval = 3600.0
    before = runtime.policy
    _edit(
        project,
        "    approvals_required: 2\n    blockers_allowed: 0\n    tests_required: true",
        "    approvals_required: 5\n    blockers_allowed: 0\n    tests_required: true",
    )
    assert runtime.policy is before  # not yet: no look at the file before the interval passes
