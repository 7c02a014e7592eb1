"""Workspaces: made from the test snapshot outside the project, proposed as git reads them,
revised in place, synced onto a moved tree, removed when the task ends."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.repository.patches import read_patch
from roundtable.tools.context import OPERATOR
from tests.helpers import AUTHOR, agent, git
from tests.workspaces.conftest import OTHER, Work

pytestmark = pytest.mark.anyio


def real(path: Path) -> str:
    return os.path.realpath(path)


def exists(path: str) -> bool:
    return os.path.lexists(path)


def blob_id(repo: Path, content: str) -> str:
    done = subprocess.run(["git", "hash-object", "--stdin"], input=content, cwd=repo, capture_output=True, text=True)
    return done.stdout.strip()


def has_object(repo: Path, oid: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", oid], cwd=repo, capture_output=True).returncode == 0


def has_object_in(gitdir: Path, oid: str) -> bool:
    done = subprocess.run(["git", "--git-dir", str(gitdir), "cat-file", "-e", oid], capture_output=True)
    return done.returncode == 0


def workspace_diff(path: Path, base: str) -> str:
    """`git diff` of the workspace against its base, as a user would run it there."""
    git(path, "add", "-A")
    return git(path, "diff", "--cached", "--no-renames", base)


async def test_a_workspace_is_the_test_snapshot_outside_the_project(work: Work, repo: Path, ws_dir: Path) -> None:
    assert str(work.path.parent) == real(ws_dir)
    assert not str(work.path).startswith(real(repo))
    assert (work.path / "src" / "app.py").read_text() == "print('v1')\n"
    assert (work.path / "README.txt").read_text() == "hello\nuncommitted\n"  # uncommitted change
    assert (work.path / "notes.md").read_text() == "untracked\n"  # untracked, not ignored
    assert not (work.path / "debug.log").exists()  # ignored
    assert not (work.path / ".roundtable").exists()
    again = await work.rt.call("workspace.create", {"agent_id": AUTHOR, "task_id": work.task_id}, OPERATOR)
    assert again["created"] is False and again["workspace"]["id"] == work.workspace_id
    listed = await work.rt.call("workspace.list", {"diffstat": True}, OPERATOR)
    [row] = listed["workspaces"]
    assert row["agent_id"] == AUTHOR and row["state"] == "active" and row["diffstat"]["files"] == 0


async def test_workspace_inside_the_project_is_refused(rt, repo: Path) -> None:  # type: ignore[no-untyped-def]
    from roundtable.services.workspaces.worktrees import base_dir

    config = rt.config.model_copy(
        update={"workspaces": rt.config.workspaces.model_copy(update={"dir": str(repo / "ws")})}
    )
    with pytest.raises(ToolError, match="inside the project"):
        base_dir(config, repo)


async def test_propose_creates_then_revises_from_the_same_workspace(work: Work, repo: Path) -> None:
    real_before = (repo / "src" / "app.py").read_text()
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    (work.path / "new.txt").write_text("fresh\n")
    async with work.rt.db.read() as r:
        base = await r.scalar("SELECT base_commit FROM workspaces")
    out = await work.propose()
    proposal = out["proposal"]
    # The author's next step needs ids, where it stands and what went in; nothing else.
    assert set(out) == {"proposal", "files", "claimed", "reviewers"}
    assert proposal == {"id": proposal["id"], "status": "in_review", "revision_number": 1}
    assert out["reviewers"] == ["reviewer-1"]  # asked in the same call
    async with work.rt.db.read() as r:  # the record links it (results leave the bookkeeping out)
        assert await r.scalar("SELECT workspace_id FROM proposals WHERE id = ?", (proposal["id"],)) == work.workspace_id
        revision = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (proposal["id"],))
        asked = await r.scalar("SELECT COUNT(*) FROM events WHERE type = 'proposal.review_requested'")
    assert asked == 1
    assert read_patch(repo, revision) == workspace_diff(work.path, base)
    assert sorted(out["files"]) == ["new.txt +1 -0", "src/app.py +1 -1"]
    assert len(out["claimed"]) == 2  # claimed on the author's behalf (claims.auto_on_propose)
    assert (repo / "src" / "app.py").read_text() == real_before  # the real tree is untouched
    assert not (repo / "new.txt").exists()
    # The next session finds the previous revision in place and revises it.
    (work.path / "src" / "app.py").write_text("print('v3')\n")
    again = await work.propose()
    assert again["proposal"] == {"id": proposal["id"], "status": "in_review", "revision_number": 2}
    async with work.rt.db.read() as r:
        revision = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (proposal["id"],))
        asked = await r.scalar("SELECT COUNT(*) FROM events WHERE type = 'proposal.review_requested'")
    assert read_patch(repo, revision) == workspace_diff(work.path, base)
    assert again["claimed"] == [] and asked == 2  # the new revision is up for review again


async def test_propose_can_hold_the_review_back(work: Work) -> None:
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    out = await work.propose(request_review=False)
    assert out["proposal"]["status"] == "pending" and "reviewers" not in out
    async with work.rt.db.read() as r:
        assert await r.scalar("SELECT COUNT(*) FROM events WHERE type = 'proposal.review_requested'") == 0
    asked = await work.call("proposal.request_review", {"proposal_id": out["proposal"]["id"]})
    assert asked["proposal"]["status"] == "in_review"  # the separate request still works


async def test_propose_without_changes_or_title_is_refused(work: Work) -> None:
    with pytest.raises(ToolError, match="no changes"):
        await work.propose()
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    with pytest.raises(ToolError, match="title and summary_md are required"):
        await work.call("workspace.propose", {"task_id": work.task_id})


async def test_another_agent_cannot_propose_or_name_the_author(work: Work) -> None:
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    with pytest.raises(ToolError, match="identity comes from the credential"):
        await work.call("workspace.propose", {"task_id": work.task_id, "agent_id": AUTHOR}, who=OTHER)
    with pytest.raises(ToolError, match="not found"):
        await work.call("workspace.propose", {"task_id": work.task_id, "title": "t", "summary_md": "s"}, who=OTHER)


def _symlink(ws: Path) -> str:
    (ws / "passwd").symlink_to("/etc/passwd")
    return "symbolic link"


def _dotgit(ws: Path) -> str:
    (ws / ".git").unlink()
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n")
    return r"\.git"


def _dotgit_elsewhere(ws: Path) -> str:
    other = ws.parent / "other-gitdir"
    other.mkdir(exist_ok=True)
    (ws / ".git").write_text(f"gitdir: {other}\n")
    return "no longer points at its worktree record"


def _roundtable(ws: Path) -> str:
    (ws / ".roundtable").mkdir()
    (ws / ".roundtable" / "config.yaml").write_text("x: 1\n")
    return "private state"


def _huge(ws: Path) -> str:
    with open(ws / "big.bin", "wb") as handle:
        handle.truncate(100 * 1024 * 1024)
    return "larger than"


def _control(ws: Path) -> str:
    (ws / "evil\x01name.txt").write_text("x\n")
    return "control character"


def _mode(ws: Path) -> str:
    (ws / "src" / "app.py").chmod(0o755)
    return "mode"


def _nested(ws: Path) -> str:
    (ws / "vendor").mkdir()
    subprocess.run(["git", "init", "-q", str(ws / "vendor")], check=True)
    (ws / "vendor" / "x.txt").write_text("x\n")
    return "nested git repository"


@pytest.mark.parametrize(
    "hostile", [_symlink, _dotgit, _dotgit_elsewhere, _roundtable, _huge, _control, _mode, _nested]
)
async def test_hostile_workspace_is_refused_and_nothing_recorded(work: Work, hostile) -> None:  # type: ignore[no-untyped-def]
    (work.path / "src" / "app.py").write_text("print('v2')\n")  # an honest change beside it
    reason = hostile(work.path)
    before = await work.counts()
    with pytest.raises(ToolError, match=reason):
        await work.propose()
    assert await work.counts() == before
    assert not exists("/tmp/pwned")


async def test_a_path_another_agent_holds_is_refused_and_nothing_recorded(work: Work) -> None:
    await work.call(
        "resource.claim",
        {"resource_type": "file", "claim_type": "write", "task_id": work.task_id, "path": "README.txt"},
        who=OTHER,
    )
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    (work.path / "README.txt").write_text("mine\n")
    before = await work.counts()
    with pytest.raises(ToolError, match=f"held by agent {OTHER}"):
        await work.propose()
    assert await work.counts() == before


async def test_sync_merges_a_moved_tree_and_reports_conflicts(work: Work, repo: Path) -> None:
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    # The tree moves under the workspace: one change elsewhere, one on the same line.
    (repo / "notes.md").write_text("untracked\nmoved\n")
    out = await work.call("workspace.sync", {"task_id": work.task_id})
    assert out["changed"] is True and out["conflicts"] == []
    assert (work.path / "notes.md").read_text() == "untracked\nmoved\n"
    assert (work.path / "src" / "app.py").read_text() == "print('v2')\n"
    proposed = await work.propose()
    assert proposed["files"] == ["src/app.py +1 -1"]
    (repo / "src" / "app.py").write_text("print('theirs')\n")
    validated = await work.rt.call("patch.validate", {"proposal_id": proposed["proposal"]["id"]}, OPERATOR)
    assert validated["stale_base"] == ["src/app.py"] and not validated["valid"]
    assert "stale base: src/app.py" in validated["base_error"]
    (work.path / "src" / "app.py").write_text("print('v3')\n")
    with pytest.raises(ToolError, match="workspace_sync brings it onto the current tree"):
        await work.propose()
    out = await work.call("workspace.sync", {"task_id": work.task_id})
    assert out["conflicts"] == ["src/app.py"]
    assert "<<<<<<<" in (work.path / "src" / "app.py").read_text()
    with pytest.raises(ToolError, match="conflict marker"):
        await work.propose()
    (work.path / "src" / "app.py").write_text("print('both')\n")
    revised = await work.propose()
    assert revised["proposal"]["revision_number"] == 2
    validated = await work.rt.call("patch.validate", {"proposal_id": proposed["proposal"]["id"]}, OPERATOR)
    assert validated["stale_base"] == []


async def test_workspaces_of_ended_tasks_are_swept(work: Work, repo: Path) -> None:
    await work.rt.call("task.update_status", {"task_id": work.task_id, "status": "completed"}, OPERATOR)
    from roundtable.tools.context import CHAIR

    out = await work.rt.call("workspace.sweep", {}, CHAIR)
    assert out["removed"] == [work.workspace_id]
    assert not work.path.exists()
    assert str(work.path) not in git(repo, "worktree", "list")
    listed = await work.rt.call("workspace.list", {"all": True}, OPERATOR)
    assert [w["state"] for w in listed["workspaces"]] == ["removed"]
    with pytest.raises(ToolError):
        await work.rt.call("workspace.sweep", {}, agent(AUTHOR))


async def test_nothing_the_agent_wrote_enters_the_project_repository(work: Work, repo: Path) -> None:
    content = "print('a blob only the agent wrote')\n"
    (work.path / "src" / "app.py").write_text(content)
    blob = blob_id(repo, content)
    await work.propose()
    await work.call("workspace.sync", {"task_id": work.task_id})
    (repo / "README.txt").write_text("moved\n")
    await work.call("workspace.sync", {"task_id": work.task_id})
    assert not has_object(repo, blob)  # the agent's objects lived in a private directory only
    assert (work.path / "src" / "app.py").read_text() == content
    assert (work.path / "README.txt").read_text() == "moved\n"


async def test_a_filter_driver_a_workspace_names_never_runs(work: Work, repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "filter-ran"
    # The operator's repository defines a filter; the agent's .gitattributes selects it.
    git(repo, "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'")
    git(repo, "config", "filter.evil.smudge", f"sh -c 'touch {marker}; cat'")
    (work.path / ".gitattributes").write_text("* filter=evil\n")
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    out = await work.propose()
    assert sorted(out["files"]) == [".gitattributes +1 -0", "src/app.py +1 -1"]
    (repo / "README.txt").write_text("moved\n")
    await work.call("workspace.sync", {"task_id": work.task_id})
    assert not exists(str(marker))


async def test_without_auto_claims_an_unclaimed_path_is_refused(repo: Path, ws_dir: Path) -> None:
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.agents import sync_agents

    policy = repo / "POLICIES.ROUNDTABLE.md"
    policy.write_text(policy.read_text().replace("  auto_on_propose: true", "  auto_on_propose: false"))
    rt = await Runtime.open(repo)
    try:
        await sync_agents(rt)
        task = (await rt.call("task.create", {"title": "t", "body_md": "b"}, OPERATOR))["task"]["id"]
        made = await rt.call("workspace.create", {"agent_id": AUTHOR, "task_id": task}, OPERATOR)
        (Path(made["workspace"]["path"]) / "src" / "app.py").write_text("print('v2')\n")
        args = {"task_id": task, "title": "t", "summary_md": "s"}
        with pytest.raises(ToolError, match=r"claims\.auto_on_propose is off"):
            await rt.call("workspace.propose", args, agent(AUTHOR))
        claim = {"resource_type": "file", "claim_type": "write", "task_id": task, "path": "src/app.py"}
        await rt.call("resource.claim", claim, agent(AUTHOR))
        out = await rt.call("workspace.propose", args, agent(AUTHOR))
        assert out["claimed"] == [] and out["proposal"]["revision_number"] == 1
    finally:
        await rt.close()


async def test_a_diff_over_the_patch_limit_is_refused_without_reading_it_whole(work: Work) -> None:
    line = "x" * 99 + "\n"
    for name in ("a.txt", "b.txt"):  # each under the per-file limit, together over the patch limit
        (work.path / name).write_text(line * 90_000)
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    before = await work.counts()
    with pytest.raises(ToolError, match="its diff is larger than 16 MiB"):
        await work.propose()
    assert await work.counts() == before


async def test_new_proposals_from_a_workspace_count_against_the_agents_quota(repo: Path) -> None:
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.agents import sync_agents

    config = repo / ".roundtable" / "config.yaml"
    config.write_text(config.read_text() + "limits:\n  proposals_per_agent: 1\n")
    rt = await Runtime.open(repo)
    try:
        await sync_agents(rt)
        proposed = []
        for n in (1, 2):
            task = (await rt.call("task.create", {"title": f"t{n}", "body_md": "b"}, OPERATOR))["task"]["id"]
            made = await rt.call("workspace.create", {"agent_id": AUTHOR, "task_id": task}, OPERATOR)
            (Path(made["workspace"]["path"]) / "src" / "app.py").write_text(f"print({n})\n")
            try:
                await rt.call("workspace.propose", {"task_id": task, "title": "t", "summary_md": "s"}, agent(AUTHOR))
                proposed.append(task)
            except ToolError as exc:
                assert "proposal quota reached" in str(exc)
        assert len(proposed) == 1
        async with rt.db.read() as r:
            assert await r.scalar("SELECT COUNT(*) FROM proposals") == 1
    finally:
        await rt.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership is handed back only when the owner runs as root")
async def test_files_a_sync_writes_belong_to_the_sandboxed_owner_and_links_are_not_followed(
    work: Work, repo: Path, tmp_path: Path
) -> None:
    from roundtable.services.workspaces.workspace_git import give_back

    for dirpath, dirnames, filenames in os.walk(work.path):  # as the sandbox hands it over
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), 65534, 65534, follow_symlinks=False)
    os.chown(work.path, 65534, 65534)
    (repo / "docs").mkdir()
    (repo / "docs" / "new.md").write_text("new upstream\n")
    await work.call("workspace.sync", {"task_id": work.task_id})
    assert owner_of(work.path / "docs" / "new.md") == owner_of(work.path / "docs") == 65534
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("x")
    (work.path / "evil").symlink_to(outside)
    give_back(work.path, ["evil/secret"])
    assert owner_of(outside / "secret") == 0


def owner_of(path: Path) -> int:
    return os.lstat(path).st_uid


async def test_a_policy_keeps_workspaces_of_ended_tasks_for_its_days(repo: Path) -> None:
    from roundtable import clock
    from roundtable.runtime import Runtime
    from roundtable.services.coordination.agents import sync_agents
    from roundtable.services.workspaces import worktrees as service

    policy = repo / "POLICIES.ROUNDTABLE.md"
    policy.write_text(policy.read_text().replace("  keep_days: 0", "  keep_days: 2"))
    rt = await Runtime.open(repo)
    try:
        await sync_agents(rt)
        task = (await rt.call("task.create", {"title": "t", "body_md": "b"}, OPERATOR))["task"]["id"]
        made = await rt.call("workspace.create", {"agent_id": AUTHOR, "task_id": task}, OPERATOR)
        path = Path(made["workspace"]["path"])
        await rt.call("task.update_status", {"task_id": task, "status": "cancelled"}, OPERATOR)
        now = clock.now()
        assert await service.sweep(rt, actor="chair", now=now) == []
        assert exists(str(path))
        day = 86_400 * 1_000_000_000
        assert await service.sweep(rt, actor="chair", now=clock.format_ns(clock.parse(now) + day)) == []
        later = clock.format_ns(clock.parse(now) + 2 * day + 1)
        assert await service.sweep(rt, actor="chair", now=later) == [made["workspace"]["id"]]
        assert not exists(str(path))
    finally:
        await rt.close()


async def test_a_merge_driver_a_workspace_names_never_runs(work: Work, repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "merge-driver-ran"
    git(repo, "config", "merge.evil.driver", f"sh -c 'touch {marker}; false'")
    (work.path / ".gitattributes").write_text("* merge=evil\n")
    (work.path / "src" / "app.py").write_text("print('mine')\n")
    (repo / "src" / "app.py").write_text("print('theirs')\n")
    with pytest.raises(ToolError, match="merge-tree failed"):
        await work.call("workspace.sync", {"task_id": work.task_id})
    assert not exists(str(marker))


async def test_a_sessions_own_repository_holds_the_base_tree_and_nothing_else(
    work: Work, repo: Path, tmp_path: Path
) -> None:
    from roundtable.services.workspaces.workspace_git import private_repo

    # The project holds what a session must not see: another branch's file, history, its config.
    git(repo, "config", "filter.evil.clean", "touch /nonexistent")
    git(repo, "switch", "-q", "-c", "secret")
    (repo / "secret.txt").write_text("the other branch\n")
    git(repo, "add", "secret.txt")
    git(repo, "commit", "-q", "-m", "secret")
    secret = git(repo, "rev-parse", "secret:secret.txt").strip()
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    git(repo, "switch", "-q", "-")
    async with work.rt.db.read() as r:
        base_tree = str(await r.scalar("SELECT base_tree FROM workspaces"))
    own = tmp_path / "git"
    await private_repo(repo, base_tree, work.path, own)

    def own_git(*args: str) -> str:  # as the harness runs it: only GIT_DIR, in the workspace
        env = {**os.environ, "GIT_DIR": str(own)}
        done = subprocess.run(["git", *args], cwd=work.path, env=env, capture_output=True, text=True, check=True)
        return done.stdout

    assert own_git("status", "--porcelain") == ""  # the checkout is its base: nothing changed
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    (work.path / "new.txt").write_text("fresh\n")
    assert own_git("status", "--porcelain") == " M src/app.py\n?? new.txt\n"
    out = await work.propose()
    async with work.rt.db.read() as r:
        revision = str(await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (out["proposal"]["id"],)))
    own_git("add", "-A")
    assert own_git("diff", "--cached", "--no-renames") == read_patch(repo, revision)  # what it proposed
    assert own_git("rev-list", "--all").count("\n") == 1  # one parentless commit: no history
    assert own_git("rev-parse", "HEAD^{tree}").strip() == base_tree
    assert not has_object_in(own, secret) and not has_object_in(own, first)  # no other branch, no history
    assert "filter.evil" not in (own / "config").read_text()


def _tests_policy(rt: Runtime, commands: dict[str, list[str]]) -> None:
    """The project's policy with a `tests:` block, loaded as a reload would."""
    import yaml

    from roundtable.services.policy.engine import load_policy

    block = yaml.safe_dump({"tests": {"commands": commands}})
    (rt.root / "POLICIES.ROUNDTABLE.md").write_text(f"# policy\n\n```yaml\n{block}```\n", encoding="utf-8")
    rt.policy = load_policy(rt.root)


async def test_propose_runs_the_test_on_the_new_revision_in_the_same_call(work: Work) -> None:
    _tests_policy(work.rt, {"unit": [sys.executable, "-c", "print('ran 3 tests: OK')"]})
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    out = await work.propose(test="unit")
    async with work.rt.db.read() as r:
        revision = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (out["proposal"]["id"],))
    assert out["test_run"]["status"] == "passed" and out["test_run"]["revision"] == revision
    assert "ran 3 tests: OK" in out["log"]
    # The revision is the evidence's: a second revision is tested as itself.
    (work.path / "src" / "app.py").write_text("print('v3')\n")
    again = await work.propose(test="unit")
    async with work.rt.db.read() as r:
        revision = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (out["proposal"]["id"],))
        runs = await r.scalar("SELECT COUNT(*) FROM test_runs WHERE proposal_id = ?", (out["proposal"]["id"],))
    assert again["test_run"]["revision"] == revision and runs == 2


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"test": "nosuch"}, "nosuch"),
        ({"test_paths": ["tests/test_app.py"]}, "test_paths needs test"),
        ({"test": "unit", "test_paths": ["../outside.py"]}, "paths[0]"),
    ],
)
async def test_a_test_it_would_refuse_refuses_the_proposal_and_records_nothing(
    work: Work, extra: dict[str, Any], says: str
) -> None:
    _tests_policy(work.rt, {"unit": [sys.executable, "-c", "pass", "{paths}"]})
    (work.path / "src" / "app.py").write_text("print('v2')\n")
    before = await work.counts()
    with pytest.raises(ToolError, match=re.escape(says)):
        await work.propose(**extra)
    assert await work.counts() == before
