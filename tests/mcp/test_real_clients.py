"""Third-party MCP clients against the owner: the MCP conformance suite's scenarios for the
resources, prompts, logging and completion surface (`resources-list`, `prompts-list`, `logging-set-level`,
`completion-complete`) and the Inspector CLI listing resources, templates and prompts over HTTP
and through the stdio bridge in every protocol era.

Marked `real_client` and skipped unless selected (`pytest -m real_client tests/mcp`): the first
run installs `@modelcontextprotocol/conformance@0.1.16` with Node 22 and the Inspector from npm.
The suite cannot send a bearer header, so its owner runs with `mcp.auth: none` (anonymous,
read-only), which is all these scenarios need.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from roundtable.owner import Owner
from tests.bridge.test_real_clients import _inspector, _run

pytestmark = [pytest.mark.anyio, pytest.mark.real_client]
CONFORMANCE = "@modelcontextprotocol/conformance@0.1.16"
CACHE = Path(os.environ.get("ROUNDTABLE_TEST_NPM_CACHE", "/tmp/roundtable-test-npm")) / "conformance-0.1.16"
SCENARIOS = ("resources-list", "prompts-list", "logging-set-level", "completion-complete")


async def _conformance() -> Path:
    """The suite's CLI with Node 22 beside it (the system Node is older), installed once."""
    binary = CACHE / "node_modules" / ".bin" / "conformance"
    if binary.exists():
        return binary
    if shutil.which("npm") is None:
        pytest.skip("npm not installed: cannot fetch the MCP conformance suite")
    CACHE.mkdir(parents=True, exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        "npm", "install", "--silent", "--no-audit", "--no-fund", CONFORMANCE, "node@22", cwd=CACHE, stdout=-1, stderr=-1
    )
    try:
        _out, err = await asyncio.wait_for(proc.communicate(), 600)
    except TimeoutError:
        proc.kill()
        pytest.skip("npm install of the conformance suite timed out (registry unreachable?)")
    if proc.returncode != 0 or not binary.exists():
        pytest.skip(f"npm install of the conformance suite failed (offline?): {err.decode()[-300:]}")
    return binary


def _open_endpoint(project: Path) -> None:
    path = project / ".roundtable" / "config.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"(?m)^(\s*)auth: token", r"\1auth: none", text), encoding="utf-8")


async def test_conformance_scenarios(project: Path) -> None:
    binary = await _conformance()
    _open_endpoint(project)
    env = {**os.environ, "PATH": f"{binary.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        for scenario in SCENARIOS:
            proc = await asyncio.create_subprocess_exec(
                str(binary), "server", "--url", owner.http_url, "--scenario", scenario, stdout=-1, stderr=-1, env=env
            )
            out, err = await asyncio.wait_for(proc.communicate(), 180)
            text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode() + err.decode())
            assert "Passed: 1/1, 0 failed" in text, f"{scenario}:\n{text[-2000:]}"


async def test_inspector_lists_resources_and_prompts(project: Path) -> None:
    binary = await _inspector()
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        bridge = [sys.executable, "-m", "roundtable", "mcp", "stdio", "--root", str(project), "--url", owner.http_url]
        for era in ("legacy", "auto", "modern"):
            listed = await _run(binary, *bridge, "--protocol-era", era, "--method", "resources/list")
            assert "roundtable://doc/AGENTS.ROUNDTABLE.md" in {r["uri"] for r in listed["resources"]}
            templates = await _run(binary, *bridge, "--protocol-era", era, "--method", "resources/templates/list")
            assert "roundtable://turns/{run_id}" in {t["uriTemplate"] for t in templates["resourceTemplates"]}
            prompts = await _run(binary, *bridge, "--protocol-era", era, "--method", "prompts/list")
            assert [p["name"] for p in prompts["prompts"]][:5] == [
                "implementer",
                "reviewer",
                "tester",
                "security",
                "architect",
            ]
            got = await _run(
                binary, *bridge, "--protocol-era", era, "--method", "prompts/get", "--prompt-name", "reviewer"
            )
            assert "You are a reviewer" in got["messages"][0]["content"]["text"]
            read = await _run(
                binary, *bridge, "--protocol-era", era, "--method", "resources/read", "--uri", "roundtable://table"
            )
            assert "runs" in json.loads(read["contents"][0]["text"])
