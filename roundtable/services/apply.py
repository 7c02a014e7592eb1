"""Crash-safe apply, rollback and recovery of patch transactions (DESIGN §4.8, spec §3.6).

An apply runs in four steps:

1. Outside any database transaction: read the current revision, hash the touched files, run
   `git apply --check` against the tree, and compute the exact after-image hashes by applying
   the patch to copies of the touched files in a temporary directory.
2. One write transaction (`BEGIN IMMEDIATE`, which serialises writers across processes):
   refuse if another transaction is in flight, if the revision changed, or if a touched file
   changed since step 1; re-check every gate; write the rollback artefact
   (`.roundtable/rollback/<tx>/`: `manifest.json`, the forward `patch.diff` that `git apply -R`
   reverts, and `preimage/<path>` copies with their modes); insert the transaction as
   `pending` (the intent). Commit.
3. `git apply` on the tree (every hunk or none).
4. One write transaction: the transaction becomes `applied` with its after-hashes, the
   proposal `accepted`, events appended.

A crash between 2 and 4 leaves a `pending` row. `recover_interrupted`, called only by an owner
right after it takes the owner lock, compares each file's hash with the recorded before/after
hashes: all after → complete it; all before → mark it failed (nothing happened); a mix →
restore the pre-images and mark it rolled back; anything else (someone edited the files) →
leave the files alone and mark it failed for the operator. A rollback runs the same way with an
intent status `rolling_back`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roundtable import clock
from roundtable.errors import NotFound, ToolError
from roundtable.services import git
from roundtable.services.evidence import event_run_id
from roundtable.services.gates import evaluate
from roundtable.services.patches import (
    ParsedPatch,
    file_hash,
    fsync_all,
    parse_patch,
    read_patch,
    write_atomic_bytes,
)
from roundtable.services.policy import Policy, ensure_policy
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Proposal, Transaction

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

ROLLBACK_DIR = Path(".roundtable") / "rollback"
IN_FLIGHT = ("pending", "rolling_back")
# Crash tests set this to a step name; the process then dies there as if killed (os._exit).
CRASH_ENV = "ROUNDTABLE_TEST_CRASH_AT"


def _crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os._exit(86)


@dataclass(frozen=True)
class FileState:
    path: str
    before: str
    after: str
    existed: bool
    mode: int

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "existed": self.existed, "mode": self.mode}


def _policy(runtime: Runtime) -> Policy:
    return ensure_policy(runtime.policy)


def _state_hash(head: str, hashes: dict[str, str]) -> str:
    """`git:<HEAD>:<sha256 over the touched files' hashes>` — cheap, and exact for what we change."""
    digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
    return f"git:{head}:{digest}"


async def _in_flight(q: Reader | Tx) -> Transaction | None:
    return await q.one(
        Transaction,
        "SELECT * FROM transactions WHERE status IN ('pending', 'rolling_back') ORDER BY created_at, id LIMIT 1",
    )


def _preimages(root: Path, paths: tuple[str, ...]) -> dict[str, tuple[bytes | None, int]]:
    out: dict[str, tuple[bytes | None, int]] = {}
    for rel in paths:
        target = root / rel
        try:
            st = target.lstat()
        except FileNotFoundError:
            out[rel] = (None, 0)
            continue
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{rel} is not a regular file; roundtable only patches regular files")
        out[rel] = (target.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


async def _expected_after(parsed: ParsedPatch, pre: dict[str, tuple[bytes | None, int]]) -> dict[str, str]:
    """Apply the patch to copies of the touched files in a scratch directory: the exact hashes
    the tree will have after a complete apply (`""` for deleted files)."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-apply-"))
    try:

        def populate() -> None:
            for rel, (data, mode) in pre.items():
                if data is None:
                    continue
                target = scratch / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                os.chmod(target, mode)

        await asyncio.to_thread(populate)
        # The scratch directory is not a repository; stop git from finding one above it.
        result = await git.run_git(scratch, ["apply", "--whitespace=nowarn", "-"], parsed.text.encode(), isolated=True)
        if not result.ok:
            raise ToolError(f"patch apply failed: exit status {result.returncode}: {result.output}")
        return await asyncio.to_thread(lambda: {p: file_hash(scratch, p) for p in parsed.touched})
    finally:
        await asyncio.to_thread(shutil.rmtree, scratch, True)


def _write_artefact(
    root: Path, tx_id: str, parsed: ParsedPatch, pre: dict[str, tuple[bytes | None, int]], files: dict[str, FileState]
) -> str:
    base = ROLLBACK_DIR / tx_id
    directory = root / base
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for rel, (data, mode) in pre.items():
        if data is not None:
            target = directory / "preimage" / rel
            write_atomic_bytes(target, data, mode or 0o600, sync=False)
            written.append(target)
    write_atomic_bytes(directory / "patch.diff", parsed.text.encode("utf-8"), sync=False)
    written.append(directory / "patch.diff")
    # Durable before the intent row that points at them commits.
    fsync_all(written)
    manifest = {
        "transaction_id": tx_id,
        "patch_sha256": parsed.sha256,
        "rollback": "git apply -R patch.diff (or restore preimage/ copies)",
        "files": {p: f.to_dict() for p, f in files.items()},
    }
    write_atomic_bytes(directory / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return base.as_posix() + "/"


@dataclass(frozen=True)
class Prepared:
    proposal: Proposal
    parsed: ParsedPatch
    pre: dict[str, tuple[bytes | None, int]]
    files: dict[str, FileState]
    dry_run_error: str
    head: str


async def _prepare(runtime: Runtime, proposal_id: str) -> Prepared:
    async with runtime.db.read() as r:
        proposal = await r.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
    if proposal is None:
        raise NotFound("proposal", proposal_id)
    if not proposal.current_revision:
        raise ToolError(f"proposal {proposal.id} has no patch revision")
    root = runtime.root
    text = await asyncio.to_thread(read_patch, root, proposal.current_revision)
    parsed = await asyncio.to_thread(parse_patch, text, root)
    pre = await asyncio.to_thread(_preimages, root, parsed.touched)
    dry = await git.apply_check(root, text.encode("utf-8"))
    after: dict[str, str] = {}
    if not dry:
        after = await _expected_after(parsed, pre)
    files = {
        p: FileState(
            path=p,
            before=hashlib.sha256(data).hexdigest() if data is not None else "",
            after=after.get(p, ""),
            existed=data is not None,
            mode=mode,
        )
        for p, (data, mode) in pre.items()
    }
    return Prepared(proposal, parsed, pre, files, dry, await git.head(root))


async def apply_proposal(
    runtime: Runtime,
    proposal_id: str,
    *,
    transaction_id: str = "",
    run_id: str = "",
    applied_by: str = "operator",
    expected_revision: str = "",
) -> dict[str, Any]:
    """Apply the current revision of a proposal (operator only; see the module docstring)."""
    root = runtime.root
    policy = _policy(runtime)
    prep = await _prepare(runtime, proposal_id)
    if expected_revision and expected_revision != prep.proposal.current_revision:
        raise ToolError(
            f"stale revision: proposal {proposal_id} is at revision {prep.proposal.current_revision}, "
            f"not {expected_revision}"
        )
    tx_id = transaction_id or clock.new_id("TX")
    now = clock.now()
    async with runtime.db.write(tool="patch.apply") as tx:
        if await tx.scalar("SELECT 1 FROM transactions WHERE id = ?", (tx_id,)):
            raise ToolError(f"transaction {tx_id} already exists")
        busy = await _in_flight(tx)
        if busy is not None:
            raise ToolError(
                f"another apply is in progress (transaction {busy.id}); if its process died, "
                "the next owner start recovers it"
            )
        proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (proposal_id,))
        assert proposal is not None
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
        artefact = await asyncio.to_thread(_write_artefact, root, tx_id, prep.parsed, prep.pre, prep.files)
        head = prep.head
        before_hash = _state_hash(head, {p: f.before for p, f in prep.files.items()})
        run = run_id or await event_run_id(tx)
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
        }
        await tx.insert(
            "transactions",
            {
                "id": tx_id,
                "proposal_id": proposal.id,
                "run_id": run,
                "revision": proposal.current_revision,
                "before_git_hash": before_hash,
                "status": "pending",
                "applied_by": applied_by,
                "rollback_patch_path": artefact,
                "metadata_json": json.dumps(metadata, separators=(",", ":")),
                "created_at": now,
            },
        )
        await tx.update("proposals", {"id": proposal.id}, {"transaction_state": "applying", "updated_at": now})
    _crash_point("apply:intent")
    try:
        await git.apply(root, prep.parsed.text.encode("utf-8"))
    except BaseException as exc:
        # git apply writes nothing unless every hunk applies; record the failure.
        reason = str(exc) if isinstance(exc, ToolError) else f"apply interrupted: {type(exc).__name__}"
        await _finish_failed(runtime, tx_id, proposal.id, reason, run)
        raise
    _crash_point("apply:files")
    after = await asyncio.to_thread(lambda: {p: file_hash(root, p) for p in prep.parsed.touched})
    head_after = await git.head(root)
    async with runtime.db.write(tool="patch.apply") as tx:
        return await _complete_apply(tx, tx_id, after, head=head_after, actor=applied_by)


async def _finish_failed(runtime: Runtime, tx_id: str, proposal_id: str, reason: str, run: str) -> None:
    async with runtime.db.write(tool="patch.apply") as tx:
        row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
        if row is None or row.status != "pending":
            return
        meta = json.loads(row.metadata_json or "{}")
        meta["error"] = reason
        await tx.update("transactions", {"id": tx_id}, {"status": "failed", "metadata_json": json.dumps(meta)})
        await tx.update("proposals", {"id": proposal_id}, {"transaction_state": "failed", "updated_at": clock.now()})
        await tx.append_event(
            run, "patch.apply_failed", {"proposal_id": proposal_id, "transaction_id": tx_id, "error": reason}
        )


async def _complete_apply(
    tx: Tx, tx_id: str, after: dict[str, str], *, head: str, actor: str, recovered: bool = False
) -> dict[str, Any]:
    row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    assert row is not None
    now = clock.now()
    meta = json.loads(row.metadata_json or "{}")
    if recovered:
        meta["recovered"] = "completed"
    await tx.update(
        "transactions",
        {"id": tx_id},
        {
            "status": "applied",
            "after_git_hash": _state_hash(head, after),
            "applied_at": now,
            "metadata_json": json.dumps(meta, separators=(",", ":")),
        },
    )
    await tx.update(
        "proposals",
        {"id": row.proposal_id},
        {"status": "accepted", "transaction_state": "applied", "updated_at": now},
    )
    proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (row.proposal_id,))
    assert proposal is not None
    await tx.append_event(
        row.run_id,
        "patch.applied",
        {
            "proposal_id": row.proposal_id,
            "transaction_id": tx_id,
            "revision": row.revision,
            "files": meta.get("patch_files", []),
            "recovered": recovered,
        },
        actor_id=actor,
        task_id=proposal.task_id,
    )
    updated = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    assert updated is not None
    return {"proposal": proposal, "transaction": updated, "metadata": meta}


# --- restore -------------------------------------------------------------------------------


def _restore_preimages(root: Path, tx: Transaction, paths: list[str]) -> None:
    """Put back the recorded pre-image of each path (delete files that did not exist)."""
    meta = json.loads(tx.metadata_json or "{}")
    files = meta.get("files", {})
    base = root / (tx.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{tx.id}/")
    for rel in paths:
        info = files.get(rel, {})
        target = root / rel
        if info.get("existed"):
            data = (base / "preimage" / rel).read_bytes()
            write_atomic_bytes(target, data, int(info.get("mode") or 0o644))
        else:
            try:
                target.unlink()
            except FileNotFoundError:
                pass


def _hashes(root: Path, paths: list[str]) -> dict[str, str]:
    return {p: file_hash(root, p) for p in paths}


def _files(tx: Transaction) -> dict[str, dict[str, Any]]:
    files: dict[str, dict[str, Any]] = json.loads(tx.metadata_json or "{}").get("files", {})
    return files


async def rollback_transaction(runtime: Runtime, transaction_id: str, *, reason: str, caller: str) -> dict[str, Any]:
    """Revert an applied transaction if every touched file still has its after-hash."""
    root = runtime.root
    now = clock.now()
    async with runtime.db.write(tool="patch.rollback") as tx:
        row = await tx.get(Transaction, transaction_id)
        if row.status != "applied":
            raise ToolError(
                f"transaction {transaction_id} is {row.status}; only applied transactions can be rolled back"
            )
        busy = await _in_flight(tx)
        if busy is not None:
            raise ToolError(f"another apply is in progress (transaction {busy.id})")
        files = _files(row)
        paths = sorted(files)
        current = await asyncio.to_thread(_hashes, root, paths)
        changed = [p for p in paths if current[p] != files[p].get("after", "")]
        if changed:
            raise ToolError(f"cannot roll back {transaction_id}: files changed since the apply: {', '.join(changed)}")
        meta = json.loads(row.metadata_json or "{}")
        meta["rollback_reason"] = reason
        meta["rollback_by"] = caller
        await tx.update(
            "transactions", {"id": transaction_id}, {"status": "rolling_back", "metadata_json": json.dumps(meta)}
        )
    _crash_point("rollback:intent")
    # If this fails midway the `rolling_back` intent stays: the next owner start finishes it.
    patch_text = await asyncio.to_thread((root / row.rollback_patch_path / "patch.diff").read_bytes)
    try:
        await git.apply(root, patch_text, reverse=True)
    except ToolError:
        pass  # fall back to the byte-exact pre-images below
    after = await asyncio.to_thread(_hashes, root, paths)
    rest = [p for p in paths if after[p] != files[p].get("before", "")]
    if rest:
        await asyncio.to_thread(_restore_preimages, root, row, rest)
    async with runtime.db.write(tool="patch.rollback") as tx:
        return await _complete_rollback(tx, transaction_id, actor=caller, reason=reason, now=now)


async def _complete_rollback(
    tx: Tx, tx_id: str, *, actor: str, reason: str, now: str, recovered: bool = False, was_applied: bool = True
) -> dict[str, Any]:
    row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    assert row is not None
    meta = json.loads(row.metadata_json or "{}")
    meta["rolled_back_at"] = clock.now()
    if recovered:
        meta["recovered"] = "rolled_back"
    await tx.update("transactions", {"id": tx_id}, {"status": "rolled_back", "metadata_json": json.dumps(meta)})
    changes = {"transaction_state": "rolled_back", "updated_at": clock.now()}
    if was_applied:
        changes["status"] = "rolled_back"
    # An apply undone by recovery never took effect: the proposal stays open and can be retried.
    await tx.update("proposals", {"id": row.proposal_id}, changes)
    proposal = await tx.one(Proposal, "SELECT * FROM proposals WHERE id = ?", (row.proposal_id,))
    await tx.append_event(
        row.run_id,
        "patch.rolled_back",
        {"proposal_id": row.proposal_id, "transaction_id": tx_id, "reason": reason, "recovered": recovered},
        actor_id=actor,
        task_id=proposal.task_id if proposal else "",
    )
    updated = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
    return {"transaction": updated, "proposal": proposal}


# --- recovery ------------------------------------------------------------------------------


async def recover_interrupted(runtime: Runtime) -> list[str]:
    """Finish or undo every in-flight transaction. Call only as the owner, under the owner lock."""
    root = runtime.root
    lines: list[str] = []
    async with runtime.db.read() as r:
        rows = await r.all(
            Transaction,
            "SELECT * FROM transactions WHERE status IN ('pending', 'rolling_back') ORDER BY created_at, id",
        )
    for row in rows:
        files = _files(row)
        paths = sorted(files)
        current = await asyncio.to_thread(_hashes, root, paths)
        before = {p: files[p].get("before", "") for p in paths}
        after = {p: files[p].get("after", "") for p in paths}
        foreign = [p for p in paths if current[p] not in (before[p], after[p])]
        at_after = [p for p in paths if current[p] == after[p] and after[p] != before[p]]
        at_before = [p for p in paths if current[p] == before[p] and after[p] != before[p]]
        applying = row.status == "pending"
        if foreign:
            outcome = "needs_attention"
            status = "failed" if applying else "applied"
            detail = f"files changed by someone else, left as they are: {', '.join(foreign)}"
        elif applying and not at_before:
            outcome, status, detail = "completed", "applied", "every file has its after-image"
        elif applying and not at_after:
            outcome, status, detail = "not_applied", "failed", "no file had changed"
        elif not applying and not at_after:
            outcome, status, detail = "rolled_back", "rolled_back", "every file has its pre-image"
        elif not applying and not at_before:
            outcome, status, detail = "rollback_not_started", "applied", "the rollback had not started"
        else:
            await asyncio.to_thread(_restore_preimages, runtime.root, row, at_after)
            outcome, status, detail = "rolled_back", "rolled_back", f"restored pre-images of {', '.join(at_after)}"
        head_now = await git.head(root)
        async with runtime.db.write(tool="recovery") as tx:
            now = clock.now()
            if status == "applied" and applying:
                await _complete_apply(tx, row.id, current, head=head_now, actor="recovery", recovered=True)
            elif status == "rolled_back":
                await _complete_rollback(
                    tx,
                    row.id,
                    actor="recovery",
                    reason="recovered after a crash",
                    now=now,
                    recovered=True,
                    was_applied=not applying,
                )
            else:
                meta = json.loads(row.metadata_json or "{}")
                meta["recovery"] = {"outcome": outcome, "detail": detail, "at": now}
                await tx.update("transactions", {"id": row.id}, {"status": status, "metadata_json": json.dumps(meta)})
                state = "failed" if status == "failed" else "applied"
                await tx.update("proposals", {"id": row.proposal_id}, {"transaction_state": state, "updated_at": now})
            await tx.append_event(
                row.run_id,
                "transaction.recovered",
                {
                    "transaction_id": row.id,
                    "proposal_id": row.proposal_id,
                    "outcome": outcome,
                    "detail": detail,
                    "status": status,
                },
                actor_id="recovery",
            )
        lines.append(f"transaction {row.id} (proposal {row.proposal_id}): {outcome} — {detail}")
    return lines


async def list_transactions(q: Reader | Tx, status: str = "") -> list[Transaction]:
    if status:
        return await q.all(
            Transaction, "SELECT * FROM transactions WHERE status = ? ORDER BY created_at, id", (status,)
        )
    return await q.all(Transaction, "SELECT * FROM transactions ORDER BY created_at, id")
