"""`roundtable tokens`: hash-only storage, and the HTTP guard resolving tokens to callers."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.server.guard import db_token_resolver
from roundtable.services.coordination.agents import sync_agents

pytestmark = pytest.mark.anyio


def rt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roundtable", *args], capture_output=True, text=True, timeout=60)


async def test_create_list_revoke_and_resolve(project: Path) -> None:
    made = rt("tokens", "create", "--root", str(project), "--agent", "implementer-1")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    assert token.startswith("rttok_") and len(token) > 40
    op = rt("tokens", "create", "--root", str(project), "--operator").stdout.strip()
    con = sqlite3.connect(project / ".roundtable/roundtable.db")
    rows = con.execute("SELECT id, token_sha256, principal, agent_id FROM access_tokens ORDER BY created_at").fetchall()
    con.close()
    assert [r[2] for r in rows] == ["agent", "operator"]
    assert rows[0][1] == hashlib.sha256(token.encode()).hexdigest()
    assert token not in (project / ".roundtable/roundtable.db").read_bytes().decode("latin-1")
    listing = rt("tokens", "list", "--root", str(project))
    assert token not in listing.stdout and rows[0][0] in listing.stdout

    runtime = await Runtime.open(project)
    try:
        resolve = db_token_resolver(runtime)
        # An agent token resolves only while its agent is registered and enabled.
        assert await resolve(token) is None
        await sync_agents(runtime)
        agent = await resolve(token)
        assert agent is not None and agent.kind == "agent" and agent.agent_id == "implementer-1"
        operator = await resolve(op)
        assert operator is not None and operator.is_operator
        assert await resolve("rttok_wrong") is None
        assert rt("tokens", "revoke", "--root", str(project), rows[0][0]).returncode == 0
        assert await resolve(token) is None
    finally:
        await runtime.close()


def test_usage_errors(project: Path) -> None:
    both = rt("tokens", "create", "--root", str(project), "--agent", "a", "--operator")
    assert both.returncode == 2
    missing = rt("tokens", "revoke", "--root", str(project), "TOK-nope")
    assert missing.returncode == 1 and "not found" in missing.stderr
    bad = rt("tokens", "create", "--root", str(project), "--agent", "../x")
    assert bad.returncode == 1 and "valid --agent id" in bad.stderr


def test_empty_list_says_so(project: Path) -> None:
    listing = rt("tokens", "list", "--root", str(project))
    assert listing.returncode == 0 and listing.stdout.startswith("no tokens")
