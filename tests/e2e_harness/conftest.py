"""Fixtures of the e2e-harness tier: the harnesses from npm, a private HOME, a short socket dir.

The tier runs only when selected (`make e2e-harness`, i.e. `pytest -m e2e_harness tests/e2e_harness`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.npm_install import install_harnesses


@pytest.fixture(scope="module")
def harness_bin() -> Iterator[Path]:
    """`node_modules/.bin` of an install of both CLIs.

    Not below /tmp: the supervisor's bubblewrap sandbox mounts a private /tmp, where a harness
    installed below /tmp is gone (`bwrap: execvp claude: No such file or directory`). /var/tmp
    is as temporary and stays visible (read-only) inside the sandbox, like a global install.
    `ROUNDTABLE_E2E_HARNESS_BIN` names an existing install's `node_modules/.bin` instead."""
    given = os.environ.get("ROUNDTABLE_E2E_HARNESS_BIN", "")
    if given:
        yield Path(given)
        return
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else None
    where = Path(tempfile.mkdtemp(prefix="roundtable-harnesses-", dir=base))
    try:
        yield install_harnesses(where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The operator's HOME for this test: no user configuration is read or written."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short directory for the owner's socket (a Unix socket path has a 108-byte limit)."""
    path = Path(tempfile.mkdtemp(prefix="rt-eh-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)
