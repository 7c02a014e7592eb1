"""resource.* tools through Runtime.call: grants, refusals, the matrix, overlap, expiry, release."""

from __future__ import annotations

import hashlib
import json

import pytest

from roundtable import clock
from roundtable.errors import ToolError
from roundtable.services.coordination import claims as service
from roundtable.tools.context import OPERATOR, Caller
from tests.claims.conftest import Env

pytestmark = pytest.mark.anyio

MODES = ("read", "write", "review", "exclusive")
# The mode conflict matrix, row = requested, column = existing.
MATRIX = {
    "read": {"read": False, "write": False, "review": False, "exclusive": True},
    "write": {"read": False, "write": True, "review": False, "exclusive": True},
    "review": {"read": False, "write": False, "review": False, "exclusive": True},
    "exclusive": {"read": True, "write": True, "review": True, "exclusive": True},
}


async def _events(env: Env, type_: str) -> list[dict[str, object]]:
    async with env.runtime.db.read() as r:
        rows = await r.fetchall(
            "SELECT type, actor_id, task_id, payload_json FROM events WHERE type = ? ORDER BY id", (type_,)
        )
    return [{"actor_id": row[1], "task_id": row[2], **json.loads(row[3])} for row in rows]


async def test_claim_file_grants_with_fence_hash_and_event(env: Env) -> None:
    first = await env.claim("implementer-1", path="src/a.py", rationale="edit f")
    second = await env.claim("implementer-2", path="src/b.py")
    claim, resource = first["claim"], first["resource"]
    assert claim["status"] == "active" and claim["resource_id"] == "file:src/a.py"
    assert claim["agent_id"] == "implementer-1" and claim["rationale_md"] == "edit f"
    assert second["claim"]["fence"] > claim["fence"] > 0
    assert resource == {
        "id": "file:src/a.py",
        "type": "file",
        "path": "src/a.py",
        "symbol": "",
        "language": "python",
        "start_line": 0,
        "end_line": 0,
        "current_hash": claim["base_hash"],
        "metadata_json": "{}",
    }
    import hashlib

    assert claim["base_hash"] == hashlib.sha256((env.root / "src/a.py").read_bytes()).hexdigest()
    assert clock.parse(claim["expires_at"]) - clock.parse(claim["created_at"]) == 900 * 10**9
    created = await _events(env, "claim.created")
    assert created[0]["claim_id"] == claim["id"] and created[0]["resource_type"] == "file"
    assert created[0]["actor_id"] == "implementer-1" and created[0]["task_id"] == env.task_id


async def test_claim_derives_path_and_symbol_from_resource_id(env: Env) -> None:
    out = await env.claim("implementer-1", resource_type="symbol", resource_id="symbol:src/a.py#K.m")
    res = out["resource"]
    assert (res["type"], res["path"], res["symbol"]) == ("symbol", "src/a.py", "K.m")
    assert (res["start_line"], res["end_line"]) == (6, 7)
    assert out["claim"]["base_hash"] and res["language"] == "python"
    dir_claim = await env.claim("implementer-2", resource_type="directory", resource_id="directory:srcx", mode="read")
    assert dir_claim["resource"]["path"] == "srcx"
    spelled = await env.claim("implementer-3", resource_id="file:./src//b.py", mode="read")
    assert spelled["claim"]["resource_id"] == "file:src/b.py"


async def test_missing_file_claims_with_empty_hash(env: Env) -> None:
    out = await env.claim("implementer-1", path="src/new_module.py")
    assert out["claim"]["base_hash"] == "" and out["resource"]["path"] == "src/new_module.py"


async def test_a_large_file_is_hashed_off_the_writer_and_claimed_the_same(env: Env) -> None:
    """A file over the writer's bound takes the worker-thread path: same grant, same hash; and a
    path a guard refuses is refused on either path with nothing recorded."""
    from roundtable.services.coordination.claims.claiming import HASH_ON_WRITER_BYTES

    big = env.root / "src" / "big.bin"
    big.write_bytes(b"x" * (HASH_ON_WRITER_BYTES + 1))
    small = env.root / "src" / "small.bin"
    small.write_bytes(b"y" * 10)
    for path in (big, small):
        out = await env.claim("implementer-1", path=str(path.relative_to(env.root)))
        assert out["claim"]["base_hash"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert out["resource"]["current_hash"] == out["claim"]["base_hash"]
    async with env.runtime.db.read() as r:
        before = await r.scalar("SELECT count(*) FROM claims")
    for refused in ("../outside.py", ".git/config"):
        with pytest.raises(ToolError):
            await env.claim("implementer-1", path=refused)
    async with env.runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM claims") == before


@pytest.mark.parametrize(
    ("extra", "caller", "message"),
    [
        ({"agent_id": ""}, OPERATOR, "agent id is required"),
        ({"path": "src/a.py", "claim_type": "steal"}, None, "unsupported claim type: steal"),
        ({}, None, "resource id or resource path is required"),
        ({"path": "../outside.py"}, None, "path is outside the repository root"),
        ({"path": "/etc/passwd"}, None, "must be relative to the repository root"),
        ({"path": ".git/config"}, None, "path is inside .git/"),
        ({"path": ".roundtable/roundtable.db"}, None, "path is inside .roundtable/"),
        ({"resource_id": "directory:src"}, None, "does not name a file resource"),
        ({"resource_id": "file:src/a.py", "path": "src/b.py"}, None, "does not match path"),
        ({"resource_type": "symbol", "path": "src/a.py"}, None, "needs a symbol name"),
        ({"path": "src/a.py", "claim_id": "../x"}, None, "claim_id must be"),
        ({"path": "src/a.py", "task_id": "T-missing"}, None, "get task T-missing: not found"),
        ({"path": "src/a.py", "run_id": "R-missing"}, None, "get run R-missing: not found"),
        ({"path": "src/a.py", "ttl_seconds": -5}, None, "must be at least 0"),
        ({"path": "src/a.py", "ttl_seconds": 1.5}, None, "must be an integer"),
        (
            {"path": "src/a.py", "rationale": "x" * 4001},
            None,
            "argument rationale is too long: 4001 characters, at most 4000",
        ),
        ({"path": "src/a.py", "bogus": 1}, None, "unknown argument bogus"),
        (
            {"path": "src/a.py", "agent_id": "implementer-2"},
            Caller("agent", "http", agent_id="implementer-1"),
            "but this connection acts as implementer-1",
        ),
    ],
)
async def test_bad_claims_are_refused_and_change_nothing(
    env: Env, extra: dict[str, object], caller: Caller | None, message: str
) -> None:
    before = await env.snapshot()
    args: dict[str, object] = {"agent_id": "implementer-1"}
    args.update(extra)
    agent = str(args.pop("agent_id"))
    with pytest.raises(ToolError, match=message.replace(".", r"\.").replace("(", r"\(")):
        await env.claim(agent, caller=caller, **args)
    assert await env.snapshot() == before
    assert await env.count("claim_contentions") == 0


async def test_ttl_zero_means_default_and_agent_caller_identity_fills_agent(env: Env) -> None:
    agent = Caller("agent", "http", agent_id="implementer-7")
    out = await env.runtime.call(
        "resource.claim",
        {"resource_type": "file", "path": "src/a.py", "claim_type": "read", "task_id": env.task_id, "ttl_seconds": 0},
        agent,
    )
    assert out["claim"]["agent_id"] == "implementer-7"
    assert clock.parse(out["claim"]["expires_at"]) - clock.parse(out["claim"]["created_at"]) == 900 * 10**9


@pytest.mark.parametrize("existing", MODES)
@pytest.mark.parametrize("requested", MODES)
async def test_mode_conflict_matrix(env: Env, requested: str, existing: str) -> None:
    held = await env.claim("implementer-1", existing, path="src/a.py")
    if MATRIX[requested][existing]:
        with pytest.raises(ToolError) as info:
            await env.claim("implementer-2", requested, path="src/a.py")
        assert str(info.value) == (
            f"claim conflict: {existing} claim {held['claim']['id']} already holds overlapping file resource src/a.py"
            f" (held by agent implementer-1 until {held['claim']['expires_at']})"
        )
        assert await env.count("claims") == 1
    else:
        out = await env.claim("implementer-2", requested, path="src/a.py")
        assert out["claim"]["status"] == "active"
    assert service.modes_conflict(requested, existing) is MATRIX[requested][existing]


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        ({"resource_type": "directory", "path": "src"}, {"path": "src/pkg/c.py"}, True),
        ({"path": "src/pkg/c.py"}, {"resource_type": "directory", "path": "src"}, True),
        ({"resource_type": "directory", "path": "src"}, {"path": "srcx/d.py"}, False),
        ({"resource_type": "directory", "path": ""}, {"path": "srcx/d.py"}, True),
        ({"resource_type": "directory", "path": "src"}, {"resource_type": "directory", "path": "src/pkg"}, True),
        ({"resource_type": "directory", "path": "src/pkg"}, {"resource_type": "directory", "path": "src"}, True),
        ({"resource_type": "directory", "path": "src"}, {"resource_type": "directory", "path": "srcx"}, False),
        ({"path": "src/a.py"}, {"resource_type": "symbol", "path": "src/a.py", "symbol": "f"}, True),
        ({"resource_type": "symbol", "path": "src/a.py", "symbol": "f"}, {"path": "src/a.py"}, True),
        ({"resource_type": "symbol", "path": "src/a.py", "symbol": "f"}, {"path": "src/b.py"}, False),
        (
            {"resource_type": "symbol", "path": "src/a.py", "symbol": "K.m"},
            {"resource_type": "symbol", "path": "src/a.py", "symbol": "K.n"},
            False,
        ),
        (
            {"resource_type": "symbol", "path": "src/a.py", "symbol": "K.m"},
            {"resource_type": "symbol", "path": "src/a.py", "symbol": "K.m"},
            True,
        ),
        (
            {"resource_type": "symbol", "path": "src/pkg/c.py", "symbol": "y"},
            {"resource_type": "directory", "path": "src/pkg"},
            True,
        ),
        ({"path": "src/a.py"}, {"path": "src/b.py"}, False),
        (
            {"resource_type": "service", "resource_id": "service:db"},
            {"resource_type": "service", "resource_id": "service:db"},
            True,
        ),
        (
            {"resource_type": "service", "resource_id": "service:db"},
            {"resource_type": "service", "resource_id": "service:cache"},
            False,
        ),
    ],
)
async def test_overlap_between_files_directories_and_symbols(
    env: Env, first: dict[str, str], second: dict[str, str], overlap: bool
) -> None:
    await env.claim("implementer-1", "write", **first)
    if overlap:
        with pytest.raises(ToolError, match="claim conflict"):
            await env.claim("implementer-2", "write", **second)
    else:
        await env.claim("implementer-2", "write", **second)
    assert await env.count("claims") == (1 if overlap else 2)


async def test_refusal_records_contentions_in_their_own_transaction(env: Env) -> None:
    a = await env.claim("implementer-1", path="src/a.py")
    b = await env.claim("implementer-2", path="src/b.py")
    before_claims = await env.count("claims")
    with pytest.raises(ToolError, match="claim conflict"):
        await env.claim("implementer-3", resource_type="directory", path="src", run_id="", rationale="refactor")
    assert await env.count("claims") == before_claims
    async with env.runtime.db.read() as r:
        rows = [dict(row) for row in await r.fetchall("SELECT * FROM claim_contentions ORDER BY challenged_claim_id")]
        resource = await r.scalar("SELECT count(*) FROM resources WHERE id = 'directory:src'")
    assert resource == 0  # a refused claim does not create its resource row
    assert [row["challenged_claim_id"] for row in rows] == sorted([a["claim"]["id"], b["claim"]["id"]])
    for row in rows:
        assert row["claimant_id"] == "implementer-3"
        assert row["requested_agent_id"] == "implementer-3"
        assert row["requested_resource_id"] == "directory:src" and row["requested_mode"] == "write"
        assert row["requested_path"] == "src" and row["status"] == "open"
        assert row["reason"].startswith("claim conflict: write claim ")


async def test_own_claims_never_conflict_and_reclaim_extends(env: Env) -> None:
    first = await env.claim("implementer-1", path="src/a.py", ttl_seconds=60)
    again = await env.claim("implementer-1", path="src/a.py", ttl_seconds=600)
    assert again["extended"] is True
    assert again["claim"]["id"] == first["claim"]["id"] and again["claim"]["fence"] == first["claim"]["fence"]
    assert again["claim"]["expires_at"] > first["claim"]["expires_at"]
    assert again["claim"]["heartbeat_at"]
    extended = await _events(env, "claim.extended")
    assert extended == [
        {
            "actor_id": "implementer-1",
            "task_id": env.task_id,
            "claim_id": first["claim"]["id"],
            "expires_at": again["claim"]["expires_at"],
        }
    ]
    # Overlapping claims of the same agent in another shape or mode are granted, not refused.
    whole = await env.claim("implementer-1", "exclusive", resource_type="directory", path="src")
    assert whole["extended"] is False
    assert await env.count("claims") == 2


async def test_non_renewable_claim_is_not_extended(env: Env) -> None:
    await env.claim("implementer-1", path="src/a.py", renewable=False)
    with pytest.raises(ToolError, match="is not renewable"):
        await env.claim("implementer-1", path="src/a.py")


async def test_existing_claim_id_is_refused(env: Env) -> None:
    await env.claim("implementer-1", path="src/a.py", claim_id="C-mine")
    before = await env.snapshot()
    with pytest.raises(ToolError, match="claim C-mine already exists"):
        await env.claim("implementer-2", path="src/b.py", claim_id="C-mine")
    assert await env.snapshot() == before


async def _age(env: Env, claim_id: str) -> None:
    """Put a claim's expiry in the past without waiting."""
    async with env.runtime.db.write() as tx:
        await tx.execute(
            "UPDATE claims SET expires_at = ? WHERE id = ?", (clock.format_ns(clock.now_ns() - 10**9), claim_id)
        )


async def test_expiry_is_evaluated_on_every_read(env: Env) -> None:
    held = await env.claim("implementer-1", "exclusive", path="src/a.py")
    cid = held["claim"]["id"]
    await _age(env, cid)
    status = await env.runtime.call("resource.claim_status", {"resource_id": "file:src/a.py"})
    assert [c["status"] for c in status["claims"]] == ["expired"]
    assert (await env.runtime.call("resource.claim_status", {"status": "active"}))["claims"] == []
    assert len((await env.runtime.call("resource.claim_status", {"status": "expired"}))["claims"]) == 1
    # An expired claim never blocks another agent.
    other = await env.claim("implementer-2", "exclusive", path="src/a.py")
    assert other["claim"]["status"] == "active"
    # Releasing an expired claim changes nothing.
    out = await env.runtime.call("resource.release", {"claim_id": cid, "actor_id": "implementer-1"})
    assert out["changed"] is False and out["claim"]["status"] == "expired"
    # The sweep writes the status with one event per claim; a second sweep finds nothing.
    async with env.runtime.db.write() as tx:
        swept = await service.expire_due(tx, clock.now(), run_id="")
    assert [c.id for c in swept] == [cid]
    async with env.runtime.db.write() as tx:
        assert await service.expire_due(tx, clock.now()) == []
    events = await _events(env, "claim.expired")
    assert len(events) == 1 and events[0]["reason"] == "ttl elapsed" and events[0]["actor_id"] == "system"


async def test_claim_status_filters(env: Env) -> None:
    await env.claim("implementer-1", path="src/a.py")
    await env.claim("implementer-2", path="src/b.py", mode="read")
    everything = await env.runtime.call("resource.claim_status", {})
    assert [c["agent_id"] for c in everything["claims"]] == ["implementer-1", "implementer-2"]
    mine = await env.runtime.call("resource.claim_status", {"agent_id": "implementer-2"})
    assert [c["resource_id"] for c in mine["claims"]] == ["file:src/b.py"]
    assert (await env.runtime.call("resource.claim_status", {"resource_id": "file:nope"}))["claims"] == []
    with pytest.raises(ToolError, match="unknown argument"):
        await env.runtime.call("resource.claim_status", {"who": "x"})


async def test_release_rules(env: Env) -> None:
    held = await env.claim("implementer-1", path="src/a.py")
    cid = held["claim"]["id"]
    before = await env.snapshot()
    other = Caller("agent", "http", agent_id="implementer-2")
    with pytest.raises(ToolError, match="belongs to implementer-1; implementer-2 may not release it"):
        await env.runtime.call("resource.release", {"claim_id": cid}, other)
    anonymous = Caller("agent", "http")
    with pytest.raises(ToolError, match="this connection is anonymous"):
        await env.runtime.call("resource.release", {"claim_id": cid}, anonymous)
    with pytest.raises(ToolError, match="this connection is anonymous"):
        await env.runtime.call("resource.release", {"claim_id": cid, "actor_id": "implementer-1"}, anonymous)
    with pytest.raises(ToolError, match="argument actor_id names 'implementer-1', but this connection acts as"):
        await env.runtime.call("resource.release", {"claim_id": cid, "actor_id": "implementer-1"}, other)
    with pytest.raises(ToolError, match="get claim C-nope: not found"):
        await env.runtime.call("resource.release", {"claim_id": "C-nope"})
    with pytest.raises(ToolError, match="argument reason is too long: 4001 characters, at most 4000"):
        await env.runtime.call("resource.release", {"claim_id": cid, "reason": "x" * 4001}, OPERATOR)
    assert await env.snapshot() == before
    # The owner (the agent its credential names) may release.
    owner = Caller("agent", "http", agent_id="implementer-1")
    out = await env.runtime.call("resource.release", {"claim_id": cid, "reason": "done"}, owner)
    assert out["changed"] is True and out["claim"]["status"] == "released"
    again = await env.runtime.call("resource.release", {"claim_id": cid}, owner)
    assert again["changed"] is False
    released = await _events(env, "claim.released")
    assert len(released) == 1 and released[0]["reason"] == "done" and released[0]["actor_id"] == "implementer-1"
    # The operator may release anyone's claim.
    second = await env.claim("implementer-2", path="src/b.py")
    out = await env.runtime.call("resource.release", {"claim_id": second["claim"]["id"]}, OPERATOR)
    assert out["claim"]["status"] == "released"
    # A released claim no longer blocks.
    assert (await env.claim("implementer-3", "exclusive", path="src/a.py"))["claim"]["status"] == "active"


async def test_resource_get_and_search(env: Env) -> None:
    await env.claim("implementer-1", path="src/a.py")
    await env.claim("implementer-1", resource_type="symbol", path="src/a.py", symbol="K.m", mode="read")
    await env.claim("implementer-1", resource_type="directory", path="srcx", mode="read")
    got = await env.runtime.call("resource.get", {"resource_id": "file:src/a.py"})
    assert got["resource"]["path"] == "src/a.py"
    with pytest.raises(ToolError, match="get resource file:nope: not found"):
        await env.runtime.call("resource.get", {"resource_id": "file:nope"})
    with pytest.raises(ToolError, match="missing required argument resource_id"):
        await env.runtime.call("resource.get", {})
    everything = await env.runtime.call("resource.search", {"query": ""})
    assert [r["id"] for r in everything["resources"]] == ["directory:srcx", "file:src/a.py", "symbol:src/a.py#K.m"]
    assert [r["id"] for r in (await env.runtime.call("resource.search", {"query": "K.M"}))["resources"]] == [
        "symbol:src/a.py#K.m"
    ]
    only_files = await env.runtime.call("resource.search", {"query": "src", "resource_type": "file"})
    assert [r["id"] for r in only_files["resources"]] == ["file:src/a.py"]
    assert (await env.runtime.call("resource.search", {"query": "PYTHON", "resource_type": "directory"}))[
        "resources"
    ] == []
    with pytest.raises(ToolError, match="argument query must be a string"):
        await env.runtime.call("resource.search", {"query": 3})


async def test_claiming_several_paths_is_all_or_nothing(env: Env) -> None:
    """One conflicting file among several claims none of them: no claim, no resource, only the
    contention recorded; the refusal names the conflict and says nothing was claimed."""
    await env.claim("implementer-2", path="src/b.py")
    claims_before, resources_before, _events_before = await env.snapshot()
    with pytest.raises(ToolError, match=r"src/b\.py.*\(nothing was claimed\)"):
        await env.claim("implementer-1", paths=["src/a.py", "src/b.py", "src/pkg/c.py"])
    claims_after, resources_after, _ = await env.snapshot()
    assert claims_after == claims_before and resources_after == resources_before
    async with env.runtime.db.read() as r:
        contended = await r.scalar("SELECT count(*) FROM claim_contentions")
    assert contended == 1
    granted = await env.claim("implementer-1", paths=["src/a.py", "src/pkg/c.py"])
    assert [c["resource_id"] for c in granted["claims"]] == ["file:src/a.py", "file:src/pkg/c.py"]
    assert [c["extended"] for c in granted["claims"]] == [False, False]


async def test_several_paths_with_a_large_file_are_hashed_first_then_granted_together(env: Env) -> None:
    big = env.root / "src" / "big.bin"
    big.write_bytes(b"x" * (300 * 1024))  # above what the writer's thread hashes
    out = await env.claim("implementer-1", paths=["src/a.py", "src/big.bin"])
    assert [c["resource_id"] for c in out["claims"]] == ["file:src/a.py", "file:src/big.bin"]
    async with env.runtime.db.read() as r:
        base = await r.scalar("SELECT base_hash FROM claims WHERE resource_id = 'file:src/big.bin'")
    assert base == hashlib.sha256(big.read_bytes()).hexdigest()
