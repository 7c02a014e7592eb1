"""Symbol-claim coverage of hunks, and the policy file as a runtime loads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.errors import ConfigError, ToolError
from roundtable.runtime import Runtime
from tests.governance.conftest import AUTHOR, Flow, agent, git

pytestmark = pytest.mark.anyio

SOURCE = "".join(
    [
        "def first():\n",
        "    return 1\n",
        "\n",
        "\n",
        "def second():\n",
        "    return 2\n",
    ]
)


def hunk_patch(line_no: int, old: str, new: str) -> str:
    return (
        "diff --git a/src/mod.py b/src/mod.py\n--- a/src/mod.py\n+++ b/src/mod.py\n"
        f"@@ -{line_no} +{line_no} @@\n-{old}\n+{new}\n"
    )


async def test_symbol_claim_covers_only_its_lines(flow: Flow, repo: Path) -> None:
    (repo / "src" / "mod.py").write_text(SOURCE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mod")
    await flow.task()
    await flow.call(
        "resource.claim",
        {
            "resource_type": "symbol",
            "claim_type": "write",
            "task_id": flow.task_id,
            "path": "src/mod.py",
            "symbol": "second",
            "agent_id": AUTHOR,
        },
        agent(AUTHOR),
    )
    inside = await flow.propose(hunk_patch(6, "    return 2", "    return 22"))
    assert inside["revision_number"] == 1
    with pytest.raises(ToolError, match=r"outside claimed symbols in src/mod\.py at 2-2"):
        await flow.propose(hunk_patch(2, "    return 1", "    return 11"))


async def test_malformed_policy_file_stops_runtime_open(project: Path) -> None:
    (project / "POLICIES.ROUNDTABLE.md").write_text(
        "# P\n\n```yaml\nconsensus:\n  default:\n    tests_required: maybe\n```\n"
    )
    with pytest.raises(ConfigError, match=r"POLICIES\.ROUNDTABLE\.md:6: consensus\.default\.tests_required"):
        await Runtime.open(project)


async def test_policy_file_changes_thresholds(project: Path) -> None:
    (project / "POLICIES.ROUNDTABLE.md").write_text(
        "```yaml\nconsensus:\n  default:\n    approvals_required: 3\n    tests_required: false\n```\n"
    )
    rt = await Runtime.open(project)
    try:
        assert rt.policy.profiles["default"].approvals_required == 3
        assert rt.policy.profiles["default"].tests_required is False
    finally:
        await rt.close()
