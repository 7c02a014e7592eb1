"""git's failures reach callers as types, not as words to match: a git that outlives its timeout
is `GitTimedOut` (killed and reaped), any other failure a plain `ToolError`."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.services.repository import git

pytestmark = pytest.mark.anyio


async def test_a_git_past_its_timeout_is_git_timed_out(tmp_path: Path) -> None:
    with pytest.raises(git.GitTimedOut, match=r"git -c timed out after 0.2s"):
        # `tied`: its own process group, so the shell and the sleep git started die with it.
        await git.exec_git(tmp_path, ["-c", "alias.nap=!sleep 30", "nap"], timeout=0.2, tied=True)


async def test_a_git_that_cannot_start_is_not_a_timeout(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        await git.exec_git(tmp_path / "missing", ["status"])
    assert not isinstance(info.value, git.GitTimedOut)
