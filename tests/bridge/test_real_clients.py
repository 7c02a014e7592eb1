"""The MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12, from npm) drives the stdio bridge
in each protocol era it offers: `legacy`, `auto` and `modern`.

Marked `real_client` and skipped unless selected (`pytest -m real_client tests/bridge`): the first
run downloads the Inspector (~20 s), which the default `make test` should not pay. It skips with
the reason where npm is missing or the registry cannot be reached. (The SDK's own client over
stdio in all three modes runs in the default suite: tests/transports/test_stdio_eras.py.)
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from roundtable.owner import Owner
from roundtable.tools.registry import get_registry

pytestmark = [pytest.mark.anyio, pytest.mark.real_client]
INSPECTOR = "@modelcontextprotocol/inspector@2.12"
CACHE = Path(os.environ.get("ROUNDTABLE_TEST_NPM_CACHE", "/tmp/roundtable-test-npm")) / "inspector-2.12"


async def _inspector() -> Path:
    """The Inspector's CLI entry, installed once into a cache directory."""
    binary = CACHE / "node_modules" / ".bin" / "mcp-inspector"
    if binary.exists():
        return binary
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node not installed: cannot fetch the MCP Inspector")
    CACHE.mkdir(parents=True, exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        "npm", "install", "--silent", "--no-audit", "--no-fund", INSPECTOR, cwd=CACHE, stdout=-1, stderr=-1
    )
    try:
        _out, err = await asyncio.wait_for(proc.communicate(), 300)
    except TimeoutError:
        proc.kill()
        pytest.skip("npm install of the MCP Inspector timed out (registry unreachable?)")
    if proc.returncode != 0 or not binary.exists():
        pytest.skip(f"npm install of the MCP Inspector failed (offline?): {err.decode()[-300:]}")
    return binary


async def _run(binary: Path, *args: str) -> dict:
    proc = await asyncio.create_subprocess_exec(str(binary), "--cli", *args, stdout=-1, stderr=-1)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-2000:]
    return json.loads(out)


@pytest.mark.parametrize("era", ["legacy", "auto", "modern"])
async def test_inspector_cli_through_the_bridge(project: Path, era: str) -> None:
    binary = await _inspector()
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        bridge = [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", str(project), "--url", owner.http_url]
        listed = await _run(binary, *bridge, "--protocol-era", era, "--method", "tools/list")
        assert len(listed["tools"]) == len(get_registry().exposed())
        called = await _run(
            binary, *bridge, "--protocol-era", era, "--method", "tools/call", "--tool-name", "table_get_state"
        )
        assert called["isError"] is False
        assert "runs" in json.loads(called["content"][0]["text"])
        # The 2026-07-28 era stamps serverInfo into every result's _meta; the handshake era does not.
        modern = "io.modelcontextprotocol/serverInfo" in called.get("_meta", {})
        assert modern is (era != "legacy")
