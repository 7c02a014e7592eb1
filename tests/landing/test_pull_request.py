"""`pull-request` mode against real git (a bare repository as `origin`) and the fake GitHub:
the pull request opens at the first revision and is updated per revision; the `forge_ci` gate
passes only for a green required check on the exact commit built from the current revision; a
red check sends the author a revision request with the quoted, redacted log tail, at most
`landing.ci_attempts` times, then asks the operator; a review comment on a diff line becomes a
proposal line comment; the operator's apply merges through the API and is accepted only when
the forge confirms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.applying import branch_apply
from tests.forge.fake_github import FakeGitHub
from tests.helpers import agent, git
from tests.landing.conftest import opened
from tests.support.governance import Flow, make_patch

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")
TOKEN_ENV = "RT_TEST_FORGE_TOKEN"


def landing_yaml(fake: FakeGitHub, *, open_at: str = "first_revision", attempts: int = 3) -> str:
    return f"""landing:
  mode: pull-request
  remote: origin
  ci_attempts: {attempts}
  log_tail_bytes: 200
  pull_request:
    open_at: {open_at}
    base: main
  forge:
    api_url: {fake.api_url}
    repository: {fake.repository}
    token_env: {TOKEN_ENV}
"""


def require_checks(repo: Path, *names: str) -> None:
    policy = repo / "POLICIES.ROUNDTABLE.md"
    listed = ", ".join(names)
    policy.write_text(policy.read_text() + f"\n```yaml\nforge_ci:\n  required: [{listed}]\n```\n")
    git(repo, "add", "POLICIES.ROUNDTABLE.md")
    git(repo, "commit", "-q", "-m", "require forge checks")
    git(repo, "push", "-q", "origin", "main")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    github = FakeGitHub()
    monkeypatch.setenv(TOKEN_ENV, github.token)
    return github


async def sync(rt: Runtime, proposal_id: str) -> dict[str, Any]:
    return await branch_apply.sync(rt, proposal_id)


async def landing_row(rt: Runtime, proposal_id: str) -> dict[str, Any]:
    async with rt.db.read() as r:
        row = await r.fetchone("SELECT * FROM landings WHERE proposal_id = ?", (proposal_id,))
    return dict(row)


async def forge_gate(flow: Flow, proposal_id: str) -> dict[str, Any]:
    out = await flow.call("patch.validate", {"proposal_id": proposal_id})
    return next(g for g in out["gates"] if g["name"] == "forge_ci")


async def test_pull_request_opens_at_first_revision_and_follows_each_revision(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    async with fake.serve(), opened(repo, landing_yaml(fake)) as rt:
        flow = Flow(rt)
        await flow.task()
        await flow.claim("src/app.py")
        proposal = await flow.propose(PATCH)
        first = await sync(rt, proposal["id"])
        ref = f"refs/heads/roundtable/{proposal['id']}"
        assert first["pull_request"]["number"] == 1 and fake.pulls[1]["head"]["ref"] == f"roundtable/{proposal['id']}"
        assert git(origin, "rev-parse", ref).strip() == first["commit"]  # pushed
        body = fake.pulls[1]["body"]
        assert proposal["id"] in body and "revision 1" in body and "| tests | FAIL |" in body
        again = await sync(rt, proposal["id"])
        assert not again["built"] and len(fake.pulls) == 1  # idempotent
        await flow.call(
            "proposal.attach_patch",
            {"proposal_id": proposal["id"], "patch": make_patch("src/app.py", "print('v1')", "print('v3')")},
            agent(),
        )
        second = await sync(rt, proposal["id"])
        assert second["built"] and second["commit"] != first["commit"]
        assert git(origin, "rev-parse", ref).strip() == second["commit"]
        assert "revision 2" in fake.pulls[1]["body"] and len(fake.pulls) == 1
        patches = [r for r in fake.requests if r["method"] == "PATCH"]
        assert len(patches) == 1


async def test_pull_request_waits_for_the_operator_stage_when_configured(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    async with fake.serve(), opened(repo, landing_yaml(fake, open_at="operator")) as rt:
        flow = Flow(rt)
        await flow.task()
        await flow.claim("src/app.py")
        proposal = await flow.propose(PATCH)
        waiting = await sync(rt, proposal["id"])
        assert waiting["pull_request"] is None and fake.pulls == {}
        await flow.approve_votes(proposal["id"])
        await flow.test_run(proposal["id"])
        ready = await sync(rt, proposal["id"])
        assert ready["pull_request"]["number"] == 1


async def test_forge_ci_counts_only_a_green_check_on_the_exact_commit(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    require_checks(repo, "test")
    async with fake.serve(), opened(repo, landing_yaml(fake)) as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        commit = (await sync(rt, proposal["id"]))["commit"]
        gate = await forge_gate(flow, proposal["id"])
        assert not gate["passed"] and "test: has not reported" in gate["reason"]
        fake.add_check("f" * 40, "test", "success")  # green elsewhere
        await sync(rt, proposal["id"])
        assert not (await forge_gate(flow, proposal["id"]))["passed"]
        fake.add_check(commit, "test", None)  # running on ours
        await sync(rt, proposal["id"])
        gate = await forge_gate(flow, proposal["id"])
        assert not gate["passed"] and f"test: pending on {commit[:12]}" in gate["reason"]
        fake.check_runs[commit] = []
        fake.add_check(commit, "test", "success")
        await sync(rt, proposal["id"])
        gate = await forge_gate(flow, proposal["id"])
        assert gate["passed"], gate
        assert f"test: success on {commit[:12]} https://github.test/" in gate["reason"]
        # A new revision gets a new commit: the old green never counts for it.
        await flow.call(
            "proposal.attach_patch",
            {"proposal_id": proposal["id"], "patch": make_patch("src/app.py", "print('v1')", "print('v3')")},
            agent(),
        )
        await sync(rt, proposal["id"])
        assert not (await forge_gate(flow, proposal["id"]))["passed"]


async def test_a_red_check_asks_the_author_to_revise_then_the_operator(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    require_checks(repo, "test*")
    leaked = "ghp_" + "L" * 36
    async with fake.serve(), opened(repo, landing_yaml(fake, attempts=1)) as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        commit = (await sync(rt, proposal["id"]))["commit"]
        job = fake.add_check(commit, "test (3.11)", "failure")
        fake.logs[job] = (
            "setup\n" * 200 + f"token={leaked}\nFAILED tests/test_app.py::test_v2 - assert 2 == 3\n"
        ).encode()
        out = await sync(rt, proposal["id"])
        assert out["revision_request"]
        async with rt.db.read() as r:
            rows = await r.fetchall("SELECT author, path, line, body_md FROM proposal_comments ORDER BY created_at")
        (author, path, line, body) = rows[0]
        assert (author, path, line) == ("forge-ci", "", None)
        assert "`test (3.11)` is **failure**" in body and "FAILED tests/test_app.py::test_v2" in body
        assert "untrusted text" in body and "~~~~text" in body
        assert leaked not in body and "[REDACTED]" in body
        assert len(body) < 1500  # the tail, not the whole log
        await sync(rt, proposal["id"])  # the same failure is not sent twice
        async with rt.db.read() as r:
            assert await r.scalar("SELECT count(*) FROM proposal_comments") == 1
        # The author revises; it is red again and the attempts are used up: the operator is asked.
        await flow.call(
            "proposal.attach_patch",
            {"proposal_id": proposal["id"], "patch": make_patch("src/app.py", "print('v1')", "print('v3')")},
            agent(),
        )
        commit2 = (await sync(rt, proposal["id"]))["commit"]
        fake.add_check(commit2, "test (3.11)", "failure")
        asked = (await sync(rt, proposal["id"]))["revision_request"]
        async with rt.db.read() as r:
            assert await r.scalar("SELECT count(*) FROM proposal_comments") == 1
            approval = await r.fetchone(
                "SELECT requested_by, status, subject FROM human_approvals WHERE id = ?", (asked,)
            )
        assert (approval[0], approval[1]) == ("forge-ci", "requested")
        assert "still fails" in approval[2]


async def test_a_review_comment_on_a_line_becomes_a_proposal_line_comment(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    async with fake.serve(), opened(repo, landing_yaml(fake)) as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        commit = (await sync(rt, proposal["id"]))["commit"]
        fake.add_review_comment(1, login="rita", path="src/app.py", line=1, sha=commit, body="Why v2 and not v3?")
        fake.add_review_comment(1, login="sam", path="src/app.py", line=1, sha="e" * 40, body="on another commit")
        fake.add_review(1, login="tom", state="CHANGES_REQUESTED", sha=commit, body="Needs a test.")
        fake.add_review(1, login="uma", state="APPROVED", sha=commit, body="fine")
        out = await sync(rt, proposal["id"])
        assert len(out["comments_added"]) == 2
        await sync(rt, proposal["id"])  # imported once
        async with rt.db.read() as r:
            rows = await r.fetchall(
                "SELECT author, path, line, side, revision, body_md FROM proposal_comments ORDER BY author"
            )
    assert len(rows) == 2
    author, path, line, side, revision, body = rows[0]
    assert (author, path, line, side, revision) == ("forge:rita", "src/app.py", 1, "new", 1)
    assert body.startswith("Why v2 and not v3?")
    assert (rows[1][0], rows[1][1], rows[1][2]) == ("forge:tom", "", None)
    assert "Changes requested on the pull request: Needs a test." in rows[1][5]


async def test_apply_merges_through_the_forge_and_accepts_only_a_confirmed_merge(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    require_checks(repo, "test")
    async with fake.serve(), opened(repo, landing_yaml(fake)) as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        commit = (await sync(rt, proposal["id"]))["commit"]
        fake.set_head(1, commit)  # GitHub saw the push
        fake.add_check(commit, "test", "success")
        fake.refuse_merge = "Base branch was modified."
        with pytest.raises(ToolError, match="did not merge pull request #1: Base branch was modified"):
            await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        async with rt.db.read() as r:
            status = await r.scalar("SELECT status FROM proposals WHERE id = ?", (proposal["id"],))
            tx = await r.fetchone("SELECT status, metadata_json FROM transactions")
        assert status in ("pending", "in_review") and tx[0] == "failed"
        fake.refuse_merge = ""
        out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        assert out["proposal"]["status"] == "accepted"
        assert out["landing"]["pr_number"] == 1 and fake.pulls[1]["merged"]
    merge = [r for r in fake.requests if r["path"].endswith("/merge")][-1]["json"]
    assert merge["sha"] == commit and merge["merge_method"] == "squash"
    assert f"Roundtable-Proposal: {proposal['id']}" in merge["commit_message"]
    assert f"Roundtable-Revision: {proposal['current_revision']}" in merge["commit_message"]
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"  # the working tree is not touched
    assert json.loads(tx[1])["landing"]["mode"] == "pull-request"


async def test_landing_operations_and_status_show_branch_pull_request_and_checks(
    repo: Path, origin: Path, fake: FakeGitHub
) -> None:
    from roundtable.cli.landing_cmd import landing_lines
    from roundtable.cli.status_cmd import gather
    from roundtable.services.views.entity import load_entity
    from roundtable.tools.context import Caller
    from roundtable.tui.widgets.inspector import _landing_parts

    async with fake.serve(), opened(repo, landing_yaml(fake)) as rt:
        flow = Flow(rt)
        await flow.task()
        await flow.claim("src/app.py")
        proposal = await flow.propose(PATCH)
        with pytest.raises(ToolError, match="tool not implemented"):  # internal: not there for others
            await flow.call("landing.refresh", {})
        out = await rt.call("landing.refresh", {}, Caller("internal", "landing"))
        assert out == {"synced": [proposal["id"]], "closed": [], "errors": []}
        commit = (await landing_row(rt, proposal["id"]))["commit_sha"]
        fake.add_check(commit, "test", "failure")
        synced = await flow.call("landing.sync", {"proposal_id": proposal["id"]})
        assert synced["landing"]["pr_url"] == "https://github.test/team/app/pull/1"
        data = await gather(repo)
        async with rt.db.read() as r:
            entity = await load_entity(r, "proposal", proposal["id"])
    assert entity is not None and entity.landing is not None
    shown = "\n".join(t.plain for t in _landing_parts(entity.landing))
    assert "pull request #1 (open)  https://github.test/team/app/pull/1" in shown
    assert f"failure   test  {commit[:12]}" in shown
    (row,) = data["landings"]
    assert row["pr_number"] == 1 and row["checks"][0]["conclusion"] == "failure"
    lines = landing_lines(row)
    assert lines[0] == f"{proposal['id']}  [pull-request]  branch roundtable/{proposal['id']} @ {commit[:12]}"
    assert lines[1] == "  pull request #1 (open): https://github.test/team/app/pull/1"
    assert lines[2].startswith(f"  failure   test  {commit[:12]}  https://github.test/")


async def test_a_running_owner_opens_the_pull_request_on_its_own(repo: Path, origin: Path, fake: FakeGitHub) -> None:
    from roundtable.owner import Owner
    from tests.helpers import eventually

    async with fake.serve():
        async with opened(repo, landing_yaml(fake) + "  poll_interval: 200ms\n") as rt:
            flow = Flow(rt)
            await flow.task()
            await flow.claim("src/app.py")
            proposal = await flow.propose(PATCH)
        async with Owner(repo, http=False, socket=False, chair=True, supervisor=False, notify=False) as owner:
            await eventually(
                lambda: _has_pull_request(owner.runtime, proposal["id"]), timeout=60, what="the pull request"
            )
    assert fake.pulls[1]["head"]["ref"] == f"roundtable/{proposal['id']}"


async def _has_pull_request(rt: Runtime, proposal_id: str) -> bool:
    async with rt.db.read() as r:
        return bool(await r.scalar("SELECT pr_number FROM landings WHERE proposal_id = ?", (proposal_id,)))


async def test_the_pull_request_of_a_rejected_proposal_is_closed(repo: Path, origin: Path, fake: FakeGitHub) -> None:
    from roundtable.tools.context import Caller

    async with fake.serve(), opened(repo, landing_yaml(fake)) as rt:
        flow = Flow(rt)
        await flow.task()
        await flow.claim("src/app.py")
        proposal = await flow.propose(PATCH)
        await sync(rt, proposal["id"])
        assert fake.pulls[1]["state"] == "open"
        await flow.call("patch.reject", {"proposal_id": proposal["id"], "reason_md": "not this way"})
        out = await rt.call("landing.refresh", {}, Caller("internal", "landing"))
        assert out["closed"] == [proposal["id"]] and fake.pulls[1]["state"] == "closed"
        again = await rt.call("landing.refresh", {}, Caller("internal", "landing"))
        assert again["closed"] == []
