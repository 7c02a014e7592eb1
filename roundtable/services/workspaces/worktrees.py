"""Workspaces: one git worktree per agent and task, outside the project, whose changes become a
governed proposal.

`create` snapshots the working tree exactly as `test.run` does (HEAD, uncommitted changes and
untracked files that are not ignored; never `.roundtable/` — `scratch.snapshot`), checks the
snapshot out with `git worktree add --detach` under the workspaces directory (`workspaces.dir`
in the config, default `$XDG_STATE_HOME/roundtable/workspaces`; refused inside the project) and
records it (agent, task, run, base commit and tree, path, the worktree's administrative
directory, state). One live workspace per agent and task: asking again returns the same one, so
an author's next session (after a `revise` vote or a failed test) finds its previous revision in
place.

`propose` reads the workspace's diff against its base the way git reads it (`workspace_git`:
nothing the agent wrote is executed, its `.git` is verified and never read), then hands the
bytes to `proposals.create` / `proposals.attach` — so a workspace is refused for exactly what a
hand-written patch is refused for — after claiming (write) on the author's behalf the touched
paths nobody else holds, where the policy allows it (`claims.auto_on_propose`), and asks for its
review (moving it to `in_review`, as `proposal.request_review` does) unless told not to. Claims,
the proposal or its new revision, the review request and the workspace's record are one
transaction: a refusal records nothing.

`sync` moves a workspace onto the current tree by a three-way merge (`git merge-tree`), its base
being the merge base, and reports the conflicting paths; `remove` deletes the directory and
prunes git's record of it; `sweep` removes the workspaces of completed or cancelled tasks (after
`workspaces.keep_days` days when the policy keeps them). `stale_paths` tells `patch.validate`
which touched paths changed in the tree since a proposal's workspace base.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from roundtable import clock
from roundtable.domain import EventType, Risk, TaskStatus, WorkspaceState
from roundtable.errors import NotFound, PatchDoesNotApply, ToolError, ValidationError
from roundtable.services.args import Args, Flag, Id, RiskWord, Text, Texts, Title, identity
from roundtable.services.coordination.claims import ClaimConflict, ClaimRequest, acquire, covering_write_claims
from roundtable.services.governance import proposals
from roundtable.services.governance.evidence import Actor
from roundtable.services.governance.gates import OPEN_STATUSES
from roundtable.services.policy.engine import Policy
from roundtable.services.repository import hashing, scratch
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.patches import (
    CONTROL,
    MAX_PATCH_BYTES,
    ParsedPatch,
    patch_sha256,
)
from roundtable.services.run_scope import NO_HINT, RunHint, resolve, task_run
from roundtable.services.testing import test_exec, test_runs
from roundtable.services.testing.test_runs import private_paths
from roundtable.services.workspaces.workspace_git import (
    DIFF_ARGS,
    Bounds,
    Tree,
    give_back,
    repo_git,
    scan,
    tree_git,
    tree_output,
    verify,
)
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Agent, Proposal, Resource, Task, Workspace

if TYPE_CHECKING:
    from roundtable.config import Config
    from roundtable.services.project import Project

ENDED_TASKS = (TaskStatus.COMPLETED.value, TaskStatus.CANCELLED.value)
CONFLICT_MARKER = "<<<<<<< "
DAY_NS = 86_400 * 1_000_000_000


def base_dir(config: Config | None, root: Path) -> Path:
    """Where workspaces go: `workspaces.dir` (a relative one is relative to the project's parent),
    else `$XDG_STATE_HOME/roundtable/workspaces` (`~/.local/state/…`). Never inside the project."""
    configured = config.workspaces.dir.strip() if config is not None else ""
    if configured:
        path = Path(os.path.expanduser(configured))
        if not path.is_absolute():
            path = root.resolve().parent / path
    else:
        state = os.environ.get("XDG_STATE_HOME", "").strip()
        path = (Path(state) if state else Path.home() / ".local" / "state") / "roundtable" / "workspaces"
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    if real == real_root or real.startswith(real_root + os.sep):
        raise ValidationError(f"workspaces.dir {path} is inside the project; choose a directory outside it")
    return Path(real)


def tree_of(ws: Workspace, root: Path) -> Tree:
    return Tree(root=root, path=Path(ws.path), gitdir=Path(ws.gitdir))


@asynccontextmanager
async def _private_dir() -> AsyncIterator[Path]:
    """A private temporary directory (a temporary index lives there), removed afterwards."""
    path = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-ws-"))
    try:
        yield path
    finally:
        await asyncio.to_thread(shutil.rmtree, path, True)


# --- reading -------------------------------------------------------------------------------


async def live(q: Reader | Tx, agent_id: str, task_id: str) -> Workspace | None:
    """The agent's live workspace for the task, if any."""
    return await q.one(
        Workspace,
        "SELECT * FROM workspaces WHERE agent_id = ? AND task_id = ? AND state != ? ORDER BY created_at DESC LIMIT 1",
        (agent_id, task_id, WorkspaceState.REMOVED.value),
    )


async def require_live(q: Reader | Tx, agent_id: str, task_id: str) -> Workspace:
    ws = await live(q, agent_id, task_id)
    if ws is None:
        raise NotFound("workspace", f"of {agent_id} for task {task_id}")
    return ws


async def listing(q: Reader | Tx, args: ListArgs | None = None) -> list[Workspace]:
    """The workspaces `args` selects (`workspace.list`'s filters; none: every live one), oldest first."""
    args = args or ListArgs()
    where, params = [], []
    if args.agent_id:
        where.append("agent_id = ?")
        params.append(args.agent_id)
    if args.task_id:
        where.append("task_id = ?")
        params.append(args.task_id)
    if not args.all:
        where.append("state != ?")
        params.append(WorkspaceState.REMOVED.value)
    sql = "SELECT * FROM workspaces" + (" WHERE " + " AND ".join(where) if where else "")
    return await q.all(Workspace, sql + " ORDER BY created_at, id", params)


def workspace_dict(ws: Workspace) -> dict[str, Any]:
    out = ws.to_dict()
    try:
        out["conflicts"] = json.loads(ws.conflicts_json or "[]")
    except ValueError:
        out["conflicts"] = []
    out.pop("conflicts_json", None)
    return out


# --- the diff ------------------------------------------------------------------------------


LOCAL_FILES = "roundtable-local-files"


def local_files(gitdir: Path) -> list[str]:
    """The workspace's harness files `roundtable connect --workspace` wrote (its MCP entry, an
    approval): listed in the worktree's record inside the project's repository, never proposed."""
    try:
        text = (gitdir / LOCAL_FILES).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    out: list[str] = []
    for line in text.splitlines():
        rel = line.strip()
        if rel and not rel.startswith("/") and ".." not in rel.split("/") and not CONTROL.search(rel):
            out.append(rel)
    return out


def mark_local(ws: Workspace, rels: list[str]) -> None:
    """Add `rels` to the workspace's local files (blocking)."""
    gitdir = Path(ws.gitdir)
    known = local_files(gitdir)
    merged = [*known, *(r for r in rels if r not in known)]
    (gitdir / LOCAL_FILES).write_text("".join(f"{r}\n" for r in merged), encoding="utf-8")


def bounds_of(config: Config | None) -> Bounds:
    """The configured `workspaces.max_*` bounds (the defaults without a configuration)."""
    if config is None:
        return Bounds()
    settings = config.workspaces
    return Bounds(settings.max_files, settings.max_bytes, settings.max_file_bytes)


async def _index_of_workspace(tree: Tree, tmp: Path, base_tree: str, bounds: Bounds) -> None:
    """`tmp/index` := the workspace's files as git would add them (base tree, then `add -A`; the
    harness files `connect --workspace` wrote are left out), their objects in `tmp/objects`.
    The workspace is held to `bounds` before git reads any of its files."""
    index, objects = tmp / "index", tmp / "objects"
    await tree_git(tree, ["read-tree", base_tree], index=index, objects=objects)
    await scan(tree, index, base_tree, bounds)
    excluded = [f":(exclude,literal){rel}" for rel in await asyncio.to_thread(local_files, tree.gitdir)]
    await tree_git(tree, ["add", "-A", "--", ".", *excluded], index=index, objects=objects)


async def workspace_patch(root: Path, ws: Workspace, bounds: Bounds) -> str:
    """The workspace's diff against its base, as `git diff` of it prints it ("" when none)."""
    tree = tree_of(ws, root)
    await asyncio.to_thread(verify, tree)
    async with _private_dir() as tmp:
        await _index_of_workspace(tree, tmp, ws.base_tree, bounds)
        out = await tree_output(
            tree,
            ["diff", "--cached", *DIFF_ARGS, ws.base_commit],
            index=tmp / "index",
            objects=tmp / "objects",
            cap=MAX_PATCH_BYTES,
        )
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("workspace refused: its diff is not UTF-8 text (binary content?)") from None


async def diffstat(root: Path, ws: Workspace, bounds: Bounds) -> dict[str, Any]:
    """Files, added and deleted lines of the live work (`git diff --numstat`); an unreadable or
    refused workspace says why instead."""
    tree = tree_of(ws, root)
    try:
        await asyncio.to_thread(verify, tree)
        async with _private_dir() as tmp:
            await _index_of_workspace(tree, tmp, ws.base_tree, bounds)
            _code, out = await tree_git(
                tree,
                ["diff", "--cached", "--numstat", "-z", *DIFF_ARGS, ws.base_commit],
                index=tmp / "index",
                objects=tmp / "objects",
            )
    except ToolError as exc:
        return {"files": 0, "added": 0, "deleted": 0, "error": str(exc)}
    files = added = deleted = 0
    for record in out.decode("utf-8", "replace").split("\0"):
        parts = record.split("\t")
        if len(parts) >= 3:
            files += 1
            added += int(parts[0]) if parts[0].isdigit() else 0
            deleted += int(parts[1]) if parts[1].isdigit() else 0
    return {"files": files, "added": added, "deleted": deleted}


def patch_stat(parsed: ParsedPatch) -> dict[str, Any]:
    """A diffstat of a parsed patch: per file and in total."""
    files = [{"path": c.new or c.old, "added": c.added, "deleted": c.deleted} for c in parsed.changes]
    return {
        "files": files,
        "added": sum(c.added for c in parsed.changes),
        "deleted": sum(c.deleted for c in parsed.changes),
    }


# --- create --------------------------------------------------------------------------------


async def _snapshot(runtime: Project, tmp: Path) -> tuple[str, str]:
    """(commit, tree) of the working tree as `test.run` snapshots it."""
    _socket_dir, excluded = private_paths(runtime)
    commit = await scratch.snapshot(runtime.root, tmp, excluded, needed_by="a workspace")
    tree = await repo_git(runtime.root, ["rev-parse", f"{commit}^{{tree}}"])
    return commit, tree


async def _check_work(q: Reader | Tx, agent_id: str, task_id: str) -> Task:
    agent = await q.one(Agent, "SELECT * FROM agents WHERE id = ?", (agent_id,))
    if agent is not None and not agent.is_enabled:
        raise ValidationError(f"agent {agent_id} is disabled")
    task = await q.one(Task, "SELECT * FROM tasks WHERE id = ?", (task_id,))
    if task is None:
        raise NotFound("task", task_id)
    if task.status in ENDED_TASKS:
        raise ValidationError(f"task {task_id} is {task.status}; a workspace is made for open work only")
    return task


_AGENT = "The agent (default: the agent your credential names; agents may not name another)."


class CreateArgs(Args):
    # `workspace.create`: an agent's own (its credential names it), the operator's for anyone, the
    # supervisor's for a session.
    agent_id: Id = Field("", description=_AGENT)
    task_id: Id


class ProposeArgs(Args):
    # `workspace.propose`: the title and summary are needed only for a new proposal.
    task_id: Id
    agent_id: Id = Field(default="", description=_AGENT)
    title: Title = Field(default="", description="For a new proposal.")
    summary_md: Text = Field(default="", description="What and why (a new proposal).")
    risk: RiskWord = Field(
        default=Risk.NORMAL, description="A new proposal's; high and critical need a human's approval."
    )
    request_review: Flag = Field(default=True, description="Default true; false leaves it pending.")
    test: Text = Field(default="", description="A test_run command to run on the new revision (its evidence).")
    test_paths: Texts = Field(default=[], description="test's paths, as test_run's.")


class SyncArgs(Args):
    # `workspace.sync`.
    task_id: Id
    agent_id: Id = Field(default="", description=_AGENT)


class RemoveArgs(Args):
    # `workspace.remove`.
    workspace_id: Id = Field(description="Workspace id (WS-…).")
    reason: Text = Field(default="", description="Why.")


class ListArgs(Args):
    # `workspace.list` (the operator's).
    agent_id: Id = Field(default="", description="Exact agent id.")
    task_id: Id = Field(default="", description="Exact task id.")
    all: Flag = Field(default=False, description="Include removed ones.")
    diffstat: Flag = Field(default=False, description="Add each live workspace's diffstat (runs git).")


class UnproposedArgs(Args):
    # `workspace.record_unproposed` (internal: the supervisor's).
    workspace_id: Id = Field(description="Workspace id.")
    session_id: Id = Field(default="", description="Session id.")
    reason: Text = Field(description="Why.")


async def list_workspaces(runtime: Project, args: ListArgs) -> list[dict[str, Any]]:
    """`workspace.list`: the selected workspaces as records, each live one with its diffstat when
    `args.diffstat` asks (git runs after the read, outside it)."""
    async with runtime.db.read() as r:
        rows = await listing(r, args)
    out = []
    for ws in rows:
        item = workspace_dict(ws)
        if args.diffstat and ws.state != WorkspaceState.REMOVED:
            item["diffstat"] = await diffstat(runtime.root, ws, bounds_of(runtime.config))
        out.append(item)
    return out


async def create(runtime: Project, args: CreateArgs, *, actor: str, runs: RunHint = NO_HINT) -> dict[str, Any]:
    """The agent's live workspace for the task, made now if it has none (`created` says which)."""
    agent_id, task_id = args.agent_id.strip(), args.task_id.strip()
    async with runtime.db.read() as r:
        await _check_work(r, agent_id, task_id)
        existing = await live(r, agent_id, task_id)
    if existing is not None:
        return {"workspace": workspace_dict(existing), "created": False}
    root = runtime.root
    parent = base_dir(runtime.config, root)
    await asyncio.to_thread(lambda: parent.mkdir(mode=0o700, parents=True, exist_ok=True))
    workspace_id = clock.new_id("WS")
    path = parent / workspace_id
    made = False
    try:
        async with _private_dir() as tmp:
            commit, base_tree = await _snapshot(runtime, tmp)
        async with scratch.worktree_admin(root):
            await repo_git(root, ["worktree", "add", "--detach", "--quiet", str(path), commit])
        made = True
        text = await asyncio.to_thread((path / ".git").read_text, "utf-8")
        if not text.startswith("gitdir: "):
            raise ToolError(f"git worktree add wrote an unexpected {path / '.git'}")
        gitdir = Path(text[len("gitdir: ") :].strip())
        now = clock.now()
        async with runtime.db.write(tool="workspace.create") as tx:
            await _check_work(tx, agent_id, task_id)
            raced = await live(tx, agent_id, task_id)
            if raced is not None:
                result = {"workspace": workspace_dict(raced), "created": False}
            else:
                run = await resolve(tx, runs, owner=await task_run(tx, task_id))
                await tx.insert(
                    "workspaces",
                    {
                        "id": workspace_id,
                        "agent_id": agent_id,
                        "task_id": task_id,
                        "run_id": run,
                        "base_commit": commit,
                        "base_tree": base_tree,
                        "path": str(path),
                        "gitdir": str(gitdir),
                        "state": WorkspaceState.ACTIVE.value,
                        "created_at": now,
                        "updated_at": now,
                    },
                )
                await tx.append_event(
                    run,
                    EventType.WORKSPACE_CREATED,
                    {"workspace_id": workspace_id, "agent_id": agent_id, "path": str(path), "base_tree": base_tree},
                    actor_id=actor,
                    task_id=task_id,
                )
                row = await tx.get(Workspace, workspace_id)
                result = {"workspace": workspace_dict(row), "created": True}
    except BaseException:
        if made:
            await _delete(root, path)
        raise
    if not result["created"] and made:
        await _delete(root, path)
    return result


# --- propose -------------------------------------------------------------------------------


async def _auto_claims(
    tx: Tx, root: Path, policy: Policy, agent_id: str, task_id: str, run: str, parsed: ParsedPatch, now: str
) -> list[str]:
    """Claim (write) the touched paths the author holds no write claim on, where the policy
    allows it; a path someone else holds refuses the whole proposal."""
    covering = await covering_write_claims(tx, agent_id, list(parsed.touched), now)
    missing = [p for p in parsed.touched if p not in covering]
    if not missing:
        return []
    if not policy.auto_claim_on_propose:
        raise ToolError(
            f"unclaimed affected resource: file:{missing[0]} (claims.auto_on_propose is off: claim it with "
            "resource_claim first)"
        )
    claimed: list[str] = []
    for path in missing:
        base_hash = await asyncio.to_thread(hashing.resource_hash, root, "file", path)
        request = ClaimRequest(
            agent_id=agent_id,
            task_id=task_id,
            claim_type="write",
            resource=Resource(
                id=f"file:{path}",
                type="file",
                path=path,
                symbol="",
                language=symbol_index.detect_language(path),
                start_line=0,
                end_line=0,
                current_hash=base_hash,
                metadata_json="{}",
            ),
            rationale="claimed on proposing the workspace (claims.auto_on_propose)",
            run_id=run,
            base_hash=base_hash,
            raw_path=path,
        )
        try:
            granted = await acquire(tx, request, now)
        except ClaimConflict as conflict:
            raise ToolError(f"{conflict}; the workspace touches a path another agent holds") from None
        claimed.append(granted.claim.id)
    return claimed


async def _unresolved(path: Path, conflicts: list[str]) -> str:
    """The first path of an earlier sync's conflicts that still holds a conflict marker."""

    def check() -> str:
        for rel in conflicts:
            try:
                with open(path / rel, "rb") as handle:
                    data = handle.read(16 * 1024 * 1024)
            except OSError:
                continue
            if any(line.startswith(CONFLICT_MARKER.encode()) for line in data.splitlines()):
                return rel
        return ""

    return await asyncio.to_thread(check)


async def propose(
    runtime: Project,
    args: ProposeArgs,
    *,
    actor: str,
    runs: RunHint = NO_HINT,
    session_id: str = "",
    proposed_by: str = "",
    counted_agent: str = "",
    tester: Actor | None = None,
) -> dict[str, Any]:
    """Propose the workspace's changes: a new proposal, or a new revision of the author's open
    proposal for the task, and (unless `request_review` is off) its review requested as
    `proposal.request_review` does; with `test`, that test command run on the new revision as
    `test.run` runs it. Returns the proposal with a diffstat, the reviewers asked and the test run
    (with its whole log); a refusal records nothing."""
    # `proposed_by`: "supervisor" when a session left its work unproposed; `counted_agent`: the
    # agent whose quotas a new proposal counts against ("" for the owner's components); `tester`:
    # who runs `args.test` on the new revision (the caller).
    agent_id, task_id = identity(args.agent_id, "agent_id", "workspace.propose"), args.task_id.strip()
    await _check_test(runtime, args, tester)
    root = runtime.root
    async with runtime.db.read() as r:
        ws = await require_live(r, agent_id, task_id)
    text = await workspace_patch(root, ws, bounds_of(runtime.config))
    if not text.strip():
        raise ValidationError(f"workspace {ws.id} has no changes against its base; edit files in {ws.path} first")
    conflicts = json.loads(ws.conflicts_json or "[]")
    marker = await _unresolved(Path(ws.path), conflicts) if conflicts else ""
    if marker:
        raise ValidationError(f"workspace refused: {marker} still holds a conflict marker from workspace_sync")
    policy = runtime.policy
    # Parsed and checked once, before the write lock; the proposal reuses it.
    parsed = await proposals.prepare_revision(runtime, text)
    async with runtime.db.write(tool="workspace.propose") as tx:
        now = clock.now()
        task = await _check_work(tx, agent_id, task_id)
        current = await tx.get(Workspace, ws.id)
        if current.state == WorkspaceState.REMOVED.value or current.base_commit != ws.base_commit:
            raise ToolError(f"workspace {ws.id} changed while it was read; propose again")
        run = await resolve(tx, runs, owner=task.run_id)
        claimed = await _auto_claims(tx, root, policy, agent_id, task_id, run, parsed, now)
        open_ = await tx.one(
            Proposal,
            "SELECT * FROM proposals WHERE task_id = ? AND agent_id = ? AND status IN (?, ?) "
            "ORDER BY created_at DESC, id DESC LIMIT 1",
            (task_id, agent_id, *OPEN_STATUSES),
        )
        try:
            if open_ is not None:
                revised = proposals.AttachArgs(proposal_id=open_.id, patch=text)
                out = await proposals.attach(tx, runtime, revised, parsed, actor=actor, runs=runs)
            else:
                if not args.title.strip() or not args.summary_md.strip():
                    raise ValidationError("title and summary_md are required for a new proposal")
                new = proposals.CreateArgs(
                    task_id=task_id,
                    agent_id=agent_id,
                    title=args.title,
                    summary_md=args.summary_md,
                    patch=text,
                    risk=args.risk,
                )
                out = await proposals.create(
                    tx,
                    runtime,
                    new,
                    parsed,
                    session_id=session_id,
                    runs=runs,
                    counted_agent=counted_agent,  # the owner's components are never counted
                )
        except PatchDoesNotApply as exc:
            raise PatchDoesNotApply(
                f"{exc}; the project moved under workspace {ws.id}: workspace_sync brings it onto the current tree"
            ) from None
        proposal_id = out["proposal"]["id"]
        await tx.update("proposals", {"id": proposal_id}, {"workspace_id": ws.id, "base_revision": ws.base_tree})
        await tx.update(
            "workspaces",
            {"id": ws.id},
            {
                "proposal_id": proposal_id,
                "state": WorkspaceState.PROPOSED.value,
                "conflicts_json": "[]",
                "updated_at": now,
            },
        )
        reviewers: list[str] | None = None
        if args.request_review:
            asked = await proposals.request_review(tx, root, policy, proposal_id, actor, runs)
            reviewers = [str(r["agent_id"]) for r in asked["reviewers"] if r.get("agent_id")]
        view = await proposals.view(tx, proposal_id)
        stat = patch_stat(parsed)
        await tx.append_event(
            run,
            EventType.WORKSPACE_PROPOSED,
            {
                "workspace_id": ws.id,
                "proposal_id": proposal_id,
                "revision": view["proposal"]["current_revision"],
                "revision_number": view["proposal"]["revision_number"],
                "files": list(parsed.touched),
                "claimed": claimed,
                "proposed_by": proposed_by or agent_id,
            },
            actor_id=actor,
            task_id=task_id,
        )
    out = {"proposal": view["proposal"], "diffstat": stat, "claimed": claimed, "workspace_id": ws.id}
    if reviewers is not None:
        out["reviewers"] = reviewers
    if args.test:
        evidence = test_runs.RunArgs(command=args.test, proposal_id=proposal_id, paths=args.test_paths)
        record, log = await test_runs.run_test(runtime, evidence, tester or Actor(operator=False, name=actor))
        out["test_run"], out["log"] = record.to_dict(), log
    return out


async def _check_test(runtime: Project, args: ProposeArgs, tester: Actor | None) -> None:
    """Refuse a test command `test.run` would refuse, before anything is proposed."""
    if not args.test:
        if args.test_paths:
            raise ValidationError("test_paths needs test (the command to run)")
        return
    allowed = await test_runs.allowed_commands(runtime)
    narrowing = test_exec.check_narrowing(runtime.root, list(args.test_paths), "")
    test_exec.choose_command(args.test, allowed, operator=tester is not None and tester.operator, narrowing=narrowing)


async def leftover(runtime: Project, agent_id: str, task_id: str) -> Workspace | None:
    """The agent's workspace for the task when it holds changes that are not the current
    revision of its proposal (None otherwise). Raises when the workspace cannot be read."""
    async with runtime.db.read() as r:
        ws = await live(r, agent_id, task_id)
        proposal = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (ws.proposal_id,)) if ws else None
    if ws is None:
        return None
    text = await workspace_patch(runtime.root, ws, bounds_of(runtime.config))
    if not text.strip():
        return None
    if proposal is not None and proposal.current_revision == patch_sha256(text):
        return None
    return ws


# --- sync ----------------------------------------------------------------------------------


async def sync(runtime: Project, args: SyncArgs, *, actor: str, runs: RunHint = NO_HINT) -> dict[str, Any]:
    """Bring the workspace onto the current tree (three-way merge against its base); conflicting
    paths keep git's conflict markers and are reported."""
    agent_id, task_id = identity(args.agent_id, "agent_id", "workspace.sync"), args.task_id.strip()
    root = runtime.root
    async with runtime.db.read() as r:
        ws = await require_live(r, agent_id, task_id)
    tree = tree_of(ws, root)
    await asyncio.to_thread(verify, tree)
    async with _private_dir() as tmp:
        _commit, new_tree = await _snapshot(runtime, tmp)
        if new_tree == ws.base_tree:
            return {"workspace": workspace_dict(ws), "changed": False, "conflicts": []}
        work_dir = tmp / "work"
        work_dir.mkdir()
        index, objects = work_dir / "index", work_dir / "objects"
        await _index_of_workspace(tree, work_dir, ws.base_tree, bounds_of(runtime.config))
        _c, out = await tree_git(tree, ["write-tree"], index=index, objects=objects)
        work_tree = out.decode().strip()
        _c, out = await tree_git(
            tree,
            ["commit-tree", work_tree, "-p", ws.base_commit, "-m", "roundtable workspace"],
            index=index,
            objects=objects,
        )
        work = out.decode().strip()
        base = await repo_git(root, ["commit-tree", new_tree, "-p", ws.base_commit, "-m", "roundtable workspace base"])
        code, merged = await tree_git(
            tree,
            ["merge-tree", "--write-tree", "-z", "--name-only", work, base],
            index=index,
            objects=objects,
            ok=(0, 1),
        )
        fields = merged.decode("utf-8", "replace").split("\0")
        result_tree = fields[0].strip()
        conflicts: list[str] = []
        if code == 1:
            for name in fields[1:]:
                if not name:
                    break
                if name not in conflicts:
                    conflicts.append(name)
        # Switch the files from the workspace's content to the merge result, then make the new
        # base the worktree's HEAD and index (so `git diff` in the workspace shows the work).
        _c, changed = await tree_git(
            tree, ["diff-tree", "-r", "-z", "--name-only", work_tree, result_tree], index=index, objects=objects
        )
        await tree_git(tree, ["read-tree", "-m", "-u", work_tree, result_tree], index=index, objects=objects)
        written = [name for name in changed.decode("utf-8", "replace").split("\0") if name]
        await asyncio.to_thread(give_back, tree.path, written)
        await tree_git(tree, ["update-ref", "--no-deref", "HEAD", base], index=index)
        await tree_git(tree, ["read-tree", new_tree], index=tree.gitdir / "index")
    now = clock.now()
    async with runtime.db.write(tool="workspace.sync") as tx:
        await tx.update(
            "workspaces",
            {"id": ws.id},
            {
                "base_commit": base,
                "base_tree": new_tree,
                "state": WorkspaceState.ACTIVE.value,
                "conflicts_json": json.dumps(conflicts),
                "updated_at": now,
            },
        )
        await tx.append_event(
            await resolve(tx, runs, owner=ws.run_id),
            EventType.WORKSPACE_SYNCED,
            {"workspace_id": ws.id, "previous_base": ws.base_tree, "base_tree": new_tree, "conflicts": conflicts},
            actor_id=actor,
            task_id=ws.task_id,
        )
        row = await tx.get(Workspace, ws.id)
    return {"workspace": workspace_dict(row), "changed": True, "conflicts": conflicts}


# --- stale base ----------------------------------------------------------------------------


async def stale_paths(root: Path, base_tree: str, paths: list[str] | tuple[str, ...]) -> list[str]:
    """Touched paths whose content in the working tree differs from the workspace base's."""
    if not base_tree or not paths:
        return []
    listed = await repo_git(root, ["ls-tree", "-z", base_tree, "--", *paths])
    base: dict[str, str] = {}
    for entry in listed.split("\0"):
        meta, _, name = entry.partition("\t")
        if name:
            base[name] = meta.split()[2]
    stale: list[str] = []
    for path in paths:
        exists = await asyncio.to_thread(os.path.lexists, root / path)
        if not exists:
            if path in base:
                stale.append(path)
            continue
        current = await repo_git(root, ["hash-object", "--", path])
        if base.get(path) != current:
            stale.append(path)
    return stale


# --- remove and sweep ----------------------------------------------------------------------


async def _delete(root: Path, path: Path) -> None:
    """Delete a workspace directory (never following a link) and prune git's record of it."""
    await asyncio.to_thread(scratch._force_rmtree, path)
    try:
        async with scratch.worktree_admin(root):
            await repo_git(root, ["worktree", "prune"])
    except (ToolError, OSError):
        pass


async def remove(runtime: Project, args: RemoveArgs, *, actor: str, runs: RunHint = NO_HINT) -> dict[str, Any]:
    """Remove a workspace: its directory and git's record; the row stays, state `removed`."""
    workspace_id, reason = args.workspace_id.strip(), args.reason or "removed by the operator"
    async with runtime.db.read() as r:
        ws = await r.get(Workspace, workspace_id)
    if ws.state == WorkspaceState.REMOVED.value:
        return {"workspace": workspace_dict(ws), "removed": False}
    await _delete(runtime.root, Path(ws.path))
    now = clock.now()
    async with runtime.db.write(tool="workspace.remove") as tx:
        await tx.update(
            "workspaces", {"id": ws.id}, {"state": WorkspaceState.REMOVED.value, "removed_at": now, "updated_at": now}
        )
        await tx.append_event(
            await resolve(tx, runs, owner=ws.run_id),
            EventType.WORKSPACE_REMOVED,
            {"workspace_id": ws.id, "agent_id": ws.agent_id, "reason": reason},
            actor_id=actor,
            task_id=ws.task_id,
        )
        row = await tx.get(Workspace, ws.id)
    return {"workspace": workspace_dict(row), "removed": True}


async def sweep(runtime: Project, *, actor: str, now: str = "", run_id: str = "") -> list[str]:
    """Remove the workspaces whose task completed or was cancelled — at once, or `keep_days`
    after (the policy's `workspaces.keep_days`); with `run_id`, only that run's and those of no
    run. Returns the removed ids."""
    policy = runtime.policy
    now = now or clock.now()
    async with runtime.db.read() as r:
        due = await r.all(
            Workspace,
            "SELECT w.* FROM workspaces w JOIN tasks t ON t.id = w.task_id WHERE w.state != ? AND t.status IN (?, ?)"
            + (" AND w.run_id IN (?, '')" if run_id else ""),
            (WorkspaceState.REMOVED.value, *ENDED_TASKS, *([run_id] if run_id else [])),
        )
    removed: list[str] = []
    for ws in due:
        if policy.workspace_keep_days > 0:
            if not ws.remove_after:
                after = clock.parse(now) + policy.workspace_keep_days * DAY_NS
                async with runtime.db.write(tool="workspace.sweep") as tx:
                    await tx.update("workspaces", {"id": ws.id}, {"remove_after": clock.format_ns(after)})
                continue
            if ws.remove_after > now:
                continue
        await remove(runtime, RemoveArgs(workspace_id=ws.id, reason="its task ended"), actor=actor)
        removed.append(ws.id)
    return removed


async def record_unproposed(tx: Tx, args: UnproposedArgs, *, actor: str) -> dict[str, Any]:
    """Record why the changes a session left in its workspace were not proposed."""
    workspace_id, session_id, reason = args.workspace_id, args.session_id, args.reason
    ws = await tx.get(Workspace, workspace_id)
    await tx.append_event(
        ws.run_id,
        EventType.WORKSPACE_UNPROPOSED,
        {"workspace_id": ws.id, "session_id": session_id, "reason": reason},
        actor_id=actor,
        task_id=ws.task_id,
    )
    return {"workspace": workspace_dict(ws)}
