"""Helpers shared by the test packages: git in a temp project, agent callers, and credentials for
the authenticated HTTP endpoint (the SDK client with a bearer header), and `eventually` (wait on a
condition with a deadline)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from roundtable import credentials
from roundtable.services.sessions import tokens
from roundtable.tools.context import Caller

AUTHOR = "implementer-1"


def git(root: Path, *args: str) -> str:
    """Run git in `root` with a fixed identity; returns stdout (raises on failure)."""
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def agent(agent_id: str = AUTHOR) -> Caller:
    """An agent caller as the open HTTP endpoint would build it."""
    return Caller("agent", "http", agent_id=agent_id)


def make_git_project(root: Path, files: dict[str, str]) -> Path:
    """Write `files`, ignore `.roundtable/`, `git init` and commit everything."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text(".roundtable/\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


async def credential(runtime: Any, *, agent_id: str = "", operator: bool = False) -> str:
    """Ensure the credential of the operator, of one agent, or (neither) the project's unbound one,
    the way the owner and `connect` do; returns the token (read back from its 0600 file)."""
    principal = tokens.OPERATOR if operator else tokens.AGENT if agent_id else tokens.PROJECT
    await tokens.ensure_credential(runtime.db, runtime.root, tokens.TokenArgs(principal=principal, agent_id=agent_id))
    token = credentials.read_credential(runtime.root, agent_id=agent_id, operator=operator)
    assert token
    return token


async def auth_headers(runtime: Any, *, agent_id: str = "", operator: bool = False) -> dict[str, str]:
    """`Authorization: Bearer …` for that principal's credential."""
    return {"Authorization": f"Bearer {await credential(runtime, agent_id=agent_id, operator=operator)}"}


def sdk_http(url: str, headers: dict[str, str]) -> Any:
    """A Streamable HTTP transport for `mcp.Client` that presents `headers` (the SDK client
    itself takes only a URL or a transport)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(30.0, read=300.0)
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=timeout))


def stored_auth(root: Path, agent_id: str = AUTHOR) -> dict[str, str]:
    """`Authorization` with the credential a running owner keeps for a configured agent
    (`.roundtable/credentials/agents/<id>.token`, written at owner start)."""
    token = credentials.read_credential(root, agent_id=agent_id)
    assert token, f"no credential for {agent_id} under {root} (is an owner running?)"
    return {"Authorization": f"Bearer {token}"}


async def eventually(check: Callable[[], Awaitable[bool]], *, timeout: float = 10.0, what: str = "condition") -> None:
    """Wait until `await check()` is true (polling every 20 ms), or fail after `timeout` seconds:
    a wait on a condition, never a fixed sleep before an assert."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)
