"""Install Claude Code and Codex from the npm registry for the real-harness tiers.

Both tiers pin the same versions. The install skips the calling test, with the reason, where npm
or node is missing, the registry cannot be reached, or a binary does not run here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGES = ("@anthropic-ai/claude-code@2.1", "@openai/codex@0.171")
BINARIES = ("claude", "codex")


def install_harnesses(where: Path) -> Path:
    """`node_modules/.bin` of an install of both CLIs into `where` (skips when impossible)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not installed: cannot install Claude Code and Codex")
    try:
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(where), *PACKAGES],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of Claude Code and Codex timed out (registry unreachable?)")
    bin_dir = where / "node_modules" / ".bin"
    if done.returncode != 0 or not all((bin_dir / name).exists() for name in BINARIES):
        pytest.skip(f"npm install of Claude Code and Codex failed (offline?): {done.stderr[-300:]}")
    for name in BINARIES:
        version = subprocess.run([str(bin_dir / name), "--version"], capture_output=True, text=True, timeout=60)
        if version.returncode != 0:
            pytest.skip(f"{name} from npm does not run here: {version.stderr[-300:]}")
    return bin_dir
