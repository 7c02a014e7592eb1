"""Console test helpers: a seeded runtime, an app factory, a wait-until-settled helper, and
snapshots stored under `snapshots/tui/` at the repository root (not `__snapshots__` beside the
tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot

from roundtable.runtime import Runtime
from tests.support.console import make_app, notifications, settle, wait_for
from tests.tui.seed import seed

__all__ = ["make_app", "notifications", "settle", "wait_for"]  # this directory's tests import them from here

SNAPSHOT_DIR = Path(__file__).resolve().parents[2] / "snapshots" / "tui"


class _RootSnapshots(pytest_textual_snapshot.SVGImageExtension):
    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        return str(SNAPSHOT_DIR / test_location.basename)


@pytest.fixture(autouse=True)
def _snapshots_at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # snap_compare looks the extension up by module global at call time.
    monkeypatch.setattr(pytest_textual_snapshot, "SVGImageExtension", _RootSnapshots)


@pytest.fixture
async def seeded(runtime: Runtime) -> Runtime:
    await seed(runtime)
    return runtime
