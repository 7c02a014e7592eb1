"""The advertised schemas say what the server does: identity arguments the credential fills are
optional, words are enumerated from the domain vocabulary, numbers are bounded; an expired claim's
refusal says it expired, when, and that claiming again fixes it."""

from __future__ import annotations

import pytest

from roundtable import clock
from roundtable.domain import ProposalStatus, Risk, Vote
from roundtable.errors import ToolError
from roundtable.tools.registry import get_registry
from tests.governance.conftest import AUTHOR, Flow, make_patch
from tests.helpers import agent

pytestmark = pytest.mark.anyio
PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")


def _schema(tool: str) -> dict:
    spec = get_registry().lookup(tool)
    assert spec is not None
    return spec.input_schema


def test_identity_arguments_are_optional_and_words_enumerated() -> None:
    for tool, key in (
        ("proposal.create", "agent_id"),
        ("vote.cast", "agent_id"),
        ("decision.record", "decided_by"),
        ("agent.turn_request", "agent_id"),
        ("agent.turn_start", "agent_id"),
    ):
        assert key in _schema(tool)["properties"] and key not in _schema(tool)["required"], tool
    assert (
        _schema("proposal.create")["properties"]["risk"]["enum"] == list(Risk) == ["low", "normal", "high", "critical"]
    )
    assert _schema("task.create")["properties"]["risk"]["enum"] == list(Risk)
    assert _schema("vote.cast")["properties"]["vote"]["enum"] == list(Vote)
    assert _schema("proposal.list")["properties"]["status"]["enum"] == list(ProposalStatus)
    confidence = _schema("vote.cast")["properties"]["confidence"]
    assert (confidence["minimum"], confidence["maximum"]) == (0, 1)


async def test_the_credential_fills_the_author_and_words_read_any_case(flow: Flow) -> None:
    await flow.task()
    await flow.claim("src/app.py")
    out = await flow.call(
        "proposal.create",
        {
            "task_id": flow.task_id,
            "title": "t",
            "summary_md": "s",
            "affected_resources": [],
            "risk": "Low",
            "patch": PATCH,
        },
        agent(AUTHOR),
    )
    assert out["proposal"]["agent_id"] == AUTHOR and out["proposal"]["risk"] == "low"
    vote = await flow.call(
        "vote.cast", {"proposal_id": out["proposal"]["id"], "vote": "APPROVE", "reason_md": "ok"}, agent("reviewer-1")
    )
    assert vote["vote"]["vote"] == "approve" and vote["vote"]["agent_id"] == "reviewer-1"
    with pytest.raises(ToolError, match=r"^vote.cast: missing agent_id \(an agent's credential fills it"):
        await flow.call("vote.cast", {"proposal_id": out["proposal"]["id"], "vote": "approve", "reason_md": "ok"})
    with pytest.raises(ToolError, match="argument risk must be one of low, normal, high, critical"):
        await flow.call("task.create", {"title": "t", "body_md": "b", "risk": "medium"}, agent(AUTHOR))


async def test_an_expired_claim_says_it_expired_and_how_to_fix_it(flow: Flow) -> None:
    await flow.task()
    claim = (await flow.claim("src/app.py"))["claim"]
    past = "2000-01-01T00:00:00.000000000Z"
    async with flow.rt.db.write() as tx:
        await tx.execute("UPDATE claims SET expires_at = ? WHERE id = ?", (past, claim["id"]))
    with pytest.raises(ToolError) as exc:
        await flow.propose(PATCH)
    assert str(exc.value) == (
        f"unclaimed affected resource: file:src/app.py; your claim {claim['id']} on it expired at {past} — "
        "claim it again (resource_claim) and repeat this call"
    )
    with pytest.raises(ToolError, match=f"your claim {claim['id']} on it expired at {past}"):
        await flow.propose(PATCH, affected_resources=["file:src/app.py"])
    assert past < clock.now()
