"""Stale-claim reconciliation: `claims.reconcile`,
`roundtable claims reconcile`, and the suspension step of `roundtable resume`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roundtable import clock
from roundtable.cli import cli
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.coordination import claims as service
from roundtable.services.sessions import records as sessions
from tests.claims.conftest import Env, write_tree
from tests.sessions.helpers import make_task


async def _status(env: Env, claim_id: str) -> str:
    async with env.runtime.db.read() as r:
        return str(await r.scalar("SELECT status FROM claims WHERE id = ?", (claim_id,)))


async def _events(runtime: Runtime, kind: str) -> list[Any]:
    async with runtime.db.read() as r:
        return await r.fetchall(
            "SELECT run_id, actor_id, task_id, payload_json FROM events WHERE type = ? ORDER BY id", (kind,)
        )


@pytest.mark.anyio
async def test_changed_file_is_suspended_unchanged_stays(env: Env) -> None:
    changed = (await env.claim("implementer-1", path="src/a.py"))["claim"]
    same = (await env.claim("implementer-1", "exclusive", path="src/b.py"))["claim"]
    assert changed["base_hash"] and same["base_hash"]
    (env.root / "src" / "a.py").write_text("def f():\n    return 2\n")

    suspended = await service.reconcile(env.runtime.db, env.root, service.ReconcileArgs(run_id="R-label"))

    assert [(c.id, c.status, c.agent_id) for c in suspended] == [(changed["id"], "suspended", "implementer-1")]
    assert await _status(env, changed["id"]) == "suspended"
    assert await _status(env, same["id"]) == "active"
    events = await _events(env.runtime, "claim.suspended")
    assert len(events) == 1
    run_id, actor, task_id, payload_json = events[0]
    payload = json.loads(payload_json)
    assert (run_id, actor, task_id) == ("R-label", "system", env.task_id)
    assert payload["claim_id"] == changed["id"] and payload["resource_id"] == "file:src/a.py"
    assert payload["status"] == "suspended" and payload["reason"].startswith("base hash changed")
    assert changed["base_hash"] in payload["reason"]
    # The refreshed hash is stored on the resource; a second pass finds nothing more to do.
    async with env.runtime.db.read() as r:
        current = await r.scalar("SELECT current_hash FROM resources WHERE id = 'file:src/a.py'")
    assert current and current != changed["base_hash"] and current in payload["reason"]
    assert await service.reconcile(env.runtime.db, env.root) == []
    assert len(await _events(env.runtime, "claim.suspended")) == 1


@pytest.mark.anyio
async def test_read_review_missing_and_hashless_claims_are_untouched(env: Env) -> None:
    read = (await env.claim("implementer-1", "read", path="src/a.py"))["claim"]
    review = (await env.claim("reviewer-1", "review", path="src/a.py"))["claim"]
    hashless = (await env.claim("implementer-1", path="src/new.py"))["claim"]  # no file yet: no base hash
    gone = (await env.claim("implementer-1", path="srcx/d.py"))["claim"]
    expired = (await env.claim("implementer-2", path="src/b.py"))["claim"]
    assert hashless["base_hash"] == ""
    async with env.runtime.db.write() as tx:
        await tx.execute(
            "UPDATE claims SET expires_at = ? WHERE id = ?", (clock.format_ns(clock.now_ns() - 10**9), expired["id"])
        )
    (env.root / "src" / "a.py").write_text("changed\n")
    (env.root / "src" / "b.py").write_text("changed\n")
    (env.root / "src" / "new.py").write_text("now it exists\n")
    (env.root / "srcx" / "d.py").unlink()  # a missing file hashes to "": the claim stays

    before = await env.snapshot()
    assert await service.reconcile(env.runtime.db, env.root) == []
    claims_after, _resources, events_after = await env.snapshot()
    assert claims_after == before[0] and events_after == before[2]
    for claim in (read, review, hashless, gone):
        assert await _status(env, claim["id"]) == "active"


@pytest.mark.anyio
async def test_agent_filter_and_actor(env: Env) -> None:
    mine = (await env.claim("implementer-1", path="src/a.py"))["claim"]
    theirs = (await env.claim("implementer-2", path="src/b.py"))["claim"]
    (env.root / "src" / "a.py").write_text("1\n")
    (env.root / "src" / "b.py").write_text("2\n")

    first = await service.reconcile(
        env.runtime.db, env.root, service.ReconcileArgs(agent_id="implementer-2", actor_id="implementer-2")
    )
    assert [c.id for c in first] == [theirs["id"]]
    assert await _status(env, mine["id"]) == "active"
    assert [row[1] for row in await _events(env.runtime, "claim.suspended")] == ["implementer-2"]
    second = await service.reconcile(env.runtime.db, env.root, service.ReconcileArgs(agent_id="implementer-9"))
    assert second == []
    assert [c.id for c in await service.reconcile(env.runtime.db, env.root)] == [mine["id"]]


@pytest.mark.anyio
async def test_directory_and_symbol_claims(env: Env) -> None:
    pkg = (await env.claim("implementer-1", resource_type="directory", path="src/pkg"))["claim"]
    srcx = (await env.claim("implementer-1", resource_type="directory", path="srcx"))["claim"]
    m = (await env.claim("implementer-2", resource_type="symbol", path="src/a.py", symbol="K.m"))["claim"]
    n = (await env.claim("implementer-2", resource_type="symbol", path="src/a.py", symbol="K.n"))["claim"]
    assert all(c["base_hash"] for c in (pkg, srcx, m, n))
    (env.root / "src" / "pkg" / "added.py").write_text("new = 1\n")  # a new file changes the directory
    # Two lines added above the class shift both methods (re-indexing finds them again) and
    # K.m's body changes; K.n's text is the same, so only K.m is stale.
    source = (env.root / "src" / "a.py").read_text()
    source = source.replace("def f():\n", "import os\n\ndef f():\n").replace(
        "    def m(self):\n        pass\n", "    def m(self):\n        return os.sep\n"
    )
    (env.root / "src" / "a.py").write_text(source)

    suspended = await service.reconcile(env.runtime.db, env.root)

    assert {c.id for c in suspended} == {pkg["id"], m["id"]}
    assert await _status(env, srcx["id"]) == "active"
    assert await _status(env, n["id"]) == "active"


@pytest.mark.anyio
async def test_suspended_claim_no_longer_covers(env: Env) -> None:
    file_claim = (await env.claim("implementer-1", path="src/a.py"))["claim"]
    await env.claim("implementer-1", resource_type="symbol", path="src/a.py", symbol="f")
    now = clock.now()
    async with env.runtime.db.read() as r:
        assert set(await service.covering_write_claims(r, "implementer-1", ["src/a.py"], now)) == {"src/a.py"}
        assert len(await service.symbol_write_claims(r, "implementer-1", "src/a.py", now)) == 1
    assert (await env.runtime.call("proposal.create", _proposal(env, "1", "2")))["proposal"]["id"]
    (env.root / "src" / "a.py").write_text("def f():\n    return 3\n")
    assert len(await service.reconcile(env.runtime.db, env.root)) == 2
    now = clock.now()
    async with env.runtime.db.read() as r:
        assert await service.covering_write_claims(r, "implementer-1", ["src/a.py"], now) == {}
        assert await service.symbol_write_claims(r, "implementer-1", "src/a.py", now) == []
    # And the suspended claims can no longer back a proposal touching the file.
    with pytest.raises(ToolError, match=r"unclaimed affected resource: file:src/a\.py"):
        await env.runtime.call("proposal.create", _proposal(env, "3", "4"))
    assert await _status(env, file_claim["id"]) == "suspended"


def _proposal(env: Env, old: str, new: str) -> dict[str, Any]:
    # Against the full SOURCE a hunk needs its trailing context (line 3 is blank); against the
    # two-line file written later it must end at the end of the file.
    counts, tail = ("-1,3 +1,3", " \n") if old == "1" else ("-1,2 +1,2", "")
    patch = f"--- a/src/a.py\n+++ b/src/a.py\n@@ {counts} @@\n def f():\n-    return {old}\n+    return {new}\n{tail}"
    return {
        "task_id": env.task_id,
        "agent_id": "implementer-1",
        "title": "t",
        "summary_md": "s",
        "affected_resources": [],
        "risk": "normal",
        "patch": patch,
    }


async def _setup(root: Path, *, session: bool = False) -> dict[str, str]:
    runtime = await Runtime.open(root)
    try:
        run_id, task_id = await make_task(runtime)
        args = {"resource_type": "file", "claim_type": "write", "task_id": task_id}
        a = await runtime.call("resource.claim", {**args, "path": "src/a.py", "agent_id": "implementer-1"})
        b = await runtime.call("resource.claim", {**args, "path": "src/b.py", "agent_id": "implementer-1"})
        c = await runtime.call("resource.claim", {**args, "path": "srcx/d.py", "agent_id": "implementer-2"})
        if session:
            async with runtime.db.write() as tx:
                await sessions.register(
                    tx,
                    sessions.SessionDraft(
                        id="S-1", agent_id="implementer-1", run_id=run_id, adapter="codex", working_directory="/w"
                    ),
                )
        return {"run": run_id, "a": a["claim"]["id"], "b": b["claim"]["id"], "c": c["claim"]["id"]}
    finally:
        await runtime.close()


async def _all_events(root: Path, kind: str) -> list[Any]:
    runtime = await Runtime.open(root)
    try:
        return await _events(runtime, kind)
    finally:
        await runtime.close()


def test_claims_reconcile_cli(project: Path) -> None:
    write_tree(project)
    ids = asyncio.run(_setup(project))
    (project / "src" / "a.py").write_text("changed\n")
    (project / "srcx" / "d.py").write_text("changed\n")
    runner = CliRunner()
    root = ["--root", str(project)]

    only = runner.invoke(cli, ["claims", "reconcile", *root, "--agent", "implementer-2", "--run", "R-x"])
    assert only.exit_code == 0, only.output
    assert only.output.splitlines() == [f"{ids['c']} implementer-2 suspended"]
    rest = runner.invoke(cli, ["claims", "reconcile", *root, "--json", "--actor", "operator"])
    assert rest.exit_code == 0, rest.output
    assert [(c["id"], c["status"]) for c in json.loads(rest.output)["claims"]] == [(ids["a"], "suspended")]
    assert runner.invoke(cli, ["claims", "reconcile", *root]).output == ""

    events = asyncio.run(_all_events(project, "claim.suspended"))
    assert [(e[0], e[1]) for e in events] == [("R-x", "system"), ("", "operator")]
    listed = runner.invoke(cli, ["claims", "list", *root, "--status", "active"])
    assert [line.split()[0] for line in listed.output.splitlines()] == [ids["b"]]


def test_resume_suspends_stale_claims(project: Path) -> None:
    write_tree(project)
    ids = asyncio.run(_setup(project, session=True))
    runner = CliRunner()
    root = ["--root", str(project)]
    clean = runner.invoke(cli, ["resume", "--agent", "implementer-1", *root])
    assert clean.exit_code == 0, clean.output
    assert "Stale claims suspended on resume:" not in clean.output

    (project / "src" / "a.py").write_text("changed\n")
    (project / "srcx" / "d.py").write_text("changed\n")  # another agent's claim: not this resume's business
    out = runner.invoke(cli, ["resume", "--session", "S-1", *root])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    at = lines.index("Stale claims suspended on resume:")
    assert lines[at - 1] == "" and lines[at + 1 :] == [f"- file:src/a.py ({ids['a']})"]
    # The briefing was built after the suspension: only the unchanged claim is still listed.
    claims_at = lines.index("Your active claims:")
    assert lines[claims_at + 1 : claims_at + 3] == ["- file:src/b.py", ""]

    events = asyncio.run(_all_events(project, "claim.suspended"))
    assert [(e[0], e[1], json.loads(e[3])["claim_id"]) for e in events] == [(ids["run"], "implementer-1", ids["a"])]
    again = runner.invoke(cli, ["resume", "--agent", "implementer-1", *root])
    assert again.exit_code == 0 and "Stale claims suspended on resume:" not in again.output
    listed = runner.invoke(cli, ["claims", "list", *root, "--agent", "implementer-2"])
    assert listed.output.split()[3] == "active"
