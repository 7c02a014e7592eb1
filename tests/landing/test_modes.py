"""Landing modes against real git: `commit` leaves one commit with the record as trailers and
rolls back with a revert commit (or a confirmed reset); `branch` builds its commit with
plumbing and never touches the working tree or the current branch; a new revision replaces the
branch's commit."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.services.applying import landing
from tests.helpers import git
from tests.landing.conftest import opened
from tests.support.governance import REVIEWERS, Flow, make_patch

pytestmark = pytest.mark.anyio

PATCH = make_patch("src/app.py", "print('v1')", "print('v2')")
PATCH_2 = make_patch("src/app.py", "print('v1')", "print('v3')")


def trailers_of(repo: Path, ref: str) -> dict[str, list[str]]:
    return landing.read_trailers(git(repo, "show", "-s", "--format=%B", ref))


async def test_commit_mode_leaves_one_commit_with_the_record(repo: Path, origin: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    async with opened(repo, "landing:\n  mode: commit\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    assert out["landing"]["mode"] == "commit"
    head = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", "HEAD~1").strip() == base  # exactly one new commit
    assert out["landing"]["commit"] == head
    assert git(repo, "status", "--porcelain").strip() == ""  # committed: nothing left over
    assert (repo / "src" / "app.py").read_text() == "print('v2')\n"
    who = git(repo, "show", "-s", "--format=%an <%ae>|%cn <%ce>", "HEAD").strip()
    assert who == "implementer-1 <implementer-1@roundtable.invalid>|Olive Operator <olive@example.com>"
    t = trailers_of(repo, "HEAD")
    assert t["Roundtable-Proposal"] == [proposal["id"]]
    assert t["Roundtable-Revision"] == [proposal["current_revision"]]
    assert t["Roundtable-Approved-By"] == sorted(REVIEWERS)
    approval_id = out["human_approval"]["id"]
    assert t["Roundtable-Approval"] == [approval_id]  # the approval the apply recorded
    assert len(t["Roundtable-Test"]) == 1 and t["Roundtable-Test"][0].startswith("printf ok => passed (")


async def test_commit_mode_refuses_a_dirty_touched_path_and_changes_nothing(repo: Path, origin: Path) -> None:
    async with opened(repo, "landing:\n  mode: commit\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        (repo / "README.txt").write_text("local edit\n")  # not touched by the patch: allowed
        git(repo, "add", "src/app.py")  # staged state equal to HEAD: still clean
        before = git(repo, "rev-parse", "HEAD").strip()
        (repo / "src" / "app.py").write_text("print('v1')\n# mine\n")
        with pytest.raises(ToolError, match="clean working tree where the patch touches it"):
            await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        assert git(repo, "rev-parse", "HEAD").strip() == before
        async with rt.db.read() as r:
            assert await r.scalar("SELECT count(*) FROM transactions") == 0


async def test_rollback_of_a_committed_landing_is_a_revert_commit(repo: Path, origin: Path) -> None:
    async with opened(repo, "landing:\n  mode: commit\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        landed = out["landing"]["commit"]
        await flow.call("patch.rollback", {"transaction_id": out["transaction"]["id"], "reason_md": "not yet"})
    log = git(repo, "log", "--format=%H %s", "-3").splitlines()
    assert log[1].split()[0] == landed  # the landing stays in history
    assert log[0].split(" ", 1)[1] == 'Revert "Change"'
    assert trailers_of(repo, "HEAD")["Roundtable-Rollback"] == [out["transaction"]["id"]]
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
    assert git(repo, "status", "--porcelain").strip() == ""


async def test_reset_rollback_only_while_nothing_is_built_on_the_landing(repo: Path, origin: Path) -> None:
    async with opened(repo, "landing:\n  mode: commit\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        base = git(repo, "rev-parse", "HEAD").strip()
        out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        tx_id = out["transaction"]["id"]
        (repo / "NOTES.txt").write_text("later work\n")
        git(repo, "add", "NOTES.txt")
        git(repo, "commit", "-q", "-m", "later work")
        with pytest.raises(ToolError, match="commits were made on it"):
            await flow.call("patch.rollback", {"transaction_id": tx_id, "reset": True})
        git(repo, "reset", "-q", "--hard", "HEAD~1")  # the operator drops the later work
        await flow.call("patch.rollback", {"transaction_id": tx_id, "reset": True})
    assert git(repo, "rev-parse", "HEAD").strip() == base
    assert git(repo, "status", "--porcelain").strip() == ""


async def test_branch_mode_never_touches_the_working_tree_or_current_branch(repo: Path, origin: Path) -> None:
    (repo / "scratch.txt").write_text("uncommitted, untouched\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    status = git(repo, "status", "--porcelain")
    index = (repo / ".git" / "index").read_bytes()
    async with opened(repo, "landing:\n  mode: branch\n  push: true\n  remote: origin\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        async with rt.db.read() as r:
            state = await r.scalar("SELECT status FROM proposals WHERE id = ?", (proposal["id"],))
    ref = f"refs/heads/roundtable/{proposal['id']}"
    assert out["landing"]["ref"] == ref and state == "accepted"
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(repo, "status", "--porcelain") == status
    assert (repo / ".git" / "index").read_bytes() == index
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
    tip = git(repo, "rev-parse", ref).strip()
    assert git(repo, "rev-parse", f"{ref}~1").strip() == head
    assert git(repo, "show", f"{ref}:src/app.py") == "print('v2')\n"
    assert trailers_of(repo, ref)["Roundtable-Approved-By"] == sorted(REVIEWERS)
    assert git(origin, "rev-parse", ref).strip() == tip  # pushed to the bare remote


async def test_a_second_revision_replaces_the_branch_commit(repo: Path, origin: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    async with opened(repo, "landing:\n  mode: branch\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        first = await landing_sync(rt, proposal["id"])
        await flow.call(
            "proposal.attach_patch",
            {"proposal_id": proposal["id"], "patch": PATCH_2},
            caller_agent(),
        )
        second = await landing_sync(rt, proposal["id"])
    ref = f"refs/heads/roundtable/{proposal['id']}"
    assert first["commit"] != second["commit"] and second["built"]
    assert git(repo, "rev-parse", ref).strip() == second["commit"]
    assert git(repo, "rev-parse", f"{ref}~1").strip() == head  # replaced, not stacked
    assert git(repo, "show", f"{ref}:src/app.py") == "print('v3')\n"
    assert trailers_of(repo, ref)["Roundtable-Revision-Number"] == ["2"]


async def landing_sync(rt: object, proposal_id: str) -> dict:  # type: ignore[type-arg]
    from roundtable.services.applying import branch_apply

    return await branch_apply.sync(rt, proposal_id)  # type: ignore[arg-type]


def caller_agent():  # type: ignore[no-untyped-def]
    from tests.helpers import agent

    return agent("implementer-1")


async def test_rollback_of_a_branch_landing_is_a_revert_commit_on_its_branch(repo: Path, origin: Path) -> None:
    async with opened(repo, "landing:\n  mode: branch\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        ref = out["landing"]["ref"]
        await flow.call("patch.rollback", {"transaction_id": out["transaction"]["id"], "reason_md": "later"})
        async with rt.db.read() as r:
            status = await r.scalar("SELECT status FROM transactions")
    assert status == "rolled_back"
    assert git(repo, "rev-parse", f"{ref}~1").strip() == out["landing"]["commit"]  # history kept
    assert git(repo, "show", f"{ref}:src/app.py") == "print('v1')\n"
    assert trailers_of(repo, ref)["Roundtable-Rollback"] == [out["transaction"]["id"]]


async def test_commit_mode_without_a_committer_identity_says_how_to_set_it(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict = tmp_path / "gitconfig"
    strict.write_text("[user]\n\tuseConfigOnly = true\n")  # no identity guessed from the host
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(strict))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    head = git(repo, "rev-parse", "HEAD").strip()
    async with opened(repo, "landing:\n  mode: commit\n") as rt:
        flow = Flow(rt)
        proposal = await flow.ready(PATCH)
        with pytest.raises(ToolError, match="git needs your identity as the committer"):
            await flow.call("patch.apply", {"proposal_id": proposal["id"]})
        async with rt.db.read() as r:
            assert await r.scalar("SELECT count(*) FROM transactions") == 0
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"
