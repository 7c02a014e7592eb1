"""kill -9 of the owner process (`roundtable mcp serve` as a child) in the middle of work,
then a restart (an in-process `Owner`, which recovers under its lock):

- mid-apply, deterministically at the two crash points the apply service offers
  (a failpoint hook installed by `tests/faults/crash_entry.py`: after the intent commit, after
  the files were written), and
  with a real SIGKILL at a random moment while a large patch is being applied;
- mid-claim, with socket clients hammering `resource.claim`/`resource.release`.

After each: `PRAGMA integrity_check` is ok; the touched files are entirely at their before- or
entirely at their after-state; no transaction is left `pending`/`rolling_back`; an interrupted
apply has its `transaction.recovered` event; every claim a client was told about exists; claim
rows and `claim.created` events agree and fences are unique.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import random
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from bench.ownerproc import CallFailed, OwnerProcess, SocketClient
from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.services.applying import failpoints
from tests.faults.failpoints import CRASH_EXIT, ENTRY
from tests.faults.helpers import AUTHOR, agent, make_git_project, ready_proposal

pytestmark = pytest.mark.anyio

FILES = 30
LINES = 300


def _content(i: int, version: int) -> str:
    return "".join(f"value_{i}_{n} = {version}\n" for n in range(LINES))


def _patch(version: int) -> str:
    out = []
    for i in range(FILES):
        path = f"src/m{i:02d}.py"
        old, new = _content(i, version).splitlines(True), _content(i, version + 1).splitlines(True)
        out.append(f"diff --git a/{path} b/{path}\n")
        out.extend(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))
    return "".join(out)


def _tree_version(root: Path) -> set[int | None]:
    """Which version each touched file is at (None: neither a known version nor whole)."""
    seen: set[int | None] = set()
    for i in range(FILES):
        text = (root / "src" / f"m{i:02d}.py").read_text()
        version = int(text.split(" = ", 2)[1].split("\n", 1)[0])
        seen.add(version if text == _content(i, version) else None)
    return seen


@pytest.fixture
def repo(project: Path) -> Path:
    return make_git_project(project, {f"src/m{i:02d}.py": _content(i, 0) for i in range(FILES)})


async def _prepare(root: Path, version: int) -> str:
    async with await Runtime.open(root) as rt:
        async with rt.db.read() as r:
            active = [row[0] for row in await r.fetchall("SELECT id FROM claims WHERE status = 'active'")]
        for claim_id in active:
            await rt.call("resource.release", {"claim_id": claim_id, "actor_id": AUTHOR}, agent())
        return await ready_proposal(rt, _patch(version), [f"src/m{i:02d}.py" for i in range(FILES)])


async def _restart_and_check(root: Path, before_kill: dict[str, str]) -> dict[str, Any]:
    """Restart as the owner; check the store and the tree; return what recovery did."""
    lines: list[str] = []
    async with Owner(root, http=False, socket=False, chair=False, log=lines.append) as owner:
        async with owner.runtime.db.read() as r:
            assert await r.scalar("PRAGMA integrity_check") == "ok"
            assert await r.scalar("SELECT count(*) FROM transactions WHERE status IN ('pending', 'rolling_back')") == 0
            recovered = [
                json.loads(row[0])
                for row in await r.fetchall("SELECT payload_json FROM events WHERE type = 'transaction.recovered'")
            ]
            statuses = {str(row[0]): str(row[1]) for row in await r.fetchall("SELECT id, status FROM transactions")}
    interrupted = [tx for tx, status in before_kill.items() if status in ("pending", "rolling_back")]
    assert sorted(e["transaction_id"] for e in recovered if e["transaction_id"] in interrupted) == sorted(interrupted)
    versions = _tree_version(root)
    assert len(versions) == 1 and None not in versions, f"half-applied tree: {versions}"
    return {"recovered": recovered, "statuses": statuses, "version": versions.pop(), "lines": lines}


async def _transactions(root: Path) -> dict[str, str]:
    async with await Runtime.open(root) as rt, rt.db.read() as r:
        return {str(row[0]): str(row[1]) for row in await r.fetchall("SELECT id, status FROM transactions")}


class CrashingOwner(OwnerProcess):
    """`roundtable mcp serve` through the test entry script: the owner dies at `point`."""

    def __init__(self, root: Path, point: str) -> None:
        super().__init__(root)
        self.entry = (str(ENTRY), point)


@pytest.mark.parametrize(
    ("point", "outcome", "version"),
    [(failpoints.APPLY_INTENT, "not_applied", 0), (failpoints.APPLY_FILES, "completed", 1)],
)
async def test_owner_dies_at_an_apply_crash_point(repo: Path, point: str, outcome: str, version: int) -> None:
    proposal_id = await _prepare(repo, 0)
    owner = CrashingOwner(repo, point).start()
    try:
        with pytest.raises((ConnectionError, CallFailed, json.JSONDecodeError)):
            await SocketClient(owner.socket_path).call("patch.apply", {"proposal_id": proposal_id})
        assert owner.proc is not None and owner.proc.wait(10) == CRASH_EXIT
    finally:
        owner.kill()
    pending = await _transactions(repo)
    assert list(pending.values()) == ["pending"]
    result = await _restart_and_check(repo, pending)
    assert [e["outcome"] for e in result["recovered"]] == [outcome]
    assert result["version"] == version
    assert any(outcome in line for line in result["lines"])


def _kill_when_pending(db: Path, owner: OwnerProcess, deadline: float, delay: float = 0.0) -> bool:
    """SIGKILL the owner the moment an apply intent (`pending` row) is visible; False if the
    apply finished (or never started) before we saw one."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)
    try:
        while time.monotonic() < deadline:
            try:
                row = conn.execute("SELECT 1 FROM transactions WHERE status = 'pending'").fetchone()
            except sqlite3.OperationalError:
                row = None
            if row:
                time.sleep(delay)
                owner.kill()
                return True
            if conn.execute("SELECT count(*) FROM transactions WHERE status = 'applied'").fetchone()[0]:
                return False
            time.sleep(0.0005)
    finally:
        conn.close()
    return False


@pytest.mark.parametrize("when", ["intent visible", "intent + 8 ms", "random moment"])
async def test_owner_sigkilled_during_a_large_apply(repo: Path, when: str) -> None:
    proposal_id = await _prepare(repo, 0)
    owner = OwnerProcess(repo).start()
    try:
        client = SocketClient(owner.socket_path)
        call = asyncio.ensure_future(client.call("patch.apply", {"proposal_id": proposal_id}))
        if when == "random moment":
            await asyncio.sleep(random.Random(8).uniform(0.02, 0.3))
            owner.kill()
        else:
            db = repo / ".roundtable" / "roundtable.db"
            delay = 0.008 if "8 ms" in when else 0.0
            await asyncio.to_thread(_kill_when_pending, db, owner, time.monotonic() + 20, delay)
            owner.kill()
        outcome = (await asyncio.gather(call, return_exceptions=True))[0]
    finally:
        owner.kill()
    acked = not isinstance(outcome, BaseException)
    before = await _transactions(repo)
    result = await _restart_and_check(repo, before)
    print(f"kill at {when}: before restart {before}, recovery {[e['outcome'] for e in result['recovered']]}")
    if when == "intent visible":
        assert list(before.values()) == ["pending"], "the kill did not land between intent and final commit"
    if acked:  # an acknowledged apply survives the crash
        assert result["version"] == 1
    if "pending" in before.values():
        assert next(e["outcome"] for e in result["recovered"]) in ("completed", "not_applied", "rolled_back")
        assert result["statuses"][next(iter(before))] in ("applied", "failed", "rolled_back")


async def test_owner_sigkilled_while_claims_are_hammered(repo: Path) -> None:
    rng = random.Random(3)
    async with await Runtime.open(repo) as rt:
        task_id = (await rt.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
    acked: dict[str, str] = {}
    for _round in range(2):
        owner = OwnerProcess(repo).start()
        client = SocketClient(owner.socket_path)
        stop = time.monotonic() + 5

        async def hammer(worker: int, client: SocketClient = client, stop: float = stop) -> None:
            while time.monotonic() < stop:
                path = f"src/m{rng.randrange(FILES):02d}.py"
                args = {
                    "resource_type": "file",
                    "claim_type": "write",
                    "task_id": task_id,
                    "path": path,
                    "agent_id": f"implementer-{worker}",
                }
                try:
                    out = await client.call("resource.claim", args)
                except CallFailed:
                    continue  # a conflict: expected
                except (ConnectionError, OSError, json.JSONDecodeError):
                    return  # the owner is gone
                acked[out["claim"]["id"]] = out["claim"]["resource_id"]
                try:
                    await client.call(
                        "resource.release", {"claim_id": out["claim"]["id"], "actor_id": f"implementer-{worker}"}
                    )
                except (CallFailed, ConnectionError, OSError, json.JSONDecodeError):
                    return

        workers = [asyncio.ensure_future(hammer(w)) for w in range(1, 9)]
        await asyncio.sleep(rng.uniform(0.3, 0.8))
        assert owner.proc is not None
        owner.proc.send_signal(signal.SIGKILL)
        owner.proc.wait(10)
        await asyncio.gather(*workers)
        assert acked, "no claim was granted before the kill"
        async with Owner(repo, http=False, socket=False, chair=False) as restarted:
            async with restarted.runtime.db.read() as r:
                assert await r.scalar("PRAGMA integrity_check") == "ok"
                rows = {str(a): str(b) for a, b in await r.fetchall("SELECT id, resource_id FROM claims")}
                created = await r.fetchall(
                    "SELECT json_extract(payload_json, '$.claim_id'), json_extract(payload_json, '$.fence')"
                    " FROM events WHERE type = 'claim.created'"
                )
                released = await r.fetchall(
                    "SELECT json_extract(payload_json, '$.claim_id') FROM events WHERE type = 'claim.released'"
                )
                statuses = {str(a): str(b) for a, b in await r.fetchall("SELECT id, status FROM claims")}
                orphans = await r.scalar(
                    "SELECT count(*) FROM claims WHERE resource_id NOT IN (SELECT id FROM resources)"
                )
                counter = await r.scalar("SELECT value FROM counters WHERE name LIKE '%fence%'")
        assert all(rows.get(c) == res for c, res in acked.items()), "an acknowledged claim was lost"
        assert sorted(str(c) for c, _ in created) == sorted(rows), "claim rows and claim.created events disagree"
        fences = [int(f) for _, f in created]
        assert len(set(fences)) == len(fences) and (counter is None or int(counter) >= max(fences))
        assert all(statuses[str(c)] == "released" for (c,) in released)
        assert orphans == 0
