"""Crash-safe apply, rollback and recovery of patch transactions (DESIGN §4.8, §4.25, spec §3.6).

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

A crash between 2 and 4 leaves a `pending` row. `recover_interrupted`, called only by an owner
right after it takes the owner lock, first kills a `git apply` left over from the dead owner
(the one named in `git.pid`, if it is still that process), then compares each path's hash with
the recorded before/after hashes: all after → complete it; all before → mark it failed
(nothing happened); a mix of the two → restore the pre-images, verify, mark it rolled back.
A path at neither state means one of two things. If the dead owner had started `git apply`
(`git.pid` exists), it is git's own half-done work (git removes every old file before it writes
the new ones, and it dies with the owner): every path is restored, what was there kept under
`displaced/` in the artefact, and the transaction is rolled back. Otherwise someone edited the
files (or a path became a directory): they are left alone and the transaction is marked
`failed` with `needs_attention` and the reason. Recovery never raises: a transaction it
cannot resolve, or cannot even record, is reported in its lines and the owner starts anyway;
once marked, it no longer blocks later applies. A rollback runs the same way with an intent
status `rolling_back`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
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
from roundtable.services.hashing import read_regular
from roundtable.services.patches import (
    Allowances,
    ParsedPatch,
    allowances,
    file_hash,
    fsync_all,
    git_cross_check,
    parse_patch,
    read_patch,
    tree_problems,
    write_atomic_bytes,
)
from roundtable.services.policy import Policy, ensure_policy
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Proposal, Transaction

if TYPE_CHECKING:
    from roundtable.runtime import Runtime

ROLLBACK_DIR = Path(".roundtable") / "rollback"
IN_FLIGHT = ("pending", "rolling_back")
GIT_PID_FILE = "git.pid"
# Pre-images are held in memory while an apply is prepared: bound them.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_PREIMAGE_BYTES = 256 * 1024 * 1024
# Crash tests set this to a step name; the process then dies there as if killed (os._exit).
# A name ending in `!` raises an OSError there instead (a failure after git ran).
CRASH_ENV = "ROUNDTABLE_TEST_CRASH_AT"
log = logging.getLogger(__name__)


def _crash_point(name: str) -> None:
    value = os.environ.get(CRASH_ENV)
    if value == name:
        os._exit(86)
    if value == name + "!":
        raise OSError(f"injected failure at {name}")


@dataclass(frozen=True)
class PreImage:
    """What a touched path held before the apply: a regular file's bytes and mode, a symlink's
    target (only when the policy allows symlinks), or nothing."""

    data: bytes | None = None
    mode: int = 0
    link: str | None = None

    @property
    def exists(self) -> bool:
        return self.data is not None or self.link is not None

    def digest(self) -> str:
        if self.link is not None:
            return "symlink:" + hashlib.sha256(os.fsencode(self.link)).hexdigest()
        return hashlib.sha256(self.data).hexdigest() if self.data is not None else ""


@dataclass(frozen=True)
class FileState:
    path: str
    before: str
    after: str
    existed: bool
    mode: int
    link: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"before": self.before, "after": self.after, "existed": self.existed, "mode": self.mode}
        if self.link is not None:
            out["link"] = self.link
        return out


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


def _preimages(root: Path, paths: tuple[str, ...], allow: Allowances) -> dict[str, PreImage]:
    """The pre-image of every touched path (blocking: a worker thread). Only regular files are
    read (at most `MAX_FILE_BYTES` each, `MAX_PREIMAGE_BYTES` in all); a symlink is recorded by
    its target when the policy allows symlinks; anything else refuses the apply."""
    out: dict[str, PreImage] = {}
    total = 0
    for rel in paths:
        target = root / rel
        try:
            st = target.lstat()
        except (FileNotFoundError, NotADirectoryError):
            out[rel] = PreImage()
            continue
        if stat.S_ISLNK(st.st_mode) and allow.symlinks:
            out[rel] = PreImage(link=os.readlink(target))
            continue
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"{rel} is not a regular file; roundtable only patches regular files")
        data = read_regular(target, MAX_FILE_BYTES, rel)
        if data is None:
            out[rel] = PreImage()
            continue
        total += len(data)
        if total > MAX_PREIMAGE_BYTES:
            raise ToolError(f"the files this patch touches hold more than {MAX_PREIMAGE_BYTES >> 20} MiB")
        out[rel] = PreImage(data, stat.S_IMODE(st.st_mode))
    return out


def _put(target: Path, pre: PreImage) -> None:
    """Make `target` hold `pre` (blocking)."""
    if pre.link is not None:
        _remove(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(pre.link, target)
    elif pre.data is not None:
        if target.is_symlink() or (target.exists() and not target.is_file()):
            _remove(target)
        write_atomic_bytes(target, pre.data, pre.mode or 0o644)
    else:
        _remove(target)


def _remove(target: Path) -> None:
    """Remove what is at `target`: a file or symlink, or an empty directory (a submodule git made)."""
    try:
        st = target.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISDIR(st.st_mode):
        target.rmdir()  # never a non-empty directory: that is someone else's
    else:
        target.unlink()


async def _expected_after(parsed: ParsedPatch, pre: dict[str, PreImage]) -> dict[str, str]:
    """Apply the patch to copies of the touched files in a scratch directory: the exact hashes
    the tree will have after a complete apply (`""` for deleted files)."""
    scratch = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="roundtable-apply-"))
    try:

        def populate() -> None:
            for rel, image in pre.items():
                target = scratch / rel
                if image.link is not None:
                    _put(target, image)
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


def _write_artefact(
    root: Path, tx_id: str, parsed: ParsedPatch, pre: dict[str, PreImage], files: dict[str, FileState]
) -> str:
    base = ROLLBACK_DIR / tx_id
    directory = root / base
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for rel, image in pre.items():
        if image.data is not None:
            target = directory / "preimage" / rel
            write_atomic_bytes(target, image.data, image.mode or 0o600, sync=False)
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
    pre: dict[str, PreImage]
    files: dict[str, FileState]
    dry_run_error: str
    head: str


async def _prepare(runtime: Runtime, proposal_id: str, policy: Policy) -> Prepared:
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
    pre = await asyncio.to_thread(_preimages, root, parsed.touched, allow)
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
    prep = await _prepare(runtime, proposal_id, policy)
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
    artefact_dir = root / artefact

    def remember(pid: int) -> None:
        # Recovery kills this process if it outlives us (it should not: PR_SET_PDEATHSIG).
        try:
            (artefact_dir / GIT_PID_FILE).write_text(git.process_token(pid))
        except OSError:
            pass

    try:
        try:
            await git.apply(root, prep.parsed.text.encode("utf-8"), on_start=remember)
        finally:
            _forget_git(artefact_dir)  # git has exited: from here a path at neither state is not its doing
        _crash_point("apply:files")
        after = await asyncio.to_thread(_hashes, root, list(prep.parsed.touched))
        head_after = await git.head(root)
        async with runtime.db.write(tool="patch.apply") as tx:
            return await _complete_apply(tx, tx_id, after, head=head_after, actor=applied_by)
    except BaseException as exc:
        reason = str(exc) if isinstance(exc, ToolError | OSError) else f"apply interrupted: {type(exc).__name__}"
        await _undo_failed_apply(runtime, tx_id, proposal.id, reason, run)
        raise


def _safe_hashes(root: Path, paths: list[str]) -> dict[str, str]:
    """Hashes that never raise: a path that cannot be hashed gets an `unreadable:` sentinel
    (it then matches neither its before- nor its after-hash)."""
    out: dict[str, str] = {}
    for rel in paths:
        try:
            out[rel] = file_hash(root, rel)
        except (ToolError, OSError) as exc:
            out[rel] = f"unreadable:{exc}"
    return out


def _undo(root: Path, tx: Transaction, paths: list[str], *, keep: bool = False) -> list[str]:
    """Put back the pre-image of every path not at its before-hash; returns the paths that are
    still not at their before-hash afterwards (blocking). With `keep`, what was at a path that
    is at neither its before- nor its after-state is first copied to `displaced/` in the
    artefact, so restoring never destroys someone's edit."""
    files = _files(tx)
    current = _safe_hashes(root, paths)
    for rel in paths:
        info = files.get(rel, {})
        if current[rel] == info.get("before", ""):
            continue
        try:
            if keep and current[rel] != info.get("after", ""):
                _displace(root, tx, rel)
            _restore_preimages(root, tx, [rel])
        except (OSError, ToolError) as exc:
            log.warning("undo of %s in transaction %s failed: %s", rel, tx.id, exc)
    again = _safe_hashes(root, paths)
    return [p for p in paths if again[p] != files.get(p, {}).get("before", "")]


def _displace(root: Path, tx: Transaction, rel: str) -> None:
    """Keep a copy of what is at `rel` (a regular file's bytes or a symlink's target) in the
    artefact's `displaced/` directory before recovery restores the path."""
    target = root / rel
    keep = root / (tx.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{tx.id}/") / "displaced" / rel
    try:
        st = target.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISLNK(st.st_mode):
        write_atomic_bytes(keep.with_name(keep.name + ".symlink"), os.fsencode(os.readlink(target)))
    elif stat.S_ISREG(st.st_mode):
        data = read_regular(target, MAX_FILE_BYTES, rel)
        if data is not None:
            write_atomic_bytes(keep, data, stat.S_IMODE(st.st_mode))


async def _undo_failed_apply(runtime: Runtime, tx_id: str, proposal_id: str, reason: str, run: str) -> None:
    """An apply failed after its intent committed: restore every touched path from the
    artefact now and mark the transaction failed (never leave it pending)."""
    try:
        async with runtime.db.read() as r:
            row = await r.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
        if row is None or row.status != "pending":
            return
        await asyncio.to_thread(git.kill_leftover, _git_token(runtime.root, row))
        left = await asyncio.to_thread(_undo, runtime.root, row, sorted(_files(row)))
        await _finish_failed(runtime, tx_id, proposal_id, reason, run, left)
    except Exception as exc:  # the next owner start recovers what is left
        log.error("could not undo failed apply %s: %s", tx_id, exc)


async def _finish_failed(
    runtime: Runtime, tx_id: str, proposal_id: str, reason: str, run: str, left: list[str]
) -> None:
    async with runtime.db.write(tool="patch.apply") as tx:
        row = await tx.one(Transaction, "SELECT * FROM transactions WHERE id = ?", (tx_id,))
        if row is None or row.status != "pending":
            return
        meta = json.loads(row.metadata_json or "{}")
        meta["error"] = reason
        meta["undone"] = not left
        if left:
            meta["needs_attention"] = f"could not restore: {', '.join(left)}"
        await tx.update("transactions", {"id": tx_id}, {"status": "failed", "metadata_json": json.dumps(meta)})
        await tx.update("proposals", {"id": proposal_id}, {"transaction_state": "failed", "updated_at": clock.now()})
        payload: dict[str, Any] = {"proposal_id": proposal_id, "transaction_id": tx_id, "error": reason}
        payload["undone"] = not left
        if left:
            payload["needs_attention"] = left
        await tx.append_event(run, "patch.apply_failed", payload)


def _forget_git(artefact_dir: Path) -> None:
    try:
        (artefact_dir / GIT_PID_FILE).unlink()
    except OSError:
        pass


def _git_token(root: Path, row: Transaction) -> str:
    base = root / (row.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{row.id}/")
    try:
        return (base / GIT_PID_FILE).read_text().strip()
    except OSError:
        return ""


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
    """Put back the recorded pre-image of each path (remove what did not exist)."""
    meta = json.loads(tx.metadata_json or "{}")
    files = meta.get("files", {})
    base = root / (tx.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{tx.id}/")
    for rel in paths:
        info = files.get(rel, {})
        target = root / rel
        if info.get("link") is not None:
            _put(target, PreImage(link=str(info["link"])))
        elif info.get("existed"):
            data = read_regular(base / "preimage" / rel, MAX_FILE_BYTES, rel)
            if data is None:
                raise ToolError(f"the pre-image of {rel} is missing from {base}")
            _put(target, PreImage(data, int(info.get("mode") or 0o644)))
        else:
            _remove(target)


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
    # If the process dies here the `rolling_back` intent stays: the next owner start finishes it.
    artefact_dir = root / (row.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{row.id}/")

    def remember(pid: int) -> None:
        try:
            (artefact_dir / GIT_PID_FILE).write_text(git.process_token(pid))
        except OSError:
            pass

    try:
        patch_text = await asyncio.to_thread((artefact_dir / "patch.diff").read_bytes)
        _forget_git(artefact_dir)  # the apply's record, not this rollback's
        try:
            await git.apply(root, patch_text, reverse=True, on_start=remember)
        except ToolError:
            pass  # fall back to the byte-exact pre-images below
        finally:
            _forget_git(artefact_dir)
        left = await asyncio.to_thread(_undo, root, row, paths)
    except (OSError, ToolError) as exc:
        log.warning("rollback of %s failed: %s", transaction_id, exc)
        left = paths
    if left:
        await _rollback_failed(runtime, transaction_id, left, caller)
        raise ToolError(
            f"rollback of {transaction_id} could not restore {', '.join(left)}; "
            "the transaction is marked needs_attention"
        )
    async with runtime.db.write(tool="patch.rollback") as tx:
        return await _complete_rollback(tx, transaction_id, actor=caller, reason=reason, now=now)


async def _rollback_failed(runtime: Runtime, tx_id: str, left: list[str], actor: str) -> None:
    """A rollback that could not put every path back: the transaction stays `applied` (its
    change is, at least partly, still there), flagged for the operator, and no longer blocks."""
    async with runtime.db.write(tool="patch.rollback") as tx:
        row = await tx.get(Transaction, tx_id)
        meta = json.loads(row.metadata_json or "{}")
        meta["needs_attention"] = f"rollback could not restore: {', '.join(left)}"
        await tx.update("transactions", {"id": tx_id}, {"status": "applied", "metadata_json": json.dumps(meta)})
        await tx.append_event(
            row.run_id,
            "patch.rollback_failed",
            {"proposal_id": row.proposal_id, "transaction_id": tx_id, "needs_attention": left},
            actor_id=actor,
        )


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


def _classify(row: Transaction, current: dict[str, str], *, git_ran: bool) -> tuple[str, str, str, list[str]]:
    """(outcome, status, detail, paths to restore) for an interrupted transaction. `git_ran`:
    the dead owner had started `git apply` (its pid is in the artefact), so a path at neither
    state is most likely git's own half-written work, not someone's edit."""
    files = _files(row)
    paths = sorted(files)
    before = {p: files[p].get("before", "") for p in paths}
    after = {p: files[p].get("after", "") for p in paths}
    foreign = [p for p in paths if current[p] not in (before[p], after[p])]
    at_after = [p for p in paths if current[p] == after[p] and after[p] != before[p]]
    at_before = [p for p in paths if current[p] == before[p] and after[p] != before[p]]
    applying = row.status == "pending"
    if foreign and git_ran:
        todo = [p for p in paths if current[p] != before[p]]
        shown = ", ".join(f"{p} ({_state_word(current[p])})" for p in foreign)
        detail = (
            f"git apply was interrupted ({shown}): restored the pre-images of {', '.join(todo)}; "
            "copies of what was there are under displaced/ in the rollback artefact"
        )
        return "rolled_back", "rolled_back", detail, todo
    if foreign:
        shown = ", ".join(f"{p} ({_state_word(current[p])})" for p in foreign)
        status = "failed" if applying else "applied"
        return (
            "needs_attention",
            status,
            f"paths at neither their before- nor after-state, left as they are: {shown}",
            [],
        )
    if applying and not at_before:
        return "completed", "applied", "every path has its after-image", []
    if applying and not at_after:
        return "not_applied", "failed", "no path had changed", []
    if not applying and not at_after:
        return "rolled_back", "rolled_back", "every path has its pre-image", []
    if not applying and not at_before:
        return "rollback_not_started", "applied", "the rollback had not started", []
    return "rolled_back", "rolled_back", f"restored pre-images of {', '.join(at_after)}", at_after


def _state_word(digest: str) -> str:
    if not digest:
        return "missing"
    if digest.startswith("unreadable:"):
        return digest
    if ":" in digest:
        return digest.split(":", 1)[0]
    return "changed"


async def _recover_one(runtime: Runtime, row: Transaction) -> str:
    root = runtime.root
    token = _git_token(root, row)
    killed = await asyncio.to_thread(git.kill_leftover, token)
    paths = sorted(_files(row))
    current = await asyncio.to_thread(_safe_hashes, root, paths)
    outcome, status, detail, restore = _classify(row, current, git_ran=bool(token))
    if restore:
        left = await asyncio.to_thread(lambda: _undo(root, row, paths, keep=True))
        if left:
            outcome = "needs_attention"
            status = "failed" if row.status == "pending" else "applied"
            detail = f"could not restore: {', '.join(left)}"
    if killed:
        detail = f"{detail}; {killed}"
    applying = row.status == "pending"
    head_now = await git.head(root)
    async with runtime.db.write(tool="recovery") as tx:
        now = clock.now()
        if outcome == "completed":
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
            if outcome == "needs_attention":
                meta["needs_attention"] = detail
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
    return f"transaction {row.id} (proposal {row.proposal_id}): {outcome} — {detail}"


async def recover_interrupted(runtime: Runtime) -> list[str]:
    """Finish or undo every in-flight transaction. Call only as the owner, under the owner lock.

    Never raises (the owner must start whatever it finds): a transaction that cannot be
    resolved is marked `failed`/`needs_attention` with the reason; one that cannot even be
    recorded (the database refuses the write) is reported in the returned lines and logged,
    and stays in flight until a later start succeeds."""
    lines: list[str] = []
    try:
        async with runtime.db.read() as r:
            rows = await r.all(
                Transaction,
                "SELECT * FROM transactions WHERE status IN ('pending', 'rolling_back') ORDER BY created_at, id",
            )
    except Exception as exc:
        log.error("recovery could not list transactions: %s", exc)
        return [f"recovery could not list transactions: {exc}"]
    for row in rows:
        try:
            lines.append(await _recover_one(runtime, row))
        except Exception as exc:
            log.error("recovery of transaction %s failed: %s", row.id, exc)
            lines.append(await _mark_unrecoverable(runtime, row, f"{type(exc).__name__}: {exc}"))
    return lines


async def _mark_unrecoverable(runtime: Runtime, row: Transaction, why: str) -> str:
    """Last resort: record that recovery could not resolve the transaction, so it stops
    blocking later applies; the files are left as they are."""
    detail = f"recovery failed ({why}); files left as they are"
    status = "failed" if row.status == "pending" else "applied"
    try:
        async with runtime.db.write(tool="recovery") as tx:
            meta = json.loads(row.metadata_json or "{}")
            meta["needs_attention"] = detail
            meta["recovery"] = {"outcome": "needs_attention", "detail": detail, "at": clock.now()}
            await tx.update("transactions", {"id": row.id}, {"status": status, "metadata_json": json.dumps(meta)})
            await tx.append_event(
                row.run_id,
                "transaction.recovered",
                {
                    "transaction_id": row.id,
                    "proposal_id": row.proposal_id,
                    "outcome": "needs_attention",
                    "detail": detail,
                    "status": status,
                },
                actor_id="recovery",
            )
    except Exception as exc:
        log.error("recovery could not record transaction %s: %s", row.id, exc)
        return f"transaction {row.id} (proposal {row.proposal_id}): unresolved — {detail}; not recorded: {exc}"
    return f"transaction {row.id} (proposal {row.proposal_id}): needs_attention — {detail}"


async def list_transactions(q: Reader | Tx, status: str = "") -> list[Transaction]:
    if status:
        return await q.all(
            Transaction, "SELECT * FROM transactions WHERE status = ? ORDER BY created_at, id", (status,)
        )
    return await q.all(Transaction, "SELECT * FROM transactions ORDER BY created_at, id")
