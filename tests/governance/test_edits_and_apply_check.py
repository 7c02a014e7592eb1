"""Proposals from edits and files, and every patch checked against the tree when it is proposed:
the server builds the git-exact diff, a patch that does not apply is refused with the hunk and the
file's real lines (nothing recorded), and patch-format errors say their cause."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import PatchDoesNotApply, ToolError
from tests.governance.conftest import AUTHOR, Flow, make_patch
from tests.helpers import agent, git

pytestmark = pytest.mark.anyio

LISTS = "".join(f"def f{n}():\n    return {n}\n\n" for n in range(1, 31))


@pytest.fixture
def lists(repo: Path) -> Path:
    (repo / "src" / "lists.py").write_text(LISTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "lists")
    return repo


async def _count(flow: Flow) -> tuple[int, int, int]:
    async with flow.rt.db.read() as r:
        return (
            int(await r.scalar("SELECT COUNT(*) FROM proposals")),
            int(await r.scalar("SELECT COUNT(*) FROM patch_revisions")),
            int(await r.scalar("SELECT COUNT(*) FROM events")),
        )


async def _create(flow: Flow, **change: Any) -> dict[str, Any]:
    args = {"task_id": flow.task_id, "title": "t", "summary_md": "s", "affected_resources": [], "risk": "normal"}
    return await flow.call("proposal.create", {**args, **change}, agent(AUTHOR))


async def _refused(flow: Flow, change: dict[str, Any], kind: type[ToolError] = ToolError) -> str:
    before = await _count(flow)
    with pytest.raises(kind) as exc:
        await _create(flow, **change)
    assert await _count(flow) == before, "a refused proposal recorded something"
    return str(exc.value)


async def test_edits_and_files_become_the_git_diff(flow: Flow, lists: Path) -> None:
    await flow.task()
    for path in ("src/lists.py", "src/app.py", "docs/new.md"):
        await flow.claim(path)
    out = await _create(
        flow,
        edits=[
            {"path": "src/lists.py", "old_string": "    return 17\n", "new_string": "    return 170\n"},
            {"path": "src/app.py", "old_string": "v1", "new_string": "v2"},
        ],
        files=[{"path": "docs/new.md", "content": "# New\n"}],
    )
    got = await flow.call("proposal.get", {"proposal_id": out["proposal"]["id"]})
    # The same change made in the tree: git diff gives the very same bytes.
    (lists / "src" / "lists.py").write_text(LISTS.replace("    return 17\n", "    return 170\n"))
    (lists / "src" / "app.py").write_text("print('v2')\n")
    (lists / "docs").mkdir()
    (lists / "docs" / "new.md").write_text("# New\n")
    git(lists, "add", "-N", "docs/new.md")
    assert got["patch"] == git(lists, "diff", "--no-renames")
    assert sorted(r["resource_id"] for r in out["proposal_resources"]) == [
        "file:docs/new.md",
        "file:src/app.py",
        "file:src/lists.py",
    ]


async def test_a_revision_from_edits_builds_on_the_current_one(flow: Flow, lists: Path) -> None:
    await flow.task()
    await flow.claim("src/lists.py")
    first = await _create(
        flow, edits=[{"path": "src/lists.py", "old_string": "return 5\n", "new_string": "return 50\n"}]
    )
    pid = first["proposal"]["id"]
    await flow.call(
        "proposal.attach_patch",
        {
            "proposal_id": pid,
            "edits": [{"path": "src/lists.py", "old_string": "return 50\n", "new_string": "return 55\n"}],
        },
        agent(AUTHOR),
    )
    patch = (await flow.call("proposal.get", {"proposal_id": pid}))["patch"]
    assert "-    return 5\n+    return 55\n" in patch and "50" not in patch


async def test_edit_misses_name_the_string_and_show_the_closest_lines(flow: Flow, lists: Path) -> None:
    await flow.task()
    await flow.claim("src/lists.py")
    message = await _refused(
        flow, {"edits": [{"path": "src/lists.py", "old_string": "def f12(:\n", "new_string": "x"}]}
    )
    assert message.startswith("edits[0]: old_string not found in src/lists.py: 'def f12(:\\n'. The closest lines are:")
    assert "\n34\tdef f12():" in message
    many = await _refused(flow, {"edits": [{"path": "src/lists.py", "old_string": "return 1", "new_string": "x"}]})
    assert "old_string occurs 11 times in src/lists.py (at lines 2, 29, 32," in many and "set replace_all" in many
    gone = await _refused(flow, {"edits": [{"path": "src/nope.py", "old_string": "a", "new_string": "b"}]})
    assert gone == "edits[0]: src/nope.py does not exist; create it with files"
    both = await _refused(flow, {"patch": "x", "files": [{"path": "a.txt", "content": "a\n"}]})
    assert both == "give either patch or edits/files, not both"
    escape = await _refused(flow, {"files": [{"path": ".git/config", "content": "x\n"}]})
    assert escape.startswith("files[0]: ") and ".git" in escape


async def test_a_stale_patch_is_refused_with_the_hunk_and_the_real_lines(flow: Flow, lists: Path) -> None:
    await flow.task()
    await flow.claim("src/lists.py")
    stale = (
        "diff --git a/src/lists.py b/src/lists.py\n--- a/src/lists.py\n+++ b/src/lists.py\n"
        "@@ -46,3 +46,3 @@\n def f16():\n-    return 99\n+    return 100\n \n"
    )
    message = await _refused(flow, {"patch": stale}, PatchDoesNotApply)  # its own type, through Runtime.call
    assert message.startswith("patch does not apply to the current tree: patch failed: src/lists.py:46;")
    assert "First difference at line 47: the hunk expects '    return 99', the file has '    return 16'." in message
    assert (
        "The hunk @@ -46,3 +46,3 @@ expects (context and removed lines):\n46\tdef f16():\n47\t    return 99" in message
    )
    assert "The file has (90 lines):\n46\tdef f16():\n47\t    return 16\n48\t" in message


async def test_a_patch_without_a_final_newline_says_so(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    patch = make_patch("src/app.py", "print('v1')", "print('v2')").rstrip("\n")
    message = await _refused(flow, {"patch": patch})
    assert message == (
        "invalid patch: it does not end with a newline; its last line (line 6) must end with \\n, "
        "or git reads the patch as corrupt"
    )


async def test_a_hunk_whose_counts_lie_gives_both_counts(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    more = "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('v1')\n+print('v2')\n+extra\n"
    assert await _refused(flow, {"patch": more}) == (
        "invalid patch: the hunk at line 4 (@@ -1 +1 @@) promises 1 old and 1 new lines, but its body has "
        "1 old and 2 new lines (context lines count on both sides); fix the counts in the @@ header"
    )
    fewer = "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n-print('v1')\n+print('v2')\n"
    assert await _refused(flow, {"patch": fewer}) == (
        "invalid patch: the hunk at line 4 (@@ -1,2 +1,2 @@) promises 2 old and 2 new lines, but its body has "
        "1 old and 1 new lines (context lines count on both sides); fix the counts in the @@ header"
    )


async def test_an_executable_keeps_its_mode(flow: Flow, repo: Path) -> None:
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho one\n")
    os.chmod(script, 0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "script")
    await flow.task()
    await flow.claim("run.sh")
    out = await _create(flow, edits=[{"path": "run.sh", "old_string": "one", "new_string": "two"}])
    patch = (await flow.call("proposal.get", {"proposal_id": out["proposal"]["id"]}))["patch"]
    assert "index " in patch and " 100755\n" in patch and "mode" not in patch


async def test_a_hunk_without_trailing_context_says_git_anchors_it(flow: Flow, lists: Path) -> None:
    await flow.task()
    await flow.claim("src/lists.py")
    patch = (
        "diff --git a/src/lists.py b/src/lists.py\n--- a/src/lists.py\n+++ b/src/lists.py\n"
        "@@ -1,2 +1,2 @@\n def f1():\n-    return 1\n+    return 10\n"
    )
    message = await _refused(flow, {"patch": patch})
    assert "The lines match, but the hunk has fewer context lines after its change than before it" in message
