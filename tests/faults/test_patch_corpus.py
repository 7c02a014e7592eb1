"""Hostile patches for `proposal.create`, `proposal.attach_patch` and `patch.validate`:
malformed hunks, binary diffs, renames and new files leading out of the root or into `.git`,
`/dev/null` tricks, symlink creation, an oversized patch and CRLF damage. A refused patch
leaves the database and every file (including `.roundtable/patches`) unchanged; a patch that is
well-formed but does not apply is stored, and `patch.validate` then reports it invalid without
touching the tree."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from tests.faults.helpers import AUTHOR, agent, db_fingerprint, make_git_project, one_line_patch, tree_fingerprint

pytestmark = pytest.mark.anyio

APP = "src/app.py"
GOOD = one_line_patch(APP, "print('v1')", "print('v2')")

REFUSED: dict[str, str] = {
    "garbage": "hello world\n",
    "hunk without file headers": "@@ -1 +1 @@\n-print('v1')\n+print('v2')\n",
    "hunk counts lie": f"--- a/{APP}\n+++ b/{APP}\n@@ -1,5 +1,5 @@\n-print('v1')\n+print('v2')\n",
    "git binary patch": (
        f"diff --git a/{APP} b/{APP}\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 5\n"
        "McmZQzU|?VZ0000200RI3\n\nliteral 0\nKcmV+b0RR6000031\n\n"
    ),
    "binary files differ": "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\nBinary files a/logo.png and b/logo.png differ\n",
    "rename out of root": (
        f"diff --git a/{APP} b/../evil.py\nsimilarity index 100%\nrename from {APP}\nrename to ../evil.py\n"
    ),
    "rename into .git": (
        f"diff --git a/{APP} b/.git/hooks/pre-commit\nsimilarity index 100%\nrename from {APP}\n"
        "rename to .git/hooks/pre-commit\n"
    ),
    "new file out of root via /dev/null": (
        "diff --git a/../../tmp/evil b/../../tmp/evil\nnew file mode 100644\n--- /dev/null\n+++ b/../../tmp/evil\n"
        "@@ -0,0 +1 @@\n+owned\n"
    ),
    "/dev/null on both sides": "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+x\n",
    "absolute target": f"--- a/{APP}\n+++ /etc/passwd\n@@ -1 +1 @@\n-print('v1')\n+root::0:0::/:/bin/sh\n",
    "path without prefixes": f"--- {APP}\n+++ {APP}\n@@ -1 +1 @@\n-print('v1')\n+print('v2')\n",
    "path change without rename header": f"--- a/{APP}\n+++ b/src/other.py\n@@ -1 +1 @@\n-print('v1')\n+print('v2')\n",
    "into .roundtable": (
        "diff --git a/.roundtable/config.yaml b/.roundtable/config.yaml\n--- a/.roundtable/config.yaml\n"
        "+++ b/.roundtable/config.yaml\n@@ -1 +1 @@\n-version: 1\n+version: 2\n"
    ),
    "symlink to /etc/passwd": (
        "diff --git a/src/link b/src/link\nnew file mode 120000\n--- /dev/null\n+++ b/src/link\n"
        "@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"
    ),
    "NUL in path": "--- a/src/a\x00b.py\n+++ b/src/a\x00b.py\n@@ -1 +1 @@\n-x\n+y\n",
    "dot-dot inside path": "--- a/src/../../x.py\n+++ b/src/../../x.py\n@@ -1 +1 @@\n-x\n+y\n",
    "oversized (17 MiB)": (
        "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n"
        f"@@ -0,0 +1,{17 * 1024} @@\n" + ("+" + "x" * 1023 + "\n") * (17 * 1024)
    ),
}

GARBAGE_HUNK_HEADER = f"--- a/{APP}\n+++ b/{APP}\n@@ -x +y @@\n-print('v1')\n+print('v2')\n"

# Well-formed, inside the root, but they do not apply to the tree: stored, then invalid.
DOES_NOT_APPLY: dict[str, str] = {
    "context mismatch": one_line_patch(APP, "print('nope')", "print('v2')"),
    "CRLF patch on an LF file": GOOD.replace("\n", "\r\n"),
    "missing file": one_line_patch("src/missing.py", "a", "b"),
    "garbage hunk header": GARBAGE_HUNK_HEADER,
}


@pytest.fixture
async def env(project: Path) -> AsyncIterator[tuple[Runtime, Path, str]]:
    make_git_project(project, {APP: "print('v1')\n", "logo.png": "not really\n"})
    rt = await Runtime.open(project)
    task = await rt.call("task.create", {"title": "t", "body_md": "b"})
    task_id = str(task["task"]["id"])
    for path in (APP, "src/missing.py"):
        claim = {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": path, "agent_id": AUTHOR}
        await rt.call("resource.claim", claim, agent())
    try:
        yield rt, project, task_id
    finally:
        await rt.close()


def _create_args(task_id: str, patch: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "agent_id": AUTHOR,
        "title": "x",
        "summary_md": "y",
        "affected_resources": [],
        "risk": "normal",
        "patch": patch,
    }


async def _assert_refused(rt: Runtime, root: Path, tool: str, args: dict[str, Any], name: str) -> None:
    db_before, files_before = await db_fingerprint(rt), tree_fingerprint(root)
    with pytest.raises(ToolError) as info:
        await rt.call(tool, args, agent())
    text = str(info.value)
    assert text and "internal error" not in text and "Traceback" not in text, f"{name}: {text}"
    assert len(text) < 2000, f"{name}: the error echoes too much"
    assert await db_fingerprint(rt) == db_before, f"{name}: {tool} changed the database"
    assert tree_fingerprint(root) == files_before, f"{name}: {tool} changed files"


@pytest.mark.parametrize("name", list(REFUSED))
async def test_create_refuses(env: tuple[Runtime, Path, str], name: str) -> None:
    rt, root, task_id = env
    await _assert_refused(rt, root, "proposal.create", _create_args(task_id, REFUSED[name]), name)


async def test_attach_patch_refuses_every_hostile_revision(env: tuple[Runtime, Path, str]) -> None:
    rt, root, task_id = env
    created = await rt.call("proposal.create", _create_args(task_id, GOOD), agent())
    proposal_id = created["proposal"]["id"]
    for name, patch in REFUSED.items():
        await _assert_refused(rt, root, "proposal.attach_patch", {"proposal_id": proposal_id, "patch": patch}, name)


@pytest.mark.parametrize("name", list(DOES_NOT_APPLY))
async def test_stored_but_invalid_never_touches_the_tree(env: tuple[Runtime, Path, str], name: str) -> None:
    rt, root, task_id = env
    tree = tree_fingerprint(root, artefacts=False)
    try:
        created = await rt.call("proposal.create", _create_args(task_id, DOES_NOT_APPLY[name]), agent())
    except ToolError as exc:  # refusing at create is as good, if it is clear and changes nothing
        assert "internal error" not in str(exc)
        assert tree_fingerprint(root, artefacts=False) == tree
        return
    out = await rt.call("patch.validate", {"proposal_id": created["proposal"]["id"]}, agent())
    assert out["valid"] is False, out
    assert tree_fingerprint(root, artefacts=False) == tree
    async with rt.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM transactions") == 0


async def test_create_refuses_garbage_hunk_header(env: tuple[Runtime, Path, str]) -> None:
    rt, root, task_id = env
    await _assert_refused(rt, root, "proposal.create", _create_args(task_id, GARBAGE_HUNK_HEADER), "garbage hunk")
