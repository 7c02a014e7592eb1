"""The CI-style script (`tests/ci/ci_flow.sh`, no TTY, `CI=true`): start → runs create → the
autopilot with scripted agents → an approval for the operator → CLI approve and apply → exit 0;
then a run whose harness cannot start exits 3. Real processes, SQLite, git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roundtable.demo import workspace as demo
from tests.autopilot.helpers import edit_config

SCRIPT = Path(__file__).with_name("ci_flow.sh")


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_ci_script_applies_a_change_and_a_blocked_run_exits_3(short_tmp: Path) -> None:
    root = short_tmp / "demo"
    demo.prepare(root)  # a git repository with the calculator; every agent the scripted one
    demo.configure(root, retry_backoff_seconds=0.2)
    edit_config(root, lambda data: data["autopilot"].update(mode="manual"))  # `start --autopilot` turns it on
    blocked = short_tmp / "blocked"
    demo.prepare(blocked)

    def missing(data: dict) -> None:  # type: ignore[type-arg]
        data["adapters"]["absent"] = {"command": "roundtable-test-no-such-harness", "supports_mcp": True}
        for entry in data["agents"].values():
            entry["adapter"] = "absent"

    edit_config(blocked, missing)
    command = Path(sys.executable).with_name("roundtable")
    env = {**os.environ, "ROUNDTABLE": str(command), "PATH": f"{command.parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("ROUNDTABLE_HTTP_ADDRESS", None)
    done = subprocess.run(
        ["sh", str(SCRIPT), str(root), str(blocked)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ci flow: applied P-" in done.stdout and "approved" in done.stdout
    assert "def mul" in (root / "calc" / "ops.py").read_text()  # the change is in the repository
    summary = json.loads((blocked / "summary.json").read_text())
    assert summary["exit_code"] == 3 and summary["status"] == "blocked"
