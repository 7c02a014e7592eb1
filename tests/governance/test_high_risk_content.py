"""High-risk by what a file does, not by the exact spelling of its name: the files that change what
a configured test command runs are high-risk whatever the policy file lists, matched without
regard to case, and the policy's `risk.high_paths` only adds to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.policy.engine import Policy, parse_policy
from roundtable.services.policy.file import ALWAYS_HIGH_PATHS
from tests.faults.helpers import AUTHOR, NO_TESTS_GATE, REVIEWERS, add_policy, make_git_project
from tests.helpers import agent

pytestmark = pytest.mark.anyio

CALC = "def add(a, b):\n    return a + b\n"
# The proposal of the finding: a lowercase `makefile` (GNU make reads it before `Makefile`) whose
# `test` target always passes, and a broken `add()`.
MAKEFILE_AND_BROKEN_ADD = (
    "diff --git a/makefile b/makefile\nnew file mode 100644\n--- /dev/null\n+++ b/makefile\n@@ -0,0 +1 @@\n"
    "+test: ; echo all tests passed\n"
    "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n-    return a + b\n+    return a - b\n"
)
BROKEN_ADD_ONLY = MAKEFILE_AND_BROKEN_ADD[MAKEFILE_AND_BROKEN_ADD.index("diff --git a/src") :]


async def _validated(root: Path, patch: str, paths: list[str]) -> dict[str, object]:
    """`patch.validate` of a proposal with two approving votes (tests not required)."""
    rt = await Runtime.open(root)
    try:
        await sync_agents(rt)
        task_id = (await rt.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
        for path in paths:
            claim = {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": path}
            await rt.call("resource.claim", {**claim, "agent_id": AUTHOR}, agent())
        create = {"task_id": task_id, "agent_id": AUTHOR, "title": "x", "summary_md": "y"}
        create |= {"affected_resources": [], "risk": "normal", "patch": patch}
        proposal_id = (await rt.call("proposal.create", create, agent()))["proposal"]["id"]
        for who in REVIEWERS:
            vote = {"proposal_id": proposal_id, "agent_id": who, "vote": "approve", "reason_md": "ok"}
            await rt.call("vote.cast", vote, agent(who))
        return dict(await rt.call("patch.validate", {"proposal_id": proposal_id}, agent()))
    finally:
        await rt.close()


async def test_a_lowercase_makefile_that_passes_every_test_needs_a_human(project: Path) -> None:
    root = make_git_project(project, {"src/calc.py": CALC})
    add_policy(root, NO_TESTS_GATE)  # the scaffolded policy lists `Makefile`, never `makefile`
    plain = await _validated(root, BROKEN_ADD_ONLY, ["src/calc.py"])
    assert plain["policy"]["high_risk_paths"] == []  # type: ignore[index]
    assert plain["policy"]["approvable"] is True  # type: ignore[index]
    report = await _validated(root, MAKEFILE_AND_BROKEN_ADD, ["makefile", "src/calc.py"])
    policy = report["policy"]
    assert policy["high_risk_paths"] == ["makefile"]  # type: ignore[index]
    assert policy["needs_human"] is True and policy["approvable"] is False  # type: ignore[index]
    assert report["applicable"] is False


@pytest.mark.parametrize(
    "path",
    [
        "makefile",
        "GNUmakefile",
        "sub/Makefile",
        "tests/conftest.py",
        "deep/er/conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "noxfile.py",
        "src/sitecustomize.py",
        "usercustomize.py",
        "lib/evil.pth",
        "web/package.json",
        ".npmrc",
        "jest.config.ts",
        "vitest.config.mjs",
        ".mocharc.yml",
        "karma.conf.js",
        "phpunit.xml.dist",
        "Cargo.toml",
        ".cargo/config.toml",
        "policies.roundtable.md",
        "Agents.Roundtable.md",
        ".ROUNDTABLE/config.yaml",
        "CONFTEST.PY",
    ],
)
def test_files_that_change_what_a_test_command_does_are_high_risk_whatever_the_policy_lists(path: str) -> None:
    narrowed = parse_policy("```yaml\nrisk:\n  high_paths: [secrets/**]\n```\n")
    assert narrowed.high_paths == ("secrets/**",)
    assert narrowed.is_high_risk(path), path
    assert Policy().is_high_risk(path), path


@pytest.mark.parametrize("path", ["src/calc.py", "tests/test_calc.py", "docs/makefile.md", "lib/conftest_helpers.py"])
def test_ordinary_files_stay_ordinary(path: str) -> None:
    assert not Policy().is_high_risk(path)


def test_the_policy_adds_paths_and_matches_them_without_case() -> None:
    extended = parse_policy("```yaml\nrisk:\n  high_paths: [secrets/**]\n```\n")
    assert extended.is_high_risk("Secrets/prod.key") and extended.is_high_risk("makefile")
    assert not extended.is_high_risk("src/calc.py")
    assert set(ALWAYS_HIGH_PATHS) >= {"conftest.py", "*.pth", "package.json", "POLICIES.ROUNDTABLE.md"}
