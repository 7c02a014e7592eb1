"""The failpoint hook itself: production processes pass every point; a hook sees only the known
points and is removed when its block ends."""

from __future__ import annotations

import pytest

from roundtable.services.applying import failpoints
from tests.faults.failpoints import FailAt


def test_default_hook_passes_every_point() -> None:
    for point in failpoints.POINTS:
        failpoints.reached(point)  # nothing installed: nothing happens


def test_installed_hook_fires_at_its_point_only_and_is_removed() -> None:
    hook = FailAt(failpoints.APPLY_FILES)
    with failpoints.installed(hook):
        failpoints.reached(failpoints.APPLY_INTENT)
        with pytest.raises(OSError, match="injected failure at apply:files"):
            failpoints.reached(failpoints.APPLY_FILES)
    failpoints.reached(failpoints.APPLY_FILES)
    assert hook.fired == 1


def test_unknown_points_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown failpoint 'apply:intnet'"):
        failpoints.reached("apply:intnet")
    with pytest.raises(ValueError, match="unknown failpoint"):
        FailAt("apply:intnet")
