"""`test.run` end to end in each sandbox kind (forced through the policy's `tests.sandbox`):
evidence about the revision, destruction confined to the scratch worktree, nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from roundtable.runtime import Runtime
from roundtable.services.policy.engine import load_policy
from tests.helpers import make_git_project
from tests.support.evidence import AGENT, add_lines_patch, make_proposal

from .conftest import PY

pytestmark = pytest.mark.anyio

APP = "def add(a, b):\n    return a + b\n"
TEST_MUL = (
    "import unittest\n\nfrom app import mul\n\n\n"
    "class MulTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(3, 4), 12)\n"
)


@pytest.fixture
async def rt(project: Path, kind: str) -> AsyncIterator[Runtime]:
    make_git_project(project, {"app.py": APP})
    commands = {
        "unit": [PY, "-m", "unittest", "discover", "-s", ".", "-p", "test_*.py"],
        "clean": ["git", "clean", "-fdx"],
        "wipe": [PY, "-c", "import shutil, sys\nshutil.rmtree(sys.argv[1])", str(project)],
        "wipe-state": [PY, "-c", "import shutil, sys\nshutil.rmtree(sys.argv[1])", str(project / ".roundtable")],
        "where": [PY, "-c", "import os\nprint(os.getcwd())"],
    }
    block = yaml.safe_dump({"tests": {"commands": commands, "sandbox": kind}})
    (project / "POLICIES.ROUNDTABLE.md").write_text(f"```yaml\n{block}```\n", encoding="utf-8")
    runtime = await Runtime.open(project)
    runtime.policy = load_policy(project)
    try:
        yield runtime
    finally:
        await runtime.close()


def fingerprint(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            if path.is_file() and not path.name.startswith("roundtable.db"):
                out[str(path.relative_to(root))] = path.read_bytes().hex()[:64]
    return out


def worktree_count(root: Path) -> int:
    listed = subprocess.run(["git", "worktree", "list"], cwd=root, capture_output=True, text=True, check=True)
    return len(listed.stdout.splitlines())


def exists(path: str) -> bool:
    return os.path.exists(path)


@pytest.fixture(autouse=True)
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scratch worktrees go to this test's own temp dir (other runs on the machine use theirs)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))


def scratch_dirs() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("roundtable-test-")}


async def test_a_proposal_is_tested_with_its_patch_applied(rt: Runtime, kind: str) -> None:
    before = scratch_dirs()
    patch = add_lines_patch("app.py", ["", "", "def mul(a, b):", "    return a * b"]) + add_lines_patch(
        "test_mul.py", TEST_MUL.rstrip("\n").split("\n"), new_file=True
    )
    pid = await make_proposal(rt, patch)
    out = await rt.call("test.run", {"command": "unit", "proposal_id": pid}, AGENT)
    assert out["test_run"]["status"] == "passed", out["log"]
    assert out["test_run"]["sandbox"] == kind
    assert json.loads(out["test_run"]["argv_json"])[0] == PY
    broken = (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
        "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return a - b\n"
    ) + add_lines_patch(
        "test_add.py",
        [
            "import unittest",
            "from app import add",
            "class T(unittest.TestCase):",
            "    def test(self):",
            "        self.assertEqual(add(2, 3), 5)",
        ],
        new_file=True,
    )
    other = await make_proposal(rt, broken, task_id="T-2")
    out = await rt.call("test.run", {"command": "unit", "proposal_id": other}, AGENT)
    assert out["test_run"]["status"] == "failed" and "AssertionError" in out["log"]
    assert (rt.root / "app.py").read_text() == APP
    assert scratch_dirs() == before
    assert worktree_count(rt.root) == 1


async def test_the_command_runs_in_a_scratch_worktree_outside_the_project(rt: Runtime) -> None:
    out = await rt.call("test.run", {"command": "where"}, AGENT)
    where = out["log"].strip()
    parent = os.path.basename(os.path.dirname(where))
    assert parent.startswith("roundtable-test-") and os.path.basename(where) == parent
    assert not where.startswith(str(rt.root.resolve())) and not exists(where)


@pytest.mark.parametrize("command", ["clean", "wipe", "wipe-state"])
async def test_destruction_touches_only_the_scratch_worktree(rt: Runtime, command: str) -> None:
    (rt.root / "untracked.txt").write_text("keep me\n", encoding="utf-8")
    before = fingerprint(rt.root)
    assert ".roundtable/config.yaml" in before and "untracked.txt" in before
    await rt.call("test.run", {"command": command}, AGENT)
    after = fingerprint(rt.root)
    after.pop(next(k for k in after if k.startswith(".roundtable/testlogs/")))
    assert after == before
    # The owner's database still works.
    out = await rt.call("test.run", {"command": "where"}, AGENT)
    assert out["test_run"]["status"] == "passed"
