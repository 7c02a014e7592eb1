"""Crash-safe apply of a proposal's patch.

An apply runs in four steps:

1. Outside any database transaction: read the current revision, parse it as git reads it (and
   cross-check with `git apply --numstat --summary`), take the pre-image of every touched path
   (both sides of a rename or copy, created and deleted files; read with `lstat` and a size
   cap, never through a symlink), run `git apply --check` against the tree, and compute the
   exact after-image hashes by applying the patch to copies in a temporary directory.
2. One write transaction (`BEGIN IMMEDIATE`, which serialises writers across processes):
   refuse if another transaction is in flight, if the revision changed, or if a touched path
   changed since step 1; re-check every gate; write the rollback artefact
   (`.roundtable/rollback/<tx>/`: `manifest.json`, the forward `patch.diff` that `git apply -R`
   reverts, and `preimage/<path>` copies with their modes; symlink targets in the manifest);
   insert the transaction as `pending` (the intent). Commit.
3. `git apply` on the tree (every hunk or none), in its own process group and killed with the
   owner (`PR_SET_PDEATHSIG`); its pid and start time go to `git.pid` in the artefact.
4. One write transaction: the transaction becomes `applied` with its after-hashes, the
   proposal `accepted`, events appended.

If anything fails after the intent committed (git refuses, hashing fails, the final commit
fails, the call is cancelled), the touched paths are put back from the artefact at once and the
transaction is marked `failed` with the reason (`undone: true` in its metadata) — never left
`pending`. If even that cannot be verified, it is marked `failed` with `needs_attention`.

In `commit` mode (`services.applying.landing`) step 1 also requires a checked-out branch and
a clean working tree where the patch touches it; step 2 builds the commit object (a temporary
index, nothing else touched) and records it with its parent in the intent; step 3, after `git
apply`, moves the branch from the parent to it (compare-and-swap) and sets the index entries of
the touched paths. An undo puts the branch back on the parent if it had moved.

A crash between 2 and 4 leaves a `pending` row that the next owner's start settles
(`services.applying.recovery`); rollback lives in `services.applying.rollback`, the files of a transaction in
`services.applying.artefacts` and its database transitions in `services.applying.transactions`. The fault tests
stop an apply at its named steps through `services.applying.failpoints`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from roundtable import clock
from roundtable.domain import ProposalTransactionState, TransactionStatus
from roundtable.errors import NotFound, ToolError
from roundtable.services.applying import failpoints, landing
from roundtable.services.applying.artefacts import (
    FileState,
    PreImage,
    forget_git,
    git_recorder,
    git_token,
    hashes,
    preimages,
    put_image,
    recorded_files,
    state_hash,
    undo,
    write_artefact,
)
from roundtable.services.applying.transactions import complete_apply, finish_failed, in_flight
from roundtable.services.args import Args, Id, NewId
from roundtable.services.governance.gates import evaluate
from roundtable.services.policy.engine import Policy
from roundtable.services.repository import git
from roundtable.services.repository.patches import (
    ParsedPatch,
    allowances,
    file_hash,
    git_cross_check,
    parse_patch,
    read_patch,
    tree_problems,
)
from roundtable.services.run_scope import NO_HINT, RunHint, resolve
from roundtable.store.records import Proposal, Transaction

if TYPE_CHECKING:
    from roundtable.services.project import Project

__all__ = ["apply_proposal"]
log = logging.getLogger(__name__)


def _policy(runtime: Project) -> Policy:
    return runtime.policy


async def _expected_after(parsed: ParsedPatch, pre: dict[str, PreImage]) -> dict[str, str]:
    """Apply the patch to copies of the touched files in a scratch directory: the exact hashes
    the tree will have after a complete apply (`""` for deleted files)."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-apply-"))
    try:

        def populate() -> None:
            for rel, image in pre.items():
                target = scratch / rel
                if image.link is not None:
                    put_image(target, image)
                elif image.data is not None:  # a throwaway copy: no temporary file, no fsync
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(image.data)
                    os.chmod(target, image.mode or 0o644)

        await asyncio.to_thread(populate)
        # The scratch directory is not a repository; stop git from finding one above it.
        result = await git.run_git(scratch, ["apply", "--whitespace=nowarn", "-"], parsed.text.encode(), isolated=True)
        if not result.ok:
            raise ToolError(f"patch apply failed: exit status {result.returncode}: {result.output}")
        return await asyncio.to_thread(lambda: {p: file_hash(scratch, p) for p in parsed.touched})
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


@dataclass(frozen=True)
class Prepared:
    proposal: Proposal
    parsed: ParsedPatch
    pre: dict[str, PreImage]
    files: dict[str, FileState]
    dry_run_error: str
    head: str
    target: landing.CommitTarget | None = None


async def _prepare(runtime: Project, proposal_id: str, policy: Policy, *, commit: bool = False) -> Prepared:
    async with runtime.db.read() as r:
        proposal = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
    if proposal is None:
        raise NotFound("proposal", proposal_id)
    if not proposal.current_revision:
        raise ToolError(f"proposal {proposal.id} has no patch revision")
    root = runtime.root
    allow = allowances(policy)
    text = await asyncio.to_thread(read_patch, root, proposal.current_revision)
    parsed = await asyncio.to_thread(parse_patch, text, root, allow)
    await git_cross_check(root, parsed)
    problems = await asyncio.to_thread(tree_problems, root, parsed, allow)
    if problems:
        raise ToolError(f"proposal validation failed: {problems[0]}")
    pre = await asyncio.to_thread(preimages, root, parsed.touched, allow)
    dry = await git.apply_check(root, text.encode("utf-8"))
    after: dict[str, str] = {}
    if not dry:
        after = await _expected_after(parsed, pre)
    files = {
        p: FileState(
            path=p,
            before=image.digest(),
            after=after.get(p, ""),
            existed=image.exists,
            mode=image.mode,
            link=image.link,
        )
        for p, image in pre.items()
    }
    target = await landing.commit_target(root, list(parsed.touched)) if commit else None
    return Prepared(proposal, parsed, pre, files, dry, await git.head(root), target)


class ApplyArgs(Args):
    # `patch.apply`. `apply_proposal` hands the lands of other modes a copy with `mode` and
    # `applied_by` resolved (the config's landing mode, the acting caller).
    proposal_id: Id
    transaction_id: NewId = ""
    run_id: Id = Field(default="", description="Run to record the transaction in.")
    applied_by: Id = Field(default="", description="Who applies.")
    revision: Id = Field(
        default="", description="The revision (sha256) the operator reviewed; refused if it is no longer current."
    )
    mode: Literal["", "working-tree", "commit", "branch", "pull-request"] = Field(
        default="", description="How it lands (default: the config's landing.mode)."
    )


async def apply_proposal(
    runtime: Project, args: ApplyArgs, *, actor: str = "operator", runs: RunHint = NO_HINT
) -> dict[str, Any]:
    """Apply the current revision of a proposal (operator only; see the module docstring) in
    landing `args.mode` (default: the config's `landing.mode`): `working-tree` and `commit` here,
    `branch` and `pull-request` in `services.applying.branch_apply`. Recorded as applied by
    `args.applied_by`, else `actor`."""
    mode = args.mode or runtime.config.landing.mode
    args = args.model_copy(update={"mode": mode, "applied_by": args.applied_by or actor})
    proposal_id, applied_by, expected_revision = args.proposal_id, args.applied_by, args.revision
    if mode not in landing.TREE_MODES:
        from roundtable.services.applying import branch_apply

        return await branch_apply.land(runtime, args, runs=runs)
    root = runtime.root
    policy = _policy(runtime)
    prep = await _prepare(runtime, proposal_id, policy, commit=mode == "commit")
    if expected_revision and expected_revision != prep.proposal.current_revision:
        raise ToolError(
            f"stale revision: proposal {proposal_id} is at revision {prep.proposal.current_revision}, "
            f"not {expected_revision}"
        )
    tx_id = args.transaction_id or clock.new_id("TX")
    now = clock.now()
    async with runtime.db.write(tool="patch.apply") as tx:
        if await tx.scalar("SELECT 1 FROM transactions WHERE id = ?", (tx_id,)):
            raise ToolError(f"transaction {tx_id} already exists")
        busy = await in_flight(tx)
        if busy is not None:
            raise ToolError(
                f"another apply is in progress (transaction {busy.id}); if its process died, "
                "the next owner start recovers it"
            )
        proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
        assert proposal is not None
        # The transaction's run: `run_id`, else the proposal's; refused when ambiguous (run_scope).
        hint = RunHint(named=args.run_id or runs.named, caller=runs.caller)
        run = await resolve(tx, hint, owner=proposal.run_id, required="patch.apply")
        if proposal.current_revision != prep.proposal.current_revision:
            raise ToolError(
                f"stale revision: proposal {proposal_id} changed to revision {proposal.revision_number} during apply"
            )
        report = await evaluate(tx, root, policy, proposal, now, dry_run_error=prep.dry_run_error, parsed=prep.parsed)
        if not report.ok:
            raise ToolError(report.error())
        # Under the write lock: the files must still be exactly what step 1 saw.
        current = await asyncio.to_thread(lambda: {p: file_hash(root, p) for p in prep.parsed.touched})
        moved = sorted(p for p, h in current.items() if h != prep.files[p].before)
        if moved:
            raise ToolError(f"files changed during apply, try again: {', '.join(moved)}")
        planned = landing.planned_approval_id(report)
        landed: dict[str, Any] = {"mode": mode}
        if prep.target is not None:
            if await landing.resolve(root, prep.target.ref) != prep.target.parent:
                raise ToolError(f"{prep.target.ref} moved during apply, try again")
            commit_sha = await landing.build_commit(
                root,
                prep.parsed.text.encode("utf-8"),
                parent=prep.target.parent,
                message=landing.commit_message(
                    proposal.title, proposal.summary_md, landing.evidence_of(report, planned)
                ),
                author=runtime.config.landing.author(proposal.agent_id),
            )
            landed.update(ref=prep.target.ref, parent=prep.target.parent, commit=commit_sha)
        artefact = await asyncio.to_thread(write_artefact, root, tx_id, prep.parsed, prep.pre, prep.files)
        head = prep.head
        before_hash = state_hash(head, {p: f.before for p, f in prep.files.items()})
        metadata = {
            "op": "apply",
            "revision_number": proposal.revision_number,
            "patch_sha256": proposal.current_revision,
            "patch_files": list(prep.parsed.touched),
            "files": {p: f.to_dict() for p, f in prep.files.items()},
            "policy_summary": report.policy.summary if report.policy else "",
            "policy": report.policy.to_dict() if report.policy else {},
            "human_approval_id": report.approval.id if report.approval else "",
            "security_review_id": report.review.id if report.review else "",
            "test_run_ids": [t.id for t in report.test_runs],
            "claim_fences": report.claim_fences,
            "head": head,
            "planned_approval_id": planned,
            "landing": landed,
        }
        await tx.insert(
            "transactions",
            {
                "id": tx_id,
                "proposal_id": proposal.id,
                "run_id": run,
                "revision": proposal.current_revision,
                "before_git_hash": before_hash,
                "status": TransactionStatus.PENDING,
                "applied_by": applied_by,
                "rollback_patch_path": artefact,
                "metadata_json": json.dumps(metadata, separators=(",", ":")),
                "created_at": now,
            },
        )
        await tx.update(
            "proposals",
            {"id": proposal.id},
            {"transaction_state": ProposalTransactionState.APPLYING, "updated_at": now},
        )
    failpoints.reached(failpoints.APPLY_INTENT)
    artefact_dir = root / artefact

    try:
        try:
            await git.apply(root, prep.parsed.text.encode("utf-8"), on_start=git_recorder(artefact_dir))
        finally:
            forget_git(artefact_dir)  # git has exited: from here a path at neither state is not its doing
        failpoints.reached(failpoints.APPLY_FILES)
        if prep.target is not None:
            await landing.move_ref(
                root, prep.target.ref, landed["commit"], prep.target.parent, f"roundtable: land {proposal.id}"
            )
            await landing.reset_index(root, landed["commit"], list(prep.parsed.touched))
        after = await asyncio.to_thread(hashes, root, list(prep.parsed.touched))
        head_after = await git.head(root)
        async with runtime.db.write(tool="patch.apply") as tx:
            return await complete_apply(tx, tx_id, after, head=head_after, actor=applied_by)
    except BaseException as exc:
        reason = str(exc) if isinstance(exc, ToolError | OSError) else f"apply interrupted: {type(exc).__name__}"
        await _undo_failed_apply(runtime, tx_id, proposal.id, reason, run)
        raise


async def _undo_failed_apply(runtime: Project, tx_id: str, proposal_id: str, reason: str, run: str) -> None:
    """An apply failed after its intent committed: restore every touched path from the
    artefact now and mark the transaction failed (never leave it pending)."""
    try:
        async with runtime.db.read() as r:
            row = await r.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
        if row is None or row.status != TransactionStatus.PENDING:
            return
        await asyncio.to_thread(git.kill_leftover, git_token(runtime.root, row))
        left = await asyncio.to_thread(undo, runtime.root, row, sorted(recorded_files(row)))
        await landing.unmove(runtime.root, row)
        await finish_failed(runtime, tx_id, proposal_id, reason, run, left)
    except Exception as exc:  # the next owner start recovers what is left
        log.error("could not undo failed apply %s: %s", tx_id, exc)
