"""The files of a patch transaction: pre-images, the rollback artefact, hashing, restoring.

Everything here is blocking file I/O (run it in a worker thread) except the constants. A touched
path's pre-image is what it held before the apply — a regular file's bytes and mode, a
symlink's target (only when the policy allows symlinks), or nothing — read with `lstat`, a size
cap and no symlink followed. The rollback artefact `.roundtable/rollback/<tx>/` holds
`manifest.json`, the forward `patch.diff` and `preimage/<path>` copies; `git.pid` names the
`git apply` running for the transaction (pid and start time) until it exits; `displaced/` keeps
what recovery found at a path before it restored it. Hashes never raise in `safe_hashes`: a
path that cannot be hashed gets an `unreadable:` sentinel that matches neither state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roundtable.errors import ToolError
from roundtable.services.repository.hashing import read_regular
from roundtable.services.repository.patches import Allowances, ParsedPatch, file_hash, fsync_all, write_atomic_bytes
from roundtable.store.records import Transaction

ROLLBACK_DIR = Path(".roundtable") / "rollback"
GIT_PID_FILE = "git.pid"
# Pre-images are held in memory while an apply is prepared: bound them.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_PREIMAGE_BYTES = 256 * 1024 * 1024
log = logging.getLogger(__name__)


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


def state_hash(head: str, hashes: dict[str, str]) -> str:
    """`git:<HEAD>:<sha256 over the touched files' hashes>` — cheap, and exact for what we change."""
    digest = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
    return f"git:{head}:{digest}"


def preimages(root: Path, paths: tuple[str, ...], allow: Allowances) -> dict[str, PreImage]:
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


def put_image(target: Path, pre: PreImage) -> None:
    """Make `target` hold `pre` (blocking)."""
    if pre.link is not None:
        remove_path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(pre.link, target)
    elif pre.data is not None:
        if target.is_symlink() or (target.exists() and not target.is_file()):
            remove_path(target)
        write_atomic_bytes(target, pre.data, pre.mode or 0o644)
    else:
        remove_path(target)


def remove_path(target: Path) -> None:
    """Remove what is at `target`: a file or symlink, or an empty directory (a submodule git made)."""
    try:
        st = target.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISDIR(st.st_mode):
        target.rmdir()  # never a non-empty directory: that is someone else's
    else:
        target.unlink()


def write_artefact(
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


def safe_hashes(root: Path, paths: list[str]) -> dict[str, str]:
    """Hashes that never raise: a path that cannot be hashed gets an `unreadable:` sentinel
    (it then matches neither its before- nor its after-hash)."""
    out: dict[str, str] = {}
    for rel in paths:
        try:
            out[rel] = file_hash(root, rel)
        except (ToolError, OSError) as exc:
            out[rel] = f"unreadable:{exc}"
    return out


def hashes(root: Path, paths: list[str]) -> dict[str, str]:
    return {p: file_hash(root, p) for p in paths}


def recorded_files(tx: Transaction) -> dict[str, dict[str, Any]]:
    files: dict[str, dict[str, Any]] = json.loads(tx.metadata_json or "{}").get("files", {})
    return files


def undo(root: Path, tx: Transaction, paths: list[str], *, keep: bool = False) -> list[str]:
    """Put back the pre-image of every path not at its before-hash; returns the paths that are
    still not at their before-hash afterwards (blocking). With `keep`, what was at a path that
    is at neither its before- nor its after-state is first copied to `displaced/` in the
    artefact, so restoring never destroys someone's edit."""
    files = recorded_files(tx)
    current = safe_hashes(root, paths)
    for rel in paths:
        info = files.get(rel, {})
        if current[rel] == info.get("before", ""):
            continue
        try:
            if keep and current[rel] != info.get("after", ""):
                displace(root, tx, rel)
            restore_preimages(root, tx, [rel])
        except (OSError, ToolError) as exc:
            log.warning("undo of %s in transaction %s failed: %s", rel, tx.id, exc)
    again = safe_hashes(root, paths)
    return [p for p in paths if again[p] != files.get(p, {}).get("before", "")]


def displace(root: Path, tx: Transaction, rel: str) -> None:
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


def restore_preimages(root: Path, tx: Transaction, paths: list[str]) -> None:
    """Put back the recorded pre-image of each path (remove what did not exist)."""
    meta = json.loads(tx.metadata_json or "{}")
    files = meta.get("files", {})
    base = root / (tx.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{tx.id}/")
    for rel in paths:
        info = files.get(rel, {})
        target = root / rel
        if info.get("link") is not None:
            put_image(target, PreImage(link=str(info["link"])))
        elif info.get("existed"):
            data = read_regular(base / "preimage" / rel, MAX_FILE_BYTES, rel)
            if data is None:
                raise ToolError(f"the pre-image of {rel} is missing from {base}")
            put_image(target, PreImage(data, int(info.get("mode") or 0o644)))
        else:
            remove_path(target)


def git_recorder(artefact_dir: Path) -> Callable[[int], None]:
    """An `on_start` hook for `git.apply`: records the child (pid and start time) beside the
    artefact, so recovery can kill it if it ever outlives the owner (PR_SET_PDEATHSIG should)."""
    from roundtable.services.repository import git

    def remember(pid: int) -> None:
        try:
            (artefact_dir / GIT_PID_FILE).write_text(git.process_token(pid))
        except OSError:
            pass

    return remember


def forget_git(artefact_dir: Path) -> None:
    try:
        (artefact_dir / GIT_PID_FILE).unlink()
    except OSError:
        pass


def git_token(root: Path, row: Transaction) -> str:
    base = root / (row.rollback_patch_path or f"{ROLLBACK_DIR.as_posix()}/{row.id}/")
    try:
        return (base / GIT_PID_FILE).read_text().strip()
    except OSError:
        return ""
