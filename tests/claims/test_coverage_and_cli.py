"""covering_write_claims / symbol_write_claims / readable_by_claim, identity helpers, and the
`claims` CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from roundtable import clock
from roundtable.cli import cli
from roundtable.runtime import Runtime
from roundtable.services.coordination import claims as service
from tests.claims.conftest import Env, write_tree


@pytest.mark.anyio
async def test_covering_write_claims(env: Env) -> None:
    file_claim = await env.claim("implementer-1", path="src/a.py")
    dir_claim = await env.claim("implementer-1", resource_type="directory", path="src/pkg")
    await env.claim("implementer-1", "read", path="srcx/d.py")
    await env.claim("implementer-1", resource_type="symbol", path="src/b.py", symbol="x")
    await env.claim("implementer-1", resource_type="symbol", path="src/a.py", symbol="K.n")
    now = clock.now()
    async with env.runtime.db.read() as r:
        mine = await service.covering_write_claims(
            r, "implementer-1", ["src/a.py", "src/pkg/c.py", "src/pkg/new.py", "srcx/d.py", "src/b.py"], now
        )
        symbols = await service.symbol_write_claims(r, "implementer-1", "src/a.py", now)
        assert await service.covering_write_claims(r, "implementer-1", [], now) == {}
        assert await service.readable_by_claim(r, "implementer-1", "srcx/d.py", now)
        assert await service.readable_by_claim(r, "implementer-1", "src/pkg/deep/x.py", now)
        assert await service.readable_by_claim(r, "implementer-1", "src/b.py", now)
        assert not await service.readable_by_claim(r, "implementer-1", "src/other.py", now)
    assert {k: v.id for k, v in mine.items()} == {
        "src/a.py": file_claim["claim"]["id"],
        "src/pkg/c.py": dir_claim["claim"]["id"],
        "src/pkg/new.py": dir_claim["claim"]["id"],
    }  # read claims and symbol claims do not cover whole files
    assert [(c.claim_type, r.symbol, r.start_line) for c, r in symbols] == [("write", "K.n", 9)]
    # A claim on the root directory covers every path.
    async with env.runtime.db.write() as tx:
        await tx.execute("UPDATE claims SET status = 'released' WHERE agent_id = 'implementer-1'")
    root_claim = await env.claim("implementer-3", "exclusive", resource_type="directory", resource_id="directory:")
    async with env.runtime.db.read() as r:
        theirs = await service.covering_write_claims(r, "implementer-3", ["anything/at/all.txt"], clock.now())
    assert theirs["anything/at/all.txt"].id == root_claim["claim"]["id"]
    # Expired claims cover nothing.
    async with env.runtime.db.read() as r:
        later = clock.format_ns(clock.now_ns() + 3600 * 10**9)
        assert await service.covering_write_claims(r, "implementer-1", ["src/a.py"], later) == {}


def test_identity_helpers() -> None:
    assert service.resource_id_for("file", "src/a.py") == "file:src/a.py"
    assert service.resource_id_for("directory", "") == "directory:"
    assert service.resource_id_for("symbol", "src/a.py", "K.m") == "symbol:src/a.py#K.m"
    assert service.parse_resource_id("symbol:src/a.py#K.m") == ("symbol", "src/a.py", "K.m")
    assert service.parse_resource_id("directory:src") == ("directory", "src", "")
    assert service.parse_resource_id("src/a.py") == ("file", "src/a.py", "")
    assert service.within("src/a.py", "") and service.within("src", "src") and service.within("src/x", "src")
    assert not service.within("srcx/a.py", "src") and not service.within("", "src")


async def _claim_some(root: Path) -> tuple[str, str]:
    runtime = await Runtime.open(root)
    try:
        task = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
        args = {"resource_type": "file", "claim_type": "write", "task_id": task}
        a = await runtime.call("resource.claim", {**args, "path": "src/a.py", "agent_id": "implementer-1"})
        b = await runtime.call("resource.claim", {**args, "path": "src/b.py", "agent_id": "implementer-2"})
        async with runtime.db.write() as tx:  # b is past its TTL
            await tx.execute(
                "UPDATE claims SET expires_at = ? WHERE id = ?",
                (clock.format_ns(clock.now_ns() - 10**9), b["claim"]["id"]),
            )
        return a["claim"]["id"], b["claim"]["id"]
    finally:
        await runtime.close()


def test_claims_cli(project: Path) -> None:
    write_tree(project)
    a, b = asyncio.run(_claim_some(project))
    runner = CliRunner()
    root = ["--root", str(project)]

    listed = runner.invoke(cli, ["claims", "list", *root])
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines() == [
        f"{a} implementer-1 write active file:src/a.py",
        f"{b} implementer-2 write expired file:src/b.py",
    ]
    as_json = runner.invoke(cli, ["claims", "list", *root, "--json", "--agent", "implementer-1"])
    assert [c["id"] for c in json.loads(as_json.output)["claims"]] == [a]
    active = runner.invoke(cli, ["claims", "list", *root, "--status", "active"])
    assert active.output.split() == [a, "implementer-1", "write", "active", "file:src/a.py"]

    expired = runner.invoke(cli, ["claims", "expire", *root])
    assert expired.exit_code == 0 and expired.output.splitlines() == [f"{b} expired"]
    assert runner.invoke(cli, ["claims", "expire", *root]).output == ""

    released = runner.invoke(cli, ["claims", "release", a, *root, "--reason", "operator cleanup"])
    assert released.exit_code == 0 and released.output.strip() == f"{a} released"
    missing = runner.invoke(cli, ["claims", "release", "C-nope", *root])
    assert missing.exit_code == 1 and "get claim C-nope: not found" in missing.output
    assert runner.invoke(cli, ["claims", "release", *root]).exit_code == 2

    rows = asyncio.run(_claim_events(project))
    kinds = [(row[0], row[1]) for row in rows]
    assert kinds[-2:] == [("claim.expired", "system"), ("claim.released", "operator")]
    assert json.loads(rows[-1][2])["reason"] == "operator cleanup"


async def _claim_events(root: Path) -> list[Any]:
    runtime = await Runtime.open(root)
    try:
        async with runtime.db.read() as r:
            return await r.fetchall(
                "SELECT type, actor_id, payload_json FROM events WHERE type LIKE 'claim.%' ORDER BY id"
            )
    finally:
        await runtime.close()


async def _new_task(root: Path) -> str:
    runtime = await Runtime.open(root)
    try:
        return str((await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"])
    finally:
        await runtime.close()


def test_claims_cli_claim_and_revoke(project: Path) -> None:
    write_tree(project)
    task = asyncio.run(_new_task(project))
    runner = CliRunner()
    root = ["--root", str(project)]
    out = runner.invoke(
        cli, ["claims", "claim", *root, "--agent", "implementer-1", "--task", task, "--path", "src/a.py"]
    )
    assert out.exit_code == 0, out.output
    claim_id, mode, status, resource = out.output.split()
    assert (mode, status, resource) == ("write", "active", "file:src/a.py")
    refused = runner.invoke(
        cli, ["claims", "claim", *root, "--agent", "implementer-2", "--task", task, "--path", "src/a.py"]
    )
    assert refused.exit_code == 1 and "claim conflict" in refused.output
    revoked = runner.invoke(cli, ["claims", "revoke", claim_id, *root, "--reason", "stuck"])
    assert revoked.exit_code == 0 and revoked.output.strip() == f"{claim_id} revoked"
    assert runner.invoke(cli, ["claims", "bogus", *root]).exit_code == 2


def test_symbols_cli(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("class A:\n    def go(self):\n        return 1\n")
    runner = CliRunner()
    out = runner.invoke(cli, ["symbols", "--path", str(source)])
    assert out.exit_code == 0
    assert out.output.splitlines() == [f"class A {source} 1 3", f"function A.go {source} 2 3"]
    data = json.loads(runner.invoke(cli, ["symbols", "--path", str(source), "--json"]).output)
    assert data["symbols"][1]["resource_id"] == f"symbol:{source}#A.go"
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    unsupported = runner.invoke(cli, ["symbols", "--path", str(other)])
    assert (
        unsupported.exit_code == 1
        and "is not in a supported language (supported extensions: .cjs" in unsupported.output
    )
    broken = tmp_path / "bad.py"
    broken.write_text("def (:\n")
    failed = runner.invoke(cli, ["symbols", "--path", str(broken)])
    assert failed.exit_code == 1 and "syntax tree contains ERROR or MISSING nodes" in failed.output
    missing = runner.invoke(cli, ["symbols"])
    assert missing.exit_code == 2 and "symbols requires --path" in missing.output
