"""Bad input: a clear error, and the repository and database unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from tests.governance.conftest import AUTHOR, Flow, agent, make_patch

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")


async def snapshot(rt: Runtime) -> tuple[int, ...]:
    tables = ("proposals", "patch_revisions", "votes", "decisions", "events", "resources", "proposal_resources")
    async with rt.db.read() as r:
        return tuple([int(await r.scalar(f"SELECT count(*) FROM {t}")) for t in tables])


def patch_files(repo: Path) -> list[str]:
    d = repo / ".roundtable" / "patches"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


BAD_PATCHES = [
    ("", "argument patch must not be empty"),
    ("just some text\n", "patch contains no diff headers"),
    ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,3 +1 @@\n-a\n", "invalid patch"),
    (
        "diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..1111111\n"
        "Binary files /dev/null and b/img.png differ\n",
        "binary patches are not supported",
    ),
    (make_patch("../outside.txt", "a", "b"), "outside the repository root"),
    (make_patch(".git/config", "a", "b"), "inside .git/"),
    (make_patch(".roundtable/config.yaml", "a", "b"), "inside .roundtable/"),
    ("--- src/app.py\n+++ src/app.py\n@@ -1 +1 @@\n-a\n+b\n", "must start with a/"),
    (make_patch("README.txt", "hello", "bye"), "unclaimed affected resource: file:README.txt"),
]


@pytest.mark.parametrize(("patch", "message"), BAD_PATCHES)
async def test_bad_patches_refused(flow: Flow, repo: Path, patch: str, message: str) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    before = await snapshot(flow.rt)
    with pytest.raises(ToolError, match=message.replace(".", r"\.").replace("/", "/")):
        await flow.propose(patch)
    assert await snapshot(flow.rt) == before
    assert patch_files(repo) == []


async def test_unknown_task_and_duplicate_id(flow: Flow) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    with pytest.raises(ToolError, match="get task T-nope: not found"):
        await flow.call(
            "proposal.create",
            {
                "task_id": "T-nope",
                "agent_id": AUTHOR,
                "title": "t",
                "summary_md": "s",
                "affected_resources": [],
                "risk": "normal",
                "patch": PATCH,
            },
            agent(AUTHOR),
        )
    p = await flow.propose(PATCH, proposal_id="P-one")
    with pytest.raises(ToolError, match="already exists"):
        await flow.propose(PATCH, proposal_id="P-one")
    with pytest.raises(ToolError, match="must be 1-128"):
        await flow.propose(PATCH, proposal_id="../evil")
    assert p["id"] == "P-one"


async def test_agent_cannot_propose_as_someone_else(flow: Flow) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    with pytest.raises(ToolError, match="acts as reviewer-1"):
        await flow.call(
            "proposal.create",
            {
                "task_id": flow.task_id,
                "agent_id": AUTHOR,
                "title": "t",
                "summary_md": "s",
                "affected_resources": [],
                "risk": "normal",
                "patch": PATCH,
            },
            agent("reviewer-1"),
        )


async def test_vote_errors(flow: Flow) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    p = await flow.propose(PATCH)
    before = await snapshot(flow.rt)
    cases = [
        (
            {"proposal_id": "P-nope", "agent_id": "r", "vote": "approve", "reason_md": "x"},
            "get proposal P-nope: not found",
        ),
        ({"proposal_id": p["id"], "agent_id": "r", "vote": "yes", "reason_md": "x"}, "vote must be one of"),
        ({"proposal_id": p["id"], "agent_id": AUTHOR, "vote": "approve", "reason_md": "x"}, "cannot vote"),
        (
            {"proposal_id": p["id"], "agent_id": "r", "vote": "approve", "reason_md": "x", "confidence": 2},
            "argument confidence must be at most 1",
        ),
        (
            {"proposal_id": p["id"], "agent_id": "r", "vote": "approve", "reason_md": "x", "confidence": 1.5},
            "argument confidence must be at most 1",
        ),
        (
            {"proposal_id": p["id"], "agent_id": "r", "vote": "approve", "reason_md": "x", "confidence": -0.1},
            "argument confidence must be at least 0",
        ),
        (
            {"proposal_id": p["id"], "agent_id": "r", "vote": "approve", "reason_md": "x", "vote_id": "../V"},
            "argument vote_id must be 1-128 letters",
        ),
        ({"proposal_id": p["id"], "agent_id": "r", "vote": None, "reason_md": "x"}, "vote must be one of"),
    ]
    for args, message in cases:
        with pytest.raises(ToolError, match=message):
            await flow.call("vote.cast", args, agent(str(args["agent_id"])))
    assert await snapshot(flow.rt) == before


async def test_attach_patch_rules(flow: Flow, repo: Path) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    p = await flow.propose(PATCH)
    with pytest.raises(ToolError, match="you are reviewer-1, not implementer-1"):
        await flow.call("proposal.attach_patch", {"proposal_id": p["id"], "patch": PATCH}, agent("reviewer-1"))
    with pytest.raises(ToolError, match=r"unclaimed affected resource: file:README\.txt"):
        await flow.call(
            "proposal.attach_patch",
            {"proposal_id": p["id"], "patch": make_patch("README.txt", "hello", "x")},
            agent(AUTHOR),
        )
    same = await flow.call("proposal.attach_patch", {"proposal_id": p["id"], "patch": PATCH}, agent(AUTHOR))
    assert same["proposal"]["revision_number"] == 1
    await flow.call("patch.reject", {"proposal_id": p["id"], "reason_md": "no"})
    with pytest.raises(ToolError, match="rejected"):
        await flow.call(
            "proposal.attach_patch",
            {"proposal_id": p["id"], "patch": make_patch("src/app.py", "print('v1')", "z")},
            agent(AUTHOR),
        )


async def test_decision_record(flow: Flow) -> None:
    await flow.task()
    out = await flow.call(
        "decision.record",
        {"decision": "use sqlite", "rationale_md": "simple", "decided_by": "architect-1", "task_id": flow.task_id},
    )
    assert out["decision"]["task_id"] == flow.task_id
    with pytest.raises(ToolError, match="get proposal P-x: not found"):
        await flow.call(
            "decision.record", {"decision": "d", "rationale_md": "r", "decided_by": "a", "proposal_id": "P-x"}
        )
    with pytest.raises(ToolError, match="already exists"):
        await flow.call(
            "decision.record",
            {"decision": "d", "rationale_md": "r", "decided_by": "a", "decision_id": out["decision"]["id"]},
        )


async def test_list_and_get(flow: Flow) -> None:
    await flow.task()
    await flow.claim("src", resource_type="directory")  # a listed resource must be claimed
    p = await flow.propose(PATCH, affected_resources=["directory:src"])
    listed = await flow.call("proposal.list", {"task_id": flow.task_id})
    assert [x["id"] for x in listed["proposals"]] == [p["id"]]
    assert (await flow.call("proposal.list", {"status": "accepted"}))["proposals"] == []
    got = await flow.call("proposal.get", {"proposal_id": p["id"]})
    assert [r["resource_id"] for r in got["proposal_resources"]] == ["directory:src"]  # beyond the patch's files
    full = await flow.call("proposal.get", {"proposal_id": p["id"], "detail": True})
    assert full["revisions"][0]["sha256"] == p["current_revision"]
    with pytest.raises(ToolError, match="get proposal P-missing: not found"):
        await flow.call("proposal.get", {"proposal_id": "P-missing"})
