"""`make run`: prepare a demo workspace under `demo/` (once) and start the best experience.

The workspace is a small git repository with a few source files, initialised for Roundtable.
Then the operator's console (`roundtable run`) starts on it; scripted agents, when available,
work through the MCP tools so the panes fill and a patch waits for approval.
"""

from __future__ import annotations

import argparse
import importlib.util
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


DEMO_RUN = "RUN-demo"
DEMO_GOAL = "Improve the calculator"


def _has_run(root: Path, run_id: str) -> bool:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("demo"))
    options = parser.parse_args(argv)
    prepare(options.root)
    from roundtable.cli import main as cli_main

    if importlib.util.find_spec("roundtable.tui.app") is not None:
        # One demo run: a second `make run` resumes it instead of starting a duplicate.
        if _has_run(options.root, DEMO_RUN):
            command = ["run", "--root", str(options.root), "--run", DEMO_RUN, "--resume", "--demo"]
        else:
            command = ["run", "--root", str(options.root), "--run", DEMO_RUN, "--goal", DEMO_GOAL, "--demo"]
    elif importlib.util.find_spec("roundtable.cli.start_cmd") is not None:
        command = ["start", "--root", str(options.root)]
    else:
        command = ["table", "--root", str(options.root)]
    sys.argv = ["roundtable", *command]
    cli_main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
