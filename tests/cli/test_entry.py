"""The console script's fast path for the stdio bridge, and its fall-through to click."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from roundtable.entry import _bridge_options


def test_bridge_options_parse_both_spellings() -> None:
    assert _bridge_options(["mcp", "stdio"]) == {"root": ".", "url": "", "socket": "", "agent": "", "tools": ""}
    assert _bridge_options(["mcp", "stdio", "--root", "/p", "--url=http://127.0.0.1:1/mcp", "--agent", "a-1"]) == {
        "root": "/p",
        "url": "http://127.0.0.1:1/mcp",
        "socket": "",
        "agent": "a-1",
        "tools": "",
    }
    assert _bridge_options(["mcp", "stdio", "--tools", "workspace"])["tools"] == "workspace"  # type: ignore[index]


def test_anything_else_falls_through_to_click() -> None:
    assert _bridge_options(["mcp", "inspect"]) is None
    assert _bridge_options(["mcp", "stdio", "--help"]) is None
    assert _bridge_options(["mcp", "stdio", "--root"]) is None
    assert _bridge_options(["mcp", "stdio", "--bogus", "x"]) is None


def test_fast_path_reports_missing_config_and_owner(tmp_path: Path) -> None:
    missing = subprocess.run(
        [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert missing.returncode == 1
    assert "roundtable init" in missing.stderr
    usage = subprocess.run(
        [sys.executable, "-m", "roundtable", "mcp", "stdio", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 2 and "--bogus" in usage.stderr
