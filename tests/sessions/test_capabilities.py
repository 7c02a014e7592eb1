"""Capability tokens and the per-call checks, run against a real database."""

from __future__ import annotations

import os

import pytest

from roundtable import clock
from roundtable.runtime import Runtime
from roundtable.services.sessions import capabilities as caps
from roundtable.tools.context import SUPERVISOR
from tests.sessions.helpers import add_proposal, bind, make_task

pytestmark = pytest.mark.anyio

PROPS = frozenset({"agent_id", "run_id", "task_id", "path", "claim_type", "resource_type", "resource_id", "claim_id"})


async def check(
    runtime: Runtime, cap_id: str, tool: str, args: dict, props: frozenset[str] | None = None
) -> caps.Checked:
    spec = runtime.registry.lookup(tool)
    assert spec is not None
    properties = props if props is not None else frozenset(spec.input_schema.get("properties", {}))
    async with runtime.db.read() as r:
        return await caps.check_call(r, runtime.root, cap_id, spec.name, args, properties)


async def add_claim(runtime: Runtime, agent: str, task_id: str, resource_id: str, *, expires_in_s: int = 600) -> None:
    expires = clock.format_ns(clock.now_ns() + expires_in_s * 1_000_000_000)
    async with runtime.db.write() as tx:
        await tx.insert(
            "claims",
            {
                "id": clock.new_id("C"),
                "resource_id": resource_id,
                "agent_id": agent,
                "task_id": task_id,
                "claim_type": "read",
                "status": "active",
                "expires_at": expires,
            },
        )


def test_token_shape_and_roles() -> None:
    token = caps.new_token()
    assert token.startswith("rtcap_") and len(token) == 49
    assert caps.looks_like_token(token)
    assert caps.token_hash(token) != token and len(caps.token_hash(token)) == 64
    assert caps.new_token() != token
    assert caps.role_for_agent("implementer-2") == "implementer"
    assert caps.role_for_agent("tester-1") == "tester"
    assert caps.role_for_agent("chair-1") is None
    assert caps.role_for_agent("reviewer-x") is None


async def test_only_the_hash_is_stored_and_lookup_works(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT * FROM session_capabilities")
        found = await caps.lookup(r, b.token)
        assert await caps.lookup(r, b.token[:-1] + ("A" if b.token[-1] != "A" else "B")) is None
        assert await caps.lookup(r, "garbage") is None
    dump = repr([tuple(row) for row in rows])
    assert b.token not in dump and b.token[6:] not in dump
    assert found is not None and found.id == b.cap.id
    assert clock.parse(found.max_expires_at) - clock.parse(found.issued_at) == 12 * 3600 * 10**9


async def test_allowed_call_fills_identity_and_drops_claim_id(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    out = await check(runtime, b.cap.id, "task.get", {})
    assert out.args == {"task_id": task_id}
    # table.watch's run_id is a filter (its scope keeps it to the run): left empty, it shows what
    # concerns the session's agent.
    out = await check(runtime, b.cap.id, "table.watch", {})
    assert out.args == {}
    out = await check(
        runtime,
        b.cap.id,
        "resource.claim",
        {
            "resource_type": "file",
            "resource_id": "file:src/a.py",
            "path": "src/a.py",
            "claim_type": "exclusive",
            "claim_id": "mine",
        },
    )
    assert "claim_id" not in out.args
    assert out.args["agent_id"] == "implementer-1" and out.args["task_id"] == task_id and out.args["run_id"] == run_id


@pytest.mark.parametrize(
    ("agent", "tool", "args", "code", "text"),
    [
        (
            "reviewer-1",
            "proposal.create",
            {},
            "tool_not_permitted",
            "operation proposal.create is not permitted for role reviewer",
        ),
        ("tester-1", "patch.apply", {}, "tool_not_permitted", "operation patch.apply is not permitted for role tester"),
        (
            "tester-1",
            "resource.claim",
            {"resource_type": "file", "resource_id": "file:src/a.py", "claim_type": "write"},
            "claim_mode",
            "claim type write is not permitted for role tester",
        ),
        (
            "reviewer-1",
            "resource.claim",
            {"resource_type": "file", "resource_id": "file:docs/x", "claim_type": "read"},
            "path_not_readable",
            "outside the task's readable_paths",
        ),
        (
            "reviewer-1",
            "resource.claim_status",
            {"agent_id": "implementer-1"},
            "identity_mismatch",
            "argument agent_id does not match the session capability",
        ),
        (
            "reviewer-1",
            "vote.cast",
            {"proposal_id": "P-other", "vote": "approve", "reason_md": "x"},
            "identity_mismatch",
            "argument proposal_id does not match",
        ),
        ("security-1", "test.evidence.submit", {}, "tool_not_permitted", "not permitted for role security"),
    ],
)
async def test_denials(runtime: Runtime, agent: str, tool: str, args: dict, code: str, text: str) -> None:
    run_id, task_id = await make_task(runtime)
    pid = await add_proposal(runtime, task_id)
    b = await bind(runtime, agent, run_id, task_id, pid)
    with pytest.raises(caps.Denied) as info:
        await check(runtime, b.cap.id, tool, args)
    assert info.value.reason_code == code
    assert text in str(info.value)
    assert b.token not in str(info.value)


async def test_reviewer_claim_review_is_allowed(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    pid = await add_proposal(runtime, task_id)
    b = await bind(runtime, "reviewer-1", run_id, task_id, pid)
    out = await check(
        runtime,
        b.cap.id,
        "resource.claim",
        {"resource_type": "file", "resource_id": "file:src/a.py", "claim_type": "review"},
    )
    assert out.args["agent_id"] == "reviewer-1"
    out = await check(runtime, b.cap.id, "vote.cast", {"vote": "approve", "reason_md": "ok"})
    assert out.args["proposal_id"] == pid
    # Line comments, on the bound proposal only; an implementer's session has no such tool.
    out = await check(runtime, b.cap.id, "proposal.comment", {"body_md": "why?"})
    assert out.args["proposal_id"] == pid and out.args["body_md"] == "why?"
    with pytest.raises(caps.Denied):
        await check(runtime, b.cap.id, "proposal.comment", {"proposal_id": "P-other", "body_md": "x"})
    assert "proposal.comment" not in caps.allowed_tools("implementer")


async def test_repo_reads_need_readable_path_and_claim(runtime: Runtime) -> None:
    root = runtime.root
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x = 1\n")
    (root / "docs").mkdir()
    (root / "docs" / "b.md").write_text("doc\n")
    os.symlink(root / "docs" / "b.md", root / "src" / "link.md")
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    with pytest.raises(caps.Denied) as info:
        await check(runtime, b.cap.id, "repo.read_file", {"path": "docs/b.md"})
    assert info.value.reason_code == "path_not_readable"
    with pytest.raises(caps.Denied) as info:
        await check(runtime, b.cap.id, "repo.read_file", {"path": "src/a.py"})
    assert info.value.reason_code == "no_claim"
    await add_claim(runtime, "implementer-1", task_id, "file:src/a.py")
    out = await check(runtime, b.cap.id, "repo.read_file", {"path": "./src/a.py"})
    assert out.args["path"] == "./src/a.py"
    # Directory claims cover what is beneath; sensitive names and symlinks out stay refused.
    await add_claim(runtime, "implementer-1", task_id, "directory:src")
    await check(runtime, b.cap.id, "repo.symbols", {"path": "src/a.py"})
    for path, code in (
        ("src/.env", "path_not_readable"),
        ("src/link.md", "path_not_readable"),
        ("src/../../etc/passwd", "path_not_readable"),
    ):
        with pytest.raises(caps.Denied) as info:
            await check(runtime, b.cap.id, "repo.read_file", {"path": path})
        assert info.value.reason_code == code, path
    # repo.search without a path walks the single readable path only.
    out = await check(runtime, b.cap.id, "repo.search", {"query": "x"})
    assert out.args["path"] == "src"


async def test_expired_claims_do_not_cover(runtime: Runtime) -> None:
    (runtime.root / "src").mkdir()
    (runtime.root / "src" / "a.py").write_text("x\n")
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    await add_claim(runtime, "implementer-1", task_id, "file:src/a.py", expires_in_s=-1)
    with pytest.raises(caps.Denied) as info:
        await check(runtime, b.cap.id, "repo.read_file", {"path": "src/a.py"})
    assert info.value.reason_code == "no_claim"


async def test_state_changes_refuse_the_next_call(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    pid = await add_proposal(runtime, task_id)
    impl = await bind(runtime, "implementer-1", run_id, task_id)
    rev = await bind(runtime, "reviewer-1", run_id, task_id, pid)
    await check(runtime, impl.cap.id, "task.list", {})
    await runtime.call("task.update_status", {"task_id": task_id, "assigned_agent_id": "implementer-2"})
    with pytest.raises(caps.Denied) as info:
        await check(runtime, impl.cap.id, "task.list", {})
    assert info.value.reason_code == "task_reassigned"
    await check(runtime, rev.cap.id, "task.list", {})
    async with runtime.db.write() as tx:
        await tx.update("proposals", {"id": pid}, {"status": "accepted"})
    with pytest.raises(caps.Denied) as info:
        await check(runtime, rev.cap.id, "task.list", {})
    assert info.value.reason_code == "proposal_closed"
    async with runtime.db.write() as tx:
        await tx.update("proposals", {"id": pid}, {"status": "pending"})
        await tx.update("agents", {"id": "reviewer-1"}, {"is_enabled": 0})
    with pytest.raises(caps.Denied) as info:
        await check(runtime, rev.cap.id, "task.list", {})
    assert info.value.reason_code == "agent_disabled"
    async with runtime.db.write() as tx:
        await tx.update("runs", {"id": run_id}, {"status": "completed"})
    with pytest.raises(caps.Denied) as info:
        await check(runtime, rev.cap.id, "task.list", {})
    assert info.value.reason_code == "run_inactive"


async def test_revoke_expiry_and_extension(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with runtime.db.write() as tx:
        await tx.update("session_capabilities", {"id": b.cap.id}, {"expires_at": clock.now()})
    with pytest.raises(caps.Expired, match="capability expired or revoked"):
        await check(runtime, b.cap.id, "task.list", {})
    # Expiry is final: the supervisor's heartbeat (extend) never revives an expired capability.
    async with runtime.db.write() as tx:
        extended = await caps.extend(tx, b.cap.id)
    assert extended is not None and not caps.is_live(extended)
    with pytest.raises(caps.Expired):
        await check(runtime, b.cap.id, "task.list", {})
    # A live one is extended, never beyond max_expires_at.
    c = await bind(runtime, "implementer-1", run_id, task_id)
    async with runtime.db.write() as tx:
        await tx.update(
            "session_capabilities",
            {"id": c.cap.id},
            {
                "expires_at": clock.format_ns(clock.now_ns() + 5 * 10**8),
                "max_expires_at": clock.format_ns(clock.now_ns() + 10**9),
            },
        )
        capped = await caps.extend(tx, c.cap.id)
    assert capped is not None and capped.expires_at == capped.max_expires_at
    await check(runtime, c.cap.id, "task.list", {})
    async with runtime.db.write() as tx:
        assert await caps.revoke(tx, b.cap.id, "operator") is True
        assert await caps.revoke(tx, b.cap.id, "again") is False
    with pytest.raises(caps.Expired):
        await check(runtime, b.cap.id, "task.list", {})


async def test_session_must_be_active(runtime: Runtime) -> None:
    from roundtable.services.sessions import records as sessions

    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "implementer-1", run_id, task_id)
    async with runtime.db.write() as tx:
        await sessions.end(tx, b.session_id)
    with pytest.raises(caps.Denied) as info:
        await check(runtime, b.cap.id, "task.list", {})
    assert info.value.reason_code == "session_inactive"


async def test_denial_event_has_no_arguments(runtime: Runtime) -> None:
    run_id, task_id = await make_task(runtime)
    b = await bind(runtime, "tester-1", run_id, task_id, await add_proposal(runtime, task_id))
    await runtime.call(
        "capability.record_denial",
        {"capability_id": b.cap.id, "tool": "proposal.create", "reason_code": "tool_not_permitted"},
        SUPERVISOR,
    )
    async with runtime.db.read() as r:
        row = await r.fetchone("SELECT * FROM events WHERE type = 'capability.denied'")
    assert row is not None
    assert row["actor_id"] == "tester-1"
    # The session's event, whoever records it (the session endpoint does, as the supervisor).
    assert (row["principal"], row["transport"]) == ("agent:tester-1", "session")
    import json

    assert json.loads(row["payload_json"]) == {
        "session_id": b.session_id,
        "tool": "proposal.create",
        "reason_code": "tool_not_permitted",
    }


def test_session_schema_drops_bound_required() -> None:
    from roundtable.store.records import SessionCapability

    cap = SessionCapability("c", "h", "s", "reviewer-1", "R", "reviewer", "T", "P", "", "", "", "", "", "")
    schema = {
        "type": "object",
        "properties": {"proposal_id": {}, "agent_id": {}, "vote": {}},
        "required": ["proposal_id", "agent_id", "vote"],
    }
    assert caps.session_schema(schema, cap)["required"] == ["vote"]


def test_matrix_matches_spec() -> None:
    assert "proposal.create" in caps.allowed_tools("implementer")
    assert "vote.cast" not in caps.allowed_tools("implementer")
    assert "security.review" in caps.allowed_tools("security") and "security.review" not in caps.allowed_tools(
        "reviewer"
    )
    assert "test.evidence.submit" in caps.allowed_tools("tester")
    for role in caps.ROLES:
        for forbidden in (
            "test.run",
            "patch.apply",
            "patch.reject",
            "decision.record",
            "human.request_approval",
            "memory.mark_stale",
            "repo.dependency_context",
        ):
            assert forbidden not in caps.allowed_tools(role)
        # Only the planner (an architect) creates tasks and closes its own planning task.
        for planning in ("task.create", "task.update_status"):
            assert (planning in caps.allowed_tools(role)) == (role == "planner")
    assert caps.CLAIM_MODES["tester"] == {"read"}
    assert caps.CLAIM_MODES["planner"] == {"read"}
    assert caps.role_for_agent("architect-1") == "planner"
    assert {"proposal.create", "vote.cast"}.isdisjoint(caps.allowed_tools("planner"))
