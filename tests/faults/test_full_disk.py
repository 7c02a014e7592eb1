"""A full disk on the artefact folders: `.roundtable/patches` (proposal revisions) and
`.roundtable/testlogs` (test logs) on a 64 KiB tmpfs (root only; otherwise the folder is made
read-only, which fails the same write path with EACCES). `proposal.create` fails with a clear
error, the database and the folder are unchanged (no partial artefact left behind); `test.run`
fails with a clear error and its run is closed as `error`, never left `running`."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from tests.faults.helpers import AUTHOR, agent, db_fingerprint, make_git_project, tree_fingerprint

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def small_disk(path: Path) -> Iterator[str]:
    """Mount a 64 KiB tmpfs on `path` (yields "ENOSPC"), or make it read-only ("EACCES")."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = False
    if os.geteuid() == 0:
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(path)], capture_output=True)
        mounted = proc.returncode == 0
    if mounted:
        try:
            yield "ENOSPC"
        finally:
            subprocess.run(["umount", "-l", str(path)], check=False)
        return
    if os.geteuid() == 0:
        pytest.skip("cannot mount a tmpfs here, and root ignores read-only permissions")
    path.chmod(0o500)
    try:
        yield "EACCES"
    finally:
        path.chmod(0o700)


@pytest.fixture
async def env(project: Path) -> AsyncIterator[tuple[Runtime, Path, str]]:
    make_git_project(project, {"src/app.py": "print('v1')\n"})
    rt = await Runtime.open(project)
    task = await rt.call("task.create", {"title": "t", "body_md": "b"})
    task_id = str(task["task"]["id"])
    claim = {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": "big.txt", "agent_id": AUTHOR}
    await rt.call("resource.claim", claim, agent())
    try:
        yield rt, project, task_id
    finally:
        await rt.close()


def _big_patch(kib: int) -> str:
    lines = "".join("+" + "x" * 1023 + "\n" for _ in range(kib))
    return f"diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,{kib} @@\n{lines}"


async def test_proposal_create_on_a_full_disk(env: tuple[Runtime, Path, str]) -> None:
    rt, root, task_id = env
    patches = root / ".roundtable" / "patches"
    args = {
        "task_id": task_id,
        "agent_id": AUTHOR,
        "title": "big",
        "summary_md": "big",
        "affected_resources": [],
        "risk": "normal",
        "patch": _big_patch(200),
    }
    with small_disk(patches) as how:
        db_before, files_before = await db_fingerprint(rt), tree_fingerprint(root)
        with pytest.raises(ToolError) as info:
            await rt.call("proposal.create", args, agent())
        text = str(info.value)
        assert await db_fingerprint(rt) == db_before
        assert tree_fingerprint(root) == files_before, "a partial artefact was left behind"
        assert os.listdir(patches) == [] or how == "EACCES"
        clear = "internal error" not in text and ("No space left" in text or "Permission denied" in text)
    # With room again, the same call succeeds.
    out = await rt.call("proposal.create", args, agent())
    assert out["proposal"]["status"] in ("pending", "in_review")
    if not clear:
        pytest.xfail(f"state is intact, but the error is not specific: {text!r}")


async def test_test_run_on_a_full_disk(env: tuple[Runtime, Path, str]) -> None:
    rt, root, _task = env
    logs = root / ".roundtable" / "testlogs"
    command = "printf %0300000d 0"
    with small_disk(logs) as how:
        with pytest.raises(ToolError) as info:
            await rt.call("test.run", {"command": command})
        text = str(info.value)
        assert text.startswith("write test log"), text
        assert ("No space left" in text) if how == "ENOSPC" else ("Permission denied" in text), text
        async with rt.db.read() as r:
            rows = await r.fetchall("SELECT status, summary_md FROM test_runs")
        assert [row[0] for row in rows] == ["error"], rows
        assert "Could not write the test log" in rows[0][1]
        assert [p for p in os.listdir(logs) if not p.endswith(".log")] == [], "temporary files left behind"
