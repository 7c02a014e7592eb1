"""Landing an approved revision as git history: commits built with plumbing, their trailers, refs.

Four landing modes (`landing.mode` in the config, or `patch.apply`'s `mode`): `working-tree`
(`git apply` into the operator's tree, uncommitted), `commit` (that, plus one commit on the
current branch), `branch` (a commit on `<prefix><proposal id>`, nothing else touched) and
`pull-request` (that branch pushed, a pull request on the forge, merged through it).

Every commit is built without touching the working tree, the real index or any branch: a
temporary index (`GIT_INDEX_FILE`) is filled from the parent commit (`read-tree`), the patch is
applied to it (`apply --cached`), and `write-tree` + `commit-tree` make the commit object. Only
then does a ref move, with `update-ref <ref> <new> <old>` — a compare-and-swap, so a branch that
moved meanwhile is refused, never overwritten. The author is the proposal's agent
(`landing.authors`, else `<agent id> <<agent id>@<landing.author_domain>>`); the committer is
the operator (git's configured identity). The message carries the record as trailers:
`Roundtable-Proposal`, `Roundtable-Revision` (the patch's sha256), `Roundtable-Revision-Number`,
one `Roundtable-Approved-By` per approving vote, `Roundtable-Approval` (the operator's approval
id) and one `Roundtable-Test` per test command (command, outcome, run id).

A branch's commit always has the base as its parent: a new revision replaces the commit rather
than stacking on it, so the branch is always exactly one revision. Rolling back a committed
landing adds a revert commit; only when nothing was built on the landing commit may the
operator ask for a reset instead (`patch.rollback` with `reset`). The landing row
(`store.records.Landing`) keeps per proposal the ref, the commit built from which revision, the
pull request and the forge checks read for that commit.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.domain import ApprovalStatus, TransactionStatus, approving
from roundtable.errors import ToolError
from roundtable.services.governance.approvals import latest_decision
from roundtable.services.governance.gates import HOST_RUN_EXCLUDED, GateReport, normalise_command
from roundtable.services.repository import git
from roundtable.services.repository.git import GitResult
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Landing, Proposal

if TYPE_CHECKING:
    from roundtable.config import LandingConfig

ZERO_OID = "0" * 40
TREE_MODES = ("working-tree", "commit")  # the modes that change the operator's working tree
IDENTITY_HINT = "git needs your identity as the committer: set git config user.name and user.email"


# --- the record the commit carries ---------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """What a landing commit's trailers say about the revision it carries."""

    proposal_id: str
    revision: str
    revision_number: int
    approvers: tuple[str, ...] = ()
    approval_id: str = ""
    tests: tuple[tuple[str, str, str], ...] = ()  # (command, outcome, test run id)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def trailers(evidence: Evidence) -> list[str]:
    lines = [
        f"Roundtable-Proposal: {evidence.proposal_id}",
        f"Roundtable-Revision: {evidence.revision}",
        f"Roundtable-Revision-Number: {evidence.revision_number}",
    ]
    lines += [f"Roundtable-Approved-By: {_one_line(agent)}" for agent in evidence.approvers]
    if evidence.approval_id:
        lines.append(f"Roundtable-Approval: {evidence.approval_id}")
    lines += [f"Roundtable-Test: {_one_line(cmd)} => {outcome} ({run})" for cmd, outcome, run in evidence.tests]
    return lines


def commit_message(title: str, summary: str, evidence: Evidence) -> str:
    subject = _one_line(title) or f"Proposal {evidence.proposal_id}"
    body = summary.strip()
    parts = [subject, *([body] if body else []), "\n".join(trailers(evidence))]
    return "\n\n".join(parts) + "\n"


def read_trailers(message: str) -> dict[str, list[str]]:
    """The `Roundtable-*` trailers of a commit message (key → values, in order)."""
    out: dict[str, list[str]] = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Roundtable-") and " " not in key:
            out.setdefault(key, []).append(value.strip())
    return out


def planned_approval_id(report: GateReport) -> str:
    """The approval an apply of this revision records: the operator's approval of it, else the
    open request it decides, else a new one (the id `settle_after_apply` is then given)."""
    revision = report.proposal.current_revision
    latest = latest_decision(report.approvals, revision)
    if latest is not None and latest.status == ApprovalStatus.APPROVED:
        return latest.id
    pending = next((a for a in reversed(report.approvals) if a.status == ApprovalStatus.REQUESTED), None)
    return pending.id if pending is not None else clock.new_id("H")


def evidence_of(report: GateReport, approval_id: str = "") -> Evidence:
    """The trailers' content from a gate report: approving votes, the approval, the latest
    host-executed run of each test command of the revision."""
    proposal = report.proposal
    approvers = tuple(sorted(v.agent_id for v in report.votes if approving(v.vote)))
    latest: dict[str, Any] = {}
    for run in report.test_runs:
        if run.status in HOST_RUN_EXCLUDED:
            continue
        latest[normalise_command(run.command)] = run
    tests = tuple((cmd, run.status, run.id) for cmd, run in latest.items())
    return Evidence(proposal.id, proposal.current_revision, proposal.revision_number, approvers, approval_id, tests)


# --- git plumbing --------------------------------------------------------------------------------


def _failed(args: list[str], result: GitResult) -> ToolError:
    text = result.output
    if "tell me who you are" in text or "identity unknown" in text or "empty ident" in text:
        return ToolError(IDENTITY_HINT)
    return ToolError(f"git {args[0]} failed (exit status {result.returncode}): {text[:2000]}")


async def _git(root: Path, args: list[str], *, stdin: bytes = b"", env: dict[str, str] | None = None) -> str:
    result = await git.run_git(root, args, stdin, extra_env=env)
    if not result.ok:
        raise _failed(args, result)
    return result.output


async def resolve(root: Path, ref: str) -> str:
    """The commit `ref` names, `""` when there is none."""
    result = await git.run_git(root, ["rev-parse", "--verify", "-q", f"{ref}^{{commit}}"])
    return result.output.splitlines()[0] if result.ok and result.output else ""


async def current_branch(root: Path) -> str:
    """`refs/heads/<name>` checked out, `""` when HEAD is detached."""
    result = await git.run_git(root, ["symbolic-ref", "-q", "HEAD"])
    return result.output if result.ok else ""


async def message_of(root: Path, commit: str) -> str:
    return await _git(root, ["show", "-s", "--format=%B", commit])


async def dirty_paths(root: Path, paths: list[str]) -> list[str]:
    """Touched paths whose working-tree or index state differs from HEAD (or that are untracked)."""
    if not paths:
        return []
    result = await git.run_git(
        root,
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths],
        extra_env={"GIT_LITERAL_PATHSPECS": "1"},
    )
    if not result.ok:
        raise _failed(["status"], result)
    return sorted({entry[3:] for entry in result.output.split("\0") if len(entry) > 3})


async def build_commit(
    root: Path,
    patch: bytes,
    *,
    parent: str,
    message: str,
    author: tuple[str, str] | None,
    reverse: bool = False,
) -> str:
    """A commit object whose tree is `parent`'s with `patch` applied (reversed with `reverse`),
    built in a temporary index; no ref, no working tree and no real index is touched. `author`
    `None`: git's configured identity (the operator's)."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-land-"))
    try:
        env = {"GIT_INDEX_FILE": str(scratch / "index")}
        if author is not None:
            env.update(GIT_AUTHOR_NAME=author[0], GIT_AUTHOR_EMAIL=author[1])
        await _git(root, ["read-tree", parent], env=env)
        args = ["apply", "--cached", "--whitespace=nowarn", *(["-R"] if reverse else []), "-"]
        result = await git.run_git(root, args, patch, extra_env=env)
        if not result.ok:
            raise ToolError(f"the patch does not apply to {parent[:12]}: {result.output[:2000]}")
        tree = await _git(root, ["write-tree"], env=env)
        return await _git(root, ["commit-tree", tree, "-p", parent, "-F", "-"], stdin=message.encode(), env=env)
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


async def move_ref(root: Path, ref: str, new: str, old: str, reason: str) -> None:
    """`ref` from `old` (ZERO_OID: it must not exist) to `new`, refused if it is elsewhere."""
    await _git(root, ["update-ref", "-m", reason, ref, new, old])


async def reset_index(root: Path, commit: str, paths: list[str]) -> None:
    """The real index's entries for `paths` become `commit`'s (the rest of the index is kept)."""
    if paths:
        await _git(root, ["reset", "-q", commit, "--", *paths], env={"GIT_LITERAL_PATHSPECS": "1"})


async def push(root: Path, remote: str, ref: str) -> str:
    """Force-push `ref` to the same name on `remote` (the branch is roundtable's: each revision
    replaces its commit). Returns the pushed commit."""
    sha = await resolve(root, ref)
    await _git(root, ["push", "--porcelain", "-q", remote, f"+{ref}:{ref}"])
    return sha


# --- the commit mode's target --------------------------------------------------------------------


@dataclass(frozen=True)
class CommitTarget:
    ref: str
    parent: str


async def commit_target(root: Path, touched: list[str]) -> CommitTarget:
    """The branch a `commit` landing goes on, refused unless HEAD is a branch with a commit and
    the working tree is clean where the patch touches it."""
    ref = await current_branch(root)
    if not ref:
        raise ToolError("commit mode needs a checked-out branch (HEAD is detached)")
    parent = await resolve(root, "HEAD")
    if not parent:
        raise ToolError("commit mode needs a branch with at least one commit")
    dirty = await dirty_paths(root, touched)
    if dirty:
        raise ToolError(
            "commit mode needs a clean working tree where the patch touches it; "
            f"commit or stash your changes to: {', '.join(dirty)}"
        )
    return CommitTarget(ref, parent)


# --- landing rows --------------------------------------------------------------------------------


def branch_ref(config: LandingConfig, proposal_id: str) -> str:
    return f"refs/heads/{config.branch_prefix}{proposal_id}"


async def landing_of(q: Reader | Tx, proposal_id: str) -> Landing | None:
    return await q.one(Landing, "SELECT * FROM landings WHERE proposal_id = ?", (proposal_id,))


async def save_landing(tx: Tx, proposal_id: str, mode: str, **values: Any) -> None:
    """Insert or update the proposal's landing row with `values`."""
    values = {**values, "mode": mode, "updated_at": clock.now()}
    if await landing_of(tx, proposal_id) is None:
        await tx.insert("landings", {"proposal_id": proposal_id, **values})
    else:
        await tx.update("landings", {"proposal_id": proposal_id}, values)


@dataclass(frozen=True)
class Built:
    """A branch commit built from one revision."""

    ref: str
    base: str
    parent: str
    commit: str
    previous: str  # the ref's commit before (ZERO_OID: none)
    revision: str
    replaced: bool = field(default=False)


async def build_branch_commit(
    root: Path, config: LandingConfig, proposal: Proposal, patch: bytes, evidence: Evidence
) -> Built:
    """The commit for the proposal's branch: the base (`landing.pull_request.base`, else the
    checked-out branch) as parent, the revision's patch applied, the evidence as trailers. The
    ref is not moved here."""
    base = config.pull_request.base or (await current_branch(root)).removeprefix("refs/heads/")
    if not base:
        raise ToolError("no base branch: HEAD is detached and landing.pull_request.base is not set")
    parent = await resolve(root, f"refs/heads/{base}")
    if not parent:
        raise ToolError(f"base branch {base} has no commit")
    ref = branch_ref(config, proposal.id)
    previous = await resolve(root, ref) or ZERO_OID
    message = commit_message(proposal.title, proposal.summary_md, evidence)
    commit = await build_commit(root, patch, parent=parent, message=message, author=config.author(proposal.agent_id))
    return Built(ref, base, parent, commit, previous, proposal.current_revision, replaced=previous != ZERO_OID)


def landing_meta(meta_json: str) -> dict[str, Any]:
    meta = json.loads(meta_json or "{}")
    landing = meta.get("landing")
    return landing if isinstance(landing, dict) else {}


# --- undoing and recovering a committed landing ---------------------------------------------------


async def _put(root: Path, ref: str, to: str, frm: str, paths: list[str], reason: str) -> bool:
    """Move `ref` from `frm` to `to` if it is at `frm`; the index entries of `paths` follow
    when `ref` is the checked-out branch. Whether the ref is at `to` now."""
    here = await resolve(root, ref)
    if here == frm and frm != to:
        await move_ref(root, ref, to, frm, reason)
        here = to
    if here == to and paths and await current_branch(root) == ref:
        await reset_index(root, to, paths)
    return here == to


async def unmove(root: Path, row: Any) -> None:
    """A committed landing that did not complete: its branch goes back to the parent if it is at
    the landing commit (the commit was never recorded as landed, so nothing built on it)."""
    meta = json.loads(row.metadata_json or "{}")
    land = meta.get("landing") or {}
    if land.get("mode") == "commit" and land.get("commit"):
        paths = list(meta.get("patch_files") or [])
        await _put(root, land["ref"], land["parent"], land["commit"], paths, f"roundtable: undo {row.id}")


async def settle_recovered(root: Path, row: Any, status: str) -> None:
    """After recovery decided an interrupted transaction's `status`: the branch follows. A
    completed apply puts it on the landing commit, an undone one back on the parent; a
    completed rollback puts it on the revert (or reset) target, an unstarted one leaves it."""
    meta = json.loads(row.metadata_json or "{}")
    paths = list(meta.get("patch_files") or [])
    land = meta.get("landing") or {}
    plan = meta.get("rollback_landing") or {}
    if row.status == TransactionStatus.PENDING and land.get("mode") == "commit" and land.get("commit"):
        if status == TransactionStatus.APPLIED:
            await _put(root, land["ref"], land["commit"], land["parent"], paths, f"roundtable: recover {row.id}")
        else:
            await unmove(root, row)
    elif row.status == TransactionStatus.ROLLING_BACK and plan.get("to"):
        if status == TransactionStatus.ROLLED_BACK:
            await _put(root, plan["ref"], plan["to"], plan["from"], paths, f"roundtable: recover {row.id}")
        else:
            await _put(root, plan["ref"], plan["from"], plan["to"], paths, f"roundtable: recover {row.id}")


async def rollback_plan(root: Path, row: Any, title: str, patch: bytes, *, reset: bool, reason: str) -> dict[str, Any]:
    """How a committed landing is rolled back: a revert commit on the branch's tip (built here,
    not yet on the branch), or — with `reset`, only while the landing commit is still the tip —
    the branch back on its parent. Refused unless the branch is checked out (the working tree is
    restored with it)."""
    land = landing_meta(row.metadata_json)
    ref, commit = land["ref"], land["commit"]
    if await current_branch(root) != ref:
        raise ToolError(f"check out {ref.removeprefix('refs/heads/')} to roll back {row.id} (its landing branch)")
    tip = await resolve(root, ref)
    if reset:
        if tip != commit:
            raise ToolError(
                f"cannot reset {ref.removeprefix('refs/heads/')}: commits were made on it after {commit[:12]}; "
                "roll back without reset to add a revert commit"
            )
        return {"kind": "reset", "ref": ref, "from": commit, "to": land["parent"]}
    message = (
        f'Revert "{_one_line(title)}"\n\nThis reverts commit {commit}: roundtable rolled back '
        f"transaction {row.id} ({_one_line(reason)}).\n\n"
        f"Roundtable-Proposal: {row.proposal_id}\nRoundtable-Revision: {row.revision}\nRoundtable-Rollback: {row.id}\n"
    )
    revert = await build_commit(root, patch, parent=tip, message=message, author=None, reverse=True)
    return {"kind": "revert", "ref": ref, "from": tip, "to": revert}


async def finish_rollback_ref(root: Path, row: Any, plan: dict[str, Any]) -> bool:
    """Move the branch as the plan says once the working tree is restored."""
    paths = list(json.loads(row.metadata_json or "{}").get("patch_files") or [])
    return await _put(root, plan["ref"], plan["to"], plan["from"], paths, f"roundtable: roll back {row.id}")
