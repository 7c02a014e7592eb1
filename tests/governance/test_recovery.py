"""Crash safety: a process killed between the apply intent and the final commit leaves a
`pending` transaction that only an owner's start recovers (completes or rolls back), with a
`transaction.recovered` event; a plain runtime open leaves it alone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.services.applying.recovery import recover_interrupted
from tests.faults.failpoints import CRASH_EXIT, crash_argv
from tests.governance.conftest import Flow, make_patch

pytestmark = pytest.mark.anyio

TWO_FILES = make_patch("src/app.py", "print('v1')", "print('v2')") + make_patch("README.txt", "hello", "bye")


def crash(repo: Path, point: str, tool: str, key: str, value: str) -> None:
    """A direct-mode `roundtable mcp call` in a child process whose failpoint hook kills it at `point`."""
    argv = crash_argv(point, "mcp", "call", "--root", str(repo), "--tool", tool, "--args", json.dumps({key: value}))
    proc = subprocess.run(argv, capture_output=True, timeout=60)
    assert proc.returncode == CRASH_EXIT, proc.stderr.decode()


async def ready_two_files(flow: Flow) -> str:
    await flow.task()
    await flow.claim("README.txt")
    proposal = await flow.ready(TWO_FILES)
    return str(proposal["id"])


async def tx_row(rt: Runtime) -> dict[str, object]:
    async with rt.db.read() as r:
        row = await r.fetchone("SELECT * FROM transactions ORDER BY created_at DESC LIMIT 1")
    assert row is not None
    return dict(row)


async def recovered_events(rt: Runtime) -> list[dict[str, object]]:
    async with rt.db.read() as r:
        rows = await r.fetchall("SELECT payload_json FROM events WHERE type = 'transaction.recovered' ORDER BY id")
    return [json.loads(row[0]) for row in rows]


async def test_crash_after_files_is_completed_by_owner_start(flow: Flow, repo: Path) -> None:
    pid = await ready_two_files(flow)
    await flow.rt.close()
    crash(repo, "apply:files", "patch.apply", "proposal_id", pid)
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"

    # A plain open (direct-mode call, another process) recovers nothing.
    rt = await Runtime.open(repo)
    try:
        assert (await tx_row(rt))["status"] == "pending"
        with pytest.raises(ToolError, match="another apply is in progress"):
            await rt.call("patch.apply", {"proposal_id": pid})
    finally:
        await rt.close()

    lines: list[str] = []
    async with Owner(repo, http=False, socket=False, chair=False, log=lines.append) as owner:
        row = await tx_row(owner.runtime)
        assert row["status"] == "applied"
        events = await recovered_events(owner.runtime)
        assert events[-1]["outcome"] == "completed"
        async with owner.runtime.db.read() as r:
            assert await r.scalar("SELECT status FROM proposals WHERE id = ?", (pid,)) == "accepted"
    assert any("completed" in line for line in lines)
    assert (repo / "README.txt").read_text() == "bye\n"


async def test_crash_after_intent_nothing_applied(flow: Flow, repo: Path) -> None:
    pid = await ready_two_files(flow)
    await flow.rt.close()
    crash(repo, "apply:intent", "patch.apply", "proposal_id", pid)
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
    rt = await Runtime.open(repo)
    try:
        row = await tx_row(rt)
        assert row["status"] == "pending"
        assert (repo / str(row["rollback_patch_path"]) / "preimage" / "README.txt").read_text() == "hello\n"
        lines = await recover_interrupted(rt)
        assert len(lines) == 1 and "not_applied" in lines[0]
        assert (await tx_row(rt))["status"] == "failed"
        # The proposal is still open and can be applied now.
        out = await rt.call("patch.apply", {"proposal_id": pid})
        assert out["transaction"]["status"] == "applied"
    finally:
        await rt.close()


async def test_crash_mid_apply_partial_files_rolled_back(flow: Flow, repo: Path) -> None:
    pid = await ready_two_files(flow)
    await flow.rt.close()
    crash(repo, "apply:intent", "patch.apply", "proposal_id", pid)
    # As if git had written one file of two when the machine died.
    (repo / "README.txt").write_text("bye\n")
    rt = await Runtime.open(repo)
    try:
        lines = await recover_interrupted(rt)
        assert "rolled_back" in lines[0]
        assert (repo / "README.txt").read_text() == "hello\n"
        assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
        assert (await tx_row(rt))["status"] == "rolled_back"
        assert (await recovered_events(rt))[-1]["outcome"] == "rolled_back"
        # The apply never took effect: the proposal stays open and applies cleanly now.
        out = await rt.call("patch.apply", {"proposal_id": pid})
        assert out["proposal"]["status"] == "accepted"
        assert (repo / "README.txt").read_text() == "bye\n"
    finally:
        await rt.close()


async def test_foreign_edit_is_left_for_the_operator(flow: Flow, repo: Path) -> None:
    pid = await ready_two_files(flow)
    await flow.rt.close()
    crash(repo, "apply:intent", "patch.apply", "proposal_id", pid)
    (repo / "README.txt").write_text("someone else\n")
    rt = await Runtime.open(repo)
    try:
        lines = await recover_interrupted(rt)
        assert "needs_attention" in lines[0]
        assert (repo / "README.txt").read_text() == "someone else\n"
        assert (await tx_row(rt))["status"] == "failed"
    finally:
        await rt.close()


async def test_crash_during_rollback_is_finished(flow: Flow, repo: Path) -> None:
    pid = await ready_two_files(flow)
    out = await flow.call("patch.apply", {"proposal_id": pid})
    tx_id = out["transaction"]["id"]
    await flow.rt.close()
    crash(repo, "rollback:intent", "patch.rollback", "transaction_id", tx_id)
    rt = await Runtime.open(repo)
    try:
        assert (await tx_row(rt))["status"] == "rolling_back"
        lines = await recover_interrupted(rt)
        assert "rollback_not_started" in lines[0]
        assert (await tx_row(rt))["status"] == "applied"
        assert await recover_interrupted(rt) == []
        await rt.call("patch.rollback", {"transaction_id": tx_id})
        assert (repo / "README.txt").read_text() == "hello\n"
    finally:
        await rt.close()


async def test_rollback_refuses_when_files_changed(flow: Flow, repo: Path) -> None:
    pid = await ready_two_files(flow)
    out = await flow.call("patch.apply", {"proposal_id": pid})
    (repo / "README.txt").write_text("edited after apply\n")
    with pytest.raises(ToolError, match=r"files changed since the apply: README\.txt"):
        await flow.call("patch.rollback", {"transaction_id": out["transaction"]["id"]})
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    with pytest.raises(ToolError, match="not found"):
        await flow.call("patch.rollback", {"transaction_id": "TX-nope"})
