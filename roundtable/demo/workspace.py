"""The demo's project: a small git repository with a few source files, initialised for
Roundtable, with every agent played by the built-in scripted agent and the autopilot on.

`roundtable demo` (`make run`) prepares it once (`prepare`, `configure`) and starts the
operator's console on its run (`DEMO_RUN`, created with `DEMO_GOAL`, resumed after): the planner
turns the goal into a task, the implementer claims and proposes, the reviewer, security and the
tester do their part, the tests run on the revision, and the patch waits in the operator's
approval inbox — the operator only approves and applies (or rolls back).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SAMPLE_FILES = {
    "README.md": "# Demo project\n\nA tiny calculator the agents improve under Roundtable.\n",
    "calc/__init__.py": "",
    "calc/ops.py": (
        '"""Arithmetic operations."""\n\n\n'
        "def add(a: int, b: int) -> int:\n    return a + b\n\n\n"
        "def sub(a: int, b: int) -> int:\n    return a - b\n"
    ),
    "tests/__init__.py": "",
    # Standard-library tests behind `make test` (the command the Makefile's test target implies),
    # so `test.run` works in the demo without installing anything. They already expect `mul()`,
    # which the demo's task adds: they fail on the base tree and pass on the proposal's revision,
    # which is what `test.run` tests (a scratch worktree with the patch applied, in the sandbox).
    "tests/test_ops.py": (
        "import unittest\n\nfrom calc.ops import add, sub\n\n\n"
        "class OpsTest(unittest.TestCase):\n"
        "    def test_add(self) -> None:\n        self.assertEqual(add(2, 3), 5)\n\n"
        "    def test_sub(self) -> None:\n        self.assertEqual(sub(5, 3), 2)\n\n"
        "    def test_mul(self) -> None:\n"
        "        from calc.ops import mul  # added by the demo's task\n\n"
        "        self.assertEqual(mul(3, 4), 12)\n"
        "        self.assertEqual(mul(-2, 5), -10)\n"
    ),
}


def makefile() -> str:
    """`make test` with the Python that runs Roundtable (readable inside the sandbox, where the
    home directory and its shims are not); `make test PYTHON=python3` overrides it."""
    return f"PYTHON ?= {sys.executable}\n\ntest:\n\t$(PYTHON) -m unittest discover -s tests -t .\n"


def prepare(root: Path) -> None:
    """Create the demo repository and initialise Roundtable in it, unless already done."""
    if (root / ".roundtable" / "config.yaml").exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in {**SAMPLE_FILES, "Makefile": makefile()}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "demo",
        "GIT_AUTHOR_EMAIL": "demo@example.invalid",
        "GIT_COMMITTER_NAME": "demo",
        "GIT_COMMITTER_EMAIL": "demo@example.invalid",
    }
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
        (root / ".gitignore").write_text(".roundtable/\n", encoding="utf-8")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "-m", "demo project"], cwd=root, check=True, env=env)
    from roundtable.scaffold import init_project

    init_project(root)
    configure(root)


SCRIPTED_AGENT = {
    "command": f"{sys.executable} -m roundtable.demo.scripted",
    "supports_resume": False,
    "supports_mcp": True,
    "supports_readonly_workspace": True,
    "captures_session_id": False,
}


DEFAULT_PROFILE = "  default:\n    approvals_required: 2\n    blockers_allowed: 0\n    tests_required: true\n"
DEMO_PROFILE = DEFAULT_PROFILE + "    required_roles:\n      - Reviewer\n      - Security\n      - Tester\n"


def configure(root: Path, *, retry_backoff_seconds: float = 2.0) -> None:
    """Every agent of `root`'s config played by the scripted agent, the autopilot on (auto), and
    a policy whose every change the reviewer, security and the tester review. Idempotent; run
    again on an older demo workspace."""
    import yaml

    policy = root / "POLICIES.ROUNDTABLE.md"
    if policy.is_file():
        text = policy.read_text(encoding="utf-8")
        if DEMO_PROFILE not in text and DEFAULT_PROFILE in text:
            policy.write_text(text.replace(DEFAULT_PROFILE, DEMO_PROFILE, 1), encoding="utf-8")

    path = root / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    adapters = data.setdefault("adapters", {}) or {}
    data["adapters"] = adapters
    wanted = dict(SCRIPTED_AGENT)
    agents = data.get("agents") or {}
    autopilot = data.get("autopilot") or {}
    if (
        adapters.get("scripted") == wanted
        and all((entry or {}).get("adapter") == "scripted" for entry in agents.values())
        and autopilot.get("mode") == "auto"
    ):
        return
    adapters["scripted"] = wanted
    for entry in agents.values():
        if isinstance(entry, dict):
            entry["adapter"] = "scripted"
    autopilot.update({"mode": "auto", "retry_backoff_seconds": retry_backoff_seconds})
    data["autopilot"] = autopilot
    header = "# The demo: every agent is the built-in scripted agent; the autopilot launches them.\n"
    path.write_text(header + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


DEMO_RUN = "RUN-demo"
DEMO_GOAL = "Improve the calculator"


def has_run(root: Path, run_id: str) -> bool:
    """Whether the demo's database already holds `run_id` (read-only; no database → False)."""
    import sqlite3

    path = root / ".roundtable" / "roundtable.db"
    if not path.is_file():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None
        finally:
            conn.close()
    except sqlite3.Error:
        return False
