"""Which run a change is filed under (services.run_scope): with two active runs,
every event about a proposal goes to the proposal's run whoever calls, even a console that has
the other run selected; a capability's run wins; ambiguity files under "" or, for `patch.apply`,
is refused without touching anything. Real SQLite and git, everything through `Runtime.call`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from roundtable import clock
from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.coordination.runs import create_run
from roundtable.services.run_scope import RunHint, choose
from roundtable.store.records import SessionCapability
from roundtable.tools.context import OPERATOR, Caller
from tests.helpers import agent, git
from tests.support.governance import AUTHOR, REVIEWERS, Flow, configure_reviewers, make_patch

pytestmark = pytest.mark.anyio

RUN_A = "RUN-A"
RUN_B = "RUN-B"
CONSOLE = Caller("operator", "tui")
FIRST = make_patch("src/app.py", "print('v1')", "print('v2')")
REVISED = make_patch("src/app.py", "print('v1')", "print('v3')")

# Every event type the services emit about one proposal on its way to being applied.
PROPOSAL_EVENTS = {
    "task.created",
    "task.updated",
    "claim.created",
    "proposal.created",
    "proposal.revised",
    "proposal.review_requested",
    "vote.cast",
    "security.reviewed",
    "test.started",
    "test.finished",
    "approval.requested",
    "approval.decided",
    "decision.recorded",
    "memory.recorded",
    "memory.marked_stale",
    "patch.validated",
    "patch.applied",
}


@pytest.fixture
def repo(project: Path) -> Path:
    configure_reviewers(project)
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('v1')\n")
    (project / "src" / "other.py").write_text("print('v1')\n")
    (project / ".gitignore").write_text(".roundtable/\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "init")
    return project


@pytest.fixture
async def rt(repo: Path) -> AsyncIterator[Runtime]:
    runtime = await Runtime.open(repo)
    await sync_agents(runtime)
    try:
        yield runtime
    finally:
        await runtime.close()


async def two_runs(rt: Runtime, *, latest: str) -> None:
    """RUN_A and RUN_B, both active; `latest` started last (what the old guess picked)."""
    first = RUN_B if latest == RUN_A else RUN_A
    await create_run(rt, "first", run_id=first)
    await create_run(rt, "second", run_id=latest)


async def task_in(rt: Runtime, run_id: str) -> str:
    """A task the operator creates with run `run_id` selected (as the console does)."""
    out = await rt.call("task.create", {"title": run_id, "body_md": "x"}, OPERATOR.with_run(run_id))
    return str(out["task"]["id"])


async def all_events(rt: Runtime) -> list[dict[str, Any]]:
    async with rt.db.read() as r:
        rows = await r.fetchall("SELECT * FROM events ORDER BY id")
    return [{**dict(row), "payload": json.loads(row["payload_json"])} for row in rows]


def about(event: dict[str, Any], proposal_id: str, task_id: str) -> bool:
    payload = event["payload"]
    return (
        event["task_id"] == task_id
        or payload.get("proposal_id") == proposal_id
        or payload.get("scope") in (proposal_id, task_id)
    )


async def scalar(rt: Runtime, sql: str, params: tuple[Any, ...] = ()) -> Any:
    async with rt.db.read() as r:
        return await r.scalar(sql, params)


def capability_caller(run_id: str, task_id: str, agent_id: str = AUTHOR) -> Caller:
    """A caller as the session endpoint builds it: an implementer's capability for `run_id`."""
    now = clock.now()
    cap = SessionCapability(
        id="CAP-1",
        token_sha256="0" * 64,
        session_id="S-1",
        agent_id=agent_id,
        run_id=run_id,
        role="implementer",
        task_id=task_id,
        proposal_id="",
        issued_at=now,
        expires_at=now,
        max_expires_at=now,
        revoked_at="",
        revoked_reason="",
        created_at=now,
    )
    return Caller("agent", "session", agent_id=agent_id, session_id="S-1", capability=cap)


async def test_every_event_of_a_proposal_in_run_b_is_filed_under_run_b(rt: Runtime) -> None:
    await two_runs(rt, latest=RUN_A)
    in_a = (await rt.call("task.create", {"title": "A", "body_md": "a"}, OPERATOR.with_run(RUN_A)))["task"]
    task = (await rt.call("task.create", {"title": "B", "body_md": "b"}, OPERATOR.with_run(RUN_B)))["task"]
    assert (in_a["run_id"], task["run_id"]) == (RUN_A, RUN_B)

    # The author and the reviewers name no run; the console has the *other* run selected.
    console = CONSOLE.with_run(RUN_A)
    flow = Flow(rt, task_id=task["id"])
    await flow.claim("src/app.py")
    proposal = await flow.propose(FIRST)
    pid = proposal["id"]
    assert proposal["run_id"] == RUN_B
    await rt.call("proposal.attach_patch", {"proposal_id": pid, "patch": REVISED}, agent(AUTHOR))
    await rt.call("proposal.request_review", {"proposal_id": pid}, console)
    await flow.approve_votes(pid)
    await rt.call("security.review", {"proposal_id": pid}, console)
    await rt.call("test.run", {"command": "printf ok", "proposal_id": pid}, console)
    asked = await rt.call(
        "human.request_approval", {"subject": "apply", "reason_md": "please", "proposal_id": pid}, agent(AUTHOR)
    )
    await rt.call(
        "human.request_approval",
        {"subject": "apply", "reason_md": "ok", "approval_id": asked["approval"]["id"], "status": "approved"},
        console,
    )
    note = await rt.call(
        "memory.record", {"scope": pid, "kind": "note", "title": "Why", "body_md": "Because."}, console
    )
    await rt.call("memory.mark_stale", {"memory_id": note["entry"]["id"], "reason_md": "Old."}, console)
    await rt.call(
        "decision.record",
        {"decision": "go", "rationale_md": "Reviewed.", "decided_by": "operator", "proposal_id": pid},
        console,
    )
    report = await rt.call("patch.validate", {"proposal_id": pid}, console)
    assert report["applicable"] is True, report["gates"]
    applied = await rt.call("patch.apply", {"proposal_id": pid}, console)
    assert applied["transaction"]["run_id"] == RUN_B
    await rt.call("task.update_status", {"task_id": task["id"], "status": "completed"}, console)

    events = [e for e in await all_events(rt) if about(e, pid, task["id"])]
    assert PROPOSAL_EVENTS <= {e["type"] for e in events}
    misfiled = [(e["type"], e["run_id"]) for e in events if e["run_id"] != RUN_B]
    assert misfiled == []

    # Run A's proposal, worked on by a console that now has run B selected, stays in run A.
    other = Flow(rt, task_id=in_a["id"])
    await other.claim("src/other.py")
    in_a_pid = (await other.propose(make_patch("src/other.py", "print('v1')", "print('a')")))["id"]
    await rt.call("vote.cast", {"proposal_id": in_a_pid, "vote": "approve", "reason_md": "ok"}, agent(REVIEWERS[0]))
    await rt.call("patch.validate", {"proposal_id": in_a_pid}, CONSOLE.with_run(RUN_B))
    events_a = [e for e in await all_events(rt) if about(e, in_a_pid, in_a["id"])]
    assert {"task.created", "claim.created", "proposal.created", "vote.cast", "patch.validated"} <= {
        e["type"] for e in events_a
    }
    assert {e["run_id"] for e in events_a} == {RUN_A}


async def test_a_capability_files_under_its_run_whatever_the_caller_or_the_latest_run(rt: Runtime) -> None:
    await two_runs(rt, latest=RUN_B)
    session = capability_caller(RUN_A, "T-1")
    # RUN_B started last: the old guess would have filed everything under it.
    task = (await rt.call("task.create", {"title": "Mine", "body_md": "x", "task_id": "T-1"}, session))["task"]
    assert task["run_id"] == RUN_A
    entry = await rt.call(
        "memory.record", {"scope": "project", "kind": "note", "title": "Seen", "body_md": "x"}, session
    )
    claim = await rt.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": "T-1", "path": "src/app.py"},
        session,
    )
    runs = {e["type"]: e["run_id"] for e in await all_events(rt)}
    assert runs["task.created"] == runs["memory.recorded"] == runs["claim.created"] == RUN_A
    assert entry["entry"]["author_id"] == AUTHOR and claim["claim"]["task_id"] == "T-1"


async def test_arguments_name_the_run_before_the_object(rt: Runtime) -> None:
    await two_runs(rt, latest=RUN_A)
    flow = Flow(rt)
    flow.task_id = await task_in(rt, RUN_B)
    claim = await rt.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "read", "task_id": flow.task_id, "path": "src/app.py", "run_id": RUN_A},
        agent("reviewer-1"),
    )
    await rt.call("resource.release", {"claim_id": claim["claim"]["id"]}, agent("reviewer-1"))
    runs = [(e["type"], e["run_id"]) for e in await all_events(rt) if e["type"].startswith("claim.")]
    assert runs == [("claim.created", RUN_A), ("claim.released", RUN_B)]


async def test_one_active_run_is_unambiguous_and_no_run_files_under_empty(rt: Runtime) -> None:
    before = (await rt.call("task.create", {"title": "Early", "body_md": "x"}))["task"]
    assert before["run_id"] == ""
    await create_run(rt, "only", run_id=RUN_A)
    after = (await rt.call("task.create", {"title": "Now", "body_md": "x"}))["task"]
    assert after["run_id"] == RUN_A
    await rt.call("task.update_status", {"task_id": before["id"], "status": "blocked"})
    runs = [(e["type"], e["task_id"], e["run_id"]) for e in await all_events(rt)]
    assert runs == [
        ("task.created", before["id"], ""),
        ("task.created", after["id"], RUN_A),
        ("task.updated", before["id"], RUN_A),  # an unscoped task: the one active run
    ]


async def test_several_runs_and_nothing_naming_one_files_under_empty_and_apply_refuses(rt: Runtime, repo: Path) -> None:
    await two_runs(rt, latest=RUN_B)
    flow = Flow(rt)
    await flow.task()
    proposal = await flow.ready(FIRST)
    pid = proposal["id"]
    assert proposal["run_id"] == ""
    assert {e["run_id"] for e in await all_events(rt) if about(e, pid, flow.task_id)} == {""}

    with pytest.raises(ToolError) as refused:
        await rt.call("patch.apply", {"proposal_id": pid})
    assert str(refused.value) == (
        "patch.apply: 2 runs are active (RUN-A, RUN-B) and nothing names the run this belongs to; pass run_id"
    )
    assert await scalar(rt, "SELECT COUNT(*) FROM transactions") == 0
    assert await scalar(rt, "SELECT status FROM proposals WHERE id = ?", (pid,)) == "pending"
    rollback = repo / ".roundtable" / "rollback"
    assert not rollback.exists() or not any(rollback.iterdir())
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"

    applied = await rt.call("patch.apply", {"proposal_id": pid, "run_id": RUN_B})
    assert applied["transaction"]["run_id"] == RUN_B
    assert [e["run_id"] for e in await all_events(rt) if e["type"] == "patch.applied"] == [RUN_B]


async def test_the_voters_run_never_labels_a_vote(rt: Runtime) -> None:
    """A reviewer whose in-process caller belongs to run A votes on run B's proposal: run B."""
    await two_runs(rt, latest=RUN_A)
    flow = Flow(rt)
    flow.task_id = await task_in(rt, RUN_B)
    await flow.claim("src/app.py")
    pid = (await flow.propose(FIRST))["id"]
    voter = agent(REVIEWERS[0]).with_run(RUN_A)
    await rt.call("vote.cast", {"proposal_id": pid, "vote": "approve", "reason_md": "ok"}, voter)
    assert [e["run_id"] for e in await all_events(rt) if e["type"] == "vote.cast"] == [RUN_B]


async def test_claims_validation_suspends_are_filed_under_the_proposals_run(rt: Runtime, repo: Path) -> None:
    await two_runs(rt, latest=RUN_A)
    flow = Flow(rt, task_id=await task_in(rt, RUN_B))
    await flow.claim("src/app.py")
    pid = (await flow.propose(FIRST))["id"]
    (repo / "src" / "app.py").write_text("print('changed under the claim')\n")
    report = await rt.call("patch.validate", {"proposal_id": pid}, CONSOLE.with_run(RUN_A))
    assert report["claim_error"] == "stale claim base hash: file:src/app.py"
    suspended = [e["run_id"] for e in await all_events(rt) if e["type"] == "claim.suspended"]
    assert suspended == [RUN_B]


@pytest.mark.parametrize(
    ("hint", "owner", "active", "expected"),
    [
        (RunHint(named="N", caller="C"), "O", ["X", "Y"], "N"),  # arguments / capability first
        (RunHint(caller="C"), "O", ["X", "Y"], "O"),  # then the object acted on
        (RunHint(caller="C"), "", ["X", "Y"], "C"),  # then the caller's own run
        (RunHint(), "", ["X"], "X"),  # then the one active run
        (RunHint(), "", [], ""),  # no active run: unscoped
        (RunHint(), "", ["X", "Y"], ""),  # several and nothing naming one: unscoped
    ],
)
def test_choose_order(hint: RunHint, owner: str, active: list[str], expected: str) -> None:
    assert choose(hint, owner, active) == expected


def test_choose_refuses_ambiguity_only_where_required() -> None:
    with pytest.raises(ToolError, match=r"^patch.apply: 2 runs are active \(X, Y\)"):
        choose(RunHint(), "", ["X", "Y"], required="patch.apply")
    assert choose(RunHint(), "", [], required="patch.apply") == ""
    assert choose(RunHint(caller="C"), "", ["X", "Y"], required="patch.apply") == "C"
