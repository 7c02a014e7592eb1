"""`sessions.tools: shell`: a supervised session reaches roundtable through `rt` in its own shell.

What runs inside the sandbox (bubblewrap, then the Landlock launcher) is a stand-in for Claude Code
(the `claude` adapter's command is this interpreter running it): it records the argv it was given
and runs `rt` as its shell tool would. Everything else is real: the supervisor, the sandbox, the
session's private MCP socket and capability, and the command on its PATH.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from roundtable.config import AdapterConfig
from roundtable.runtime import Runtime
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio

# The stand-in harness: what a shell tool would run, each command's output and status recorded.
HARNESS = r"""
import json, os, subprocess, sys
out = {"argv": sys.argv[1:], "home_files": sorted(os.listdir(os.environ["HOME"]))}
task = os.environ["ROUNDTABLE_TASK_ID"]
for name, words in [("help", []), ("watch", ["table_watch"]), ("task", ["task_get", "--task-id", task]), ("nope", ["repo_nope"])]:
    done = subprocess.run(["rt", *words], capture_output=True, text=True, timeout=60)
    out[name] = {"code": done.returncode, "out": done.stdout, "err": done.stderr}
print("HARNESS " + json.dumps(out), flush=True)
"""


@pytest.fixture
def harness_dir() -> Iterator[Path]:
    """Where the stand-in lives: readable inside (`sessions.read_paths`)."""
    path = Path(tempfile.mkdtemp(prefix="rt-shell-", dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None))
    os.chmod(path, 0o755)
    (path / "harness.py").write_text(HARNESS, encoding="utf-8")
    os.chmod(path / "harness.py", 0o644)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def configure(runtime: Runtime, harness_dir: Path) -> None:
    config = runtime.config
    adapters = dict(config.adapters)
    adapters["claude"] = AdapterConfig(command=f"{sys.executable} {harness_dir / 'harness.py'}", supports_mcp=True)
    sessions = config.sessions.model_copy(update={"tools": "shell", "read_paths": (str(harness_dir),)})
    runtime.config = config.model_copy(update={"adapters": adapters, "sessions": sessions})


def _log_text(log: Path) -> str:
    return log.read_text(encoding="utf-8") if log.exists() else ""


async def report(log: Path, timeout: float = 60) -> dict[str, Any]:
    """The stand-in's report, once it is in the session's log."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        text = await asyncio.to_thread(_log_text, log)
        for line in text.splitlines():
            if line.startswith("HARNESS "):
                return dict(json.loads(line[len("HARNESS ") :]))
        await asyncio.sleep(0.05)
    raise AssertionError(f"no report from the stand-in harness in {log}")


async def test_a_shell_session_calls_its_tools_with_rt_and_has_no_mcp_server(
    kind: str, runtime: Runtime, harness_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-operator-test")  # the owner's; no gateway here
    configure(runtime, harness_dir)
    _run_id, task_id = await make_task(runtime)
    sup = await start_supervisor(runtime, base_dir=tmp_path)
    try:
        res = await sup.launch(LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="claude"))
        session_id = res["session"]["id"]
        seen = await report(sup.log_path(session_id))
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    argv = seen["argv"]
    assert "--mcp-config" not in argv and "Bash" in argv[argv.index("--tools") + 1].split()
    assert ".mcp.json" not in seen["home_files"] and "bin" in seen["home_files"]
    # `rt` lists the session's tools (its capability's listing), one line each.
    help_ = seen["help"]
    assert help_["code"] == 0, help_["err"]
    names = [line.split(" ", 1)[0] for line in help_["out"].splitlines()[1:]]
    assert "table_watch" in names and "proposal_create" in names and "vote_cast" not in names
    # Calls go through the session's socket with its capability: its own task reads back.
    assert seen["watch"]["code"] == 0 and isinstance(yaml.safe_load(seen["watch"]["out"]), dict)
    assert seen["task"]["code"] == 0, seen["task"]["err"]
    assert yaml.safe_load(seen["task"]["out"])["task"]["title"] == "Add mul"
    assert seen["nope"]["code"] == 2 and "you have no tool 'repo_nope'" in seen["nope"]["err"]
