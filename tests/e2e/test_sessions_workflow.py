"""End to end: a real owner, the supervisor, and scripted agents as separate processes, each over
its own capability socket (through `roundtable mcp stdio --socket`).

operator goal → task → implementer claims and proposes → reviewer votes → security scan and
vote → tester evidence and vote → operator runs the tests, approves and applies → repository
changed; then the refusals (reviewer `proposal.create`, tester claiming `write`, a read outside
`readable_paths`, a mismatching `agent_id`, a call after revocation). Tokens never show up in
argv, logs, rows or error texts.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from roundtable.owner import Owner
from roundtable.runtime import Runtime
from roundtable.services.coordination.runs import create_run
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import Supervisor, start_supervisor
from tests.helpers import make_git_project

pytestmark = pytest.mark.anyio

TASK_BODY = """Add a greeting.

```append src/app.py
def greet() -> str:
    return "hello"
```
"""


@pytest.fixture
def repo(project: Path) -> Path:
    return make_git_project(project, {"src/app.py": "print('v1')\n", "README.txt": "hello\n"})


def log_lines(sup: Supervisor, session_id: str) -> list[dict[str, Any]]:
    path = sup.log_path(session_id)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"raw": line})
    return out


async def launch(sup: Supervisor, agent: str, task_id: str, proposal_id: str = "", *extra: str) -> str:
    res = await sup.launch(
        LaunchArgs(agent_id=agent, task_id=task_id, proposal_id=proposal_id, adapter="scripted"),
        extra_args=("--turn-timeout", "30", *extra),
    )
    return str(res["session"]["id"])


async def finish(sup: Supervisor, session_id: str, timeout: float = 90) -> list[dict[str, Any]]:
    await sup.wait(session_id, timeout)
    lines = log_lines(sup, session_id)
    assert any(line.get("step") == "done" for line in lines), lines
    return lines


async def call(rt: Runtime, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return await rt.call(tool, args)


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")


def descendants(pid: int) -> list[int]:
    out = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        out.append(int(child))
        out.extend(descendants(int(child)))
    return out


async def test_governed_workflow_with_scripted_agents(repo: Path) -> None:
    async with Owner(repo, http=False, socket=False, chair=True) as owner:
        rt: Runtime = owner.runtime
        sup = await start_supervisor(rt, heartbeat_interval=0.5, revoke_grace=10)
        try:
            await _workflow(rt, sup, repo)
        finally:
            await sup.close()


async def _workflow(rt: Runtime, sup: Supervisor, repo: Path) -> None:
    run = await create_run(rt, "Greet people")
    task = (
        await call(
            rt,
            "task.create",
            {
                "title": "Add greet()",
                "body_md": TASK_BODY,
                "assigned_agent_id": "implementer-1",
                "readable_paths": ["src"],
            },
        )
    )["task"]
    task_id = task["id"]

    # Implementer: edit in its workspace, propose it (claimed on its behalf), request review.
    impl = await launch(sup, "implementer-1", task_id)
    lines = await finish(sup, impl)
    steps = [line.get("step") for line in lines]
    assert (
        steps.index("turn_started") < steps.index("edited") < steps.index("proposed") < steps.index("turn_completed")
    ), steps
    proposal_id = next(line["proposal_id"] for line in lines if line.get("step") == "proposed")

    # Reviewer (with refusals), security, tester (with a refused write claim).
    rev = await launch(
        sup,
        "reviewer-1",
        task_id,
        proposal_id,
        "--probe",
        "proposal.create",
        "--probe",
        "read:README.txt",
        "--probe",
        "agent-mismatch",
    )
    sec = await launch(sup, "security-1", task_id, proposal_id)
    tst = await launch(sup, "tester-1", task_id, proposal_id, "--probe", "claim-write")
    rev_lines, sec_lines, tst_lines = [await finish(sup, s) for s in (rev, sec, tst)]
    probes = {line["probe"]: line for line in rev_lines + tst_lines if "probe" in line}
    assert probes["proposal.create"] == {
        "probe": "proposal.create",
        "refused": True,
        "text": "operation proposal.create is not permitted for role reviewer",
    }
    assert (
        probes["read:README.txt"]["refused"]
        and "outside the task's readable_paths" in probes["read:README.txt"]["text"]
    )
    assert probes["agent-mismatch"]["refused"]
    assert probes["agent-mismatch"]["text"] == "argument agent_id does not match the session capability"
    assert (
        probes["claim-write"]["refused"]
        and probes["claim-write"]["text"] == "claim type write is not permitted for role tester"
    )
    assert any(line.get("step") == "voted" for line in rev_lines)
    assert any(line.get("step") == "security_reviewed" for line in sec_lines)
    assert any(line.get("step") == "evidence" for line in tst_lines)

    # A call after revocation: a second reviewer session waits, the operator revokes it.
    late = await launch(sup, "reviewer-1", task_id, proposal_id, "--until-revoked")
    for _ in range(600):
        if any(line.get("step") == "waiting_for_revocation" for line in log_lines(sup, late)):
            break
        await asyncio.sleep(0.1)
    pid = sup.live[late].process.pid  # type: ignore[union-attr]
    token = environ_of(pid)["ROUNDTABLE_MCP_TOKEN"]
    assert token.startswith("rtcap_")
    for proc in [pid, *descendants(pid)]:
        assert token not in cmdline(proc)
    await sup.revoke(late, "operator")
    await sup.wait(late, 30)
    after = [line for line in log_lines(sup, late) if line.get("probe") == "after-revocation"]
    assert after == [{"probe": "after-revocation", "refused": True, "text": "capability expired or revoked"}]

    # Operator: trusted test run, approval, apply.
    await call(rt, "test.run", {"command": "printf ok", "proposal_id": proposal_id})
    req = await call(
        rt, "human.request_approval", {"subject": "apply", "reason_md": "ship it", "proposal_id": proposal_id}
    )
    await call(
        rt,
        "human.request_approval",
        {
            "subject": "apply",
            "reason_md": "ship it",
            "proposal_id": proposal_id,
            "approval_id": req["approval"]["id"],
            "status": "approved",
        },
    )
    applied = await call(rt, "patch.apply", {"proposal_id": proposal_id})
    assert applied["transaction"]["status"] == "applied"
    assert (repo / "src" / "app.py").read_text() == "print('v1')\ndef greet() -> str:\n    return \"hello\"\n"

    # The event log, in order.
    async with rt.db.read() as r:
        events = [
            (row["type"], row["actor_id"], json.loads(row["payload_json"]))
            for row in await r.fetchall("SELECT * FROM events WHERE run_id = ? ORDER BY id", (run.id,))
        ]
        rows = {
            t: [tuple(x) for x in await r.fetchall(f"SELECT * FROM {t}")]
            for t in ("agent_sessions", "agent_session_events", "session_capabilities", "events")
        }
    types = [e[0] for e in events]
    order = [
        "session.launched",
        "agent.turn_requested",
        "agent.turn_scheduled",
        "agent.turn_started",
        "claim.created",
        "proposal.created",
        "proposal.review_requested",
        "agent.turn_completed",
        "session.exited",
        "test.finished",
        "approval.decided",
        "patch.applied",
    ]
    revoked = [e[2]["reason"] for e in events if e[0] == "capability.revoked"]
    assert sorted(revoked) == ["operator"] + ["process_exited"] * 4
    positions = [types.index(t) for t in order]
    assert positions == sorted(positions), list(zip(order, positions, strict=True))
    # The three reviewers work concurrently (their turns interleave); each acts between the
    # implementer's exit and the operator's test run.
    for kind in ("capability.denied", "vote.cast", "security.reviewed", "test.evidence_reported"):
        assert types.index("session.exited") < types.index(kind) < types.index("test.finished"), kind
    denied = [e for e in events if e[0] == "capability.denied"]
    assert {d[2]["reason_code"] for d in denied} >= {
        "tool_not_permitted",
        "path_not_readable",
        "identity_mismatch",
        "claim_mode",
    }
    assert all(set(d[2]) == {"session_id", "tool", "reason_code"} for d in denied)
    exits = [e[2] for e in events if e[0] == "session.exited"]
    assert len(exits) == 5 and all(e["status"] == "ended" for e in exits)

    # No token anywhere it must not be.
    assert "rtcap_" not in repr(rows)
    for path in (repo / ".roundtable" / "logs" / "sessions").iterdir():
        assert "rtcap_" not in path.read_text()
    assert not sup.live
    print("\n".join(f"{t:28} {a or '':14} {json.dumps(p)[:90]}" for t, a, p in events))
