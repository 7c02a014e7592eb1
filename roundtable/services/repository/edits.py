"""Edits to a patch: the server writes the diff an agent would otherwise compute by hand.

An agent describes a change as `edits` (`{path, old_string, new_string, replace_all?}`: each
`old_string` must occur exactly once in the file as it is at that point, unless `replace_all`)
and/or `files` (`{path, content}`: a new file, or a whole file rewritten). `build_patch` applies
them to copies of the base's files and lets git itself write the unified diff — in a scratch
repository holding only those files, with a hermetic configuration (no global or system config,
`a/`/`b/` prefixes, no renames, no colour) — so the result is byte for byte what `git diff`
prints for the same change, and everything after it (the parser, git's cross-check, the claims,
every gate) treats it like any hand-written patch.

A miss is explained where it happens: an `old_string` that is not in the file is named, with the
file's lines closest to it (numbered); one that matches several times gives their line numbers.
Nothing is written to the base.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import tempfile
from pathlib import Path

import anyio

from roundtable.errors import ToolError, ValidationError
from roundtable.services.args import Flag, Item, RepoPath, Text
from roundtable.services.repository import git
from roundtable.services.repository.pathguard import resolve_repo_path
from roundtable.services.repository.repo import is_binary, read_regular_bytes

MAX_EDITS = 500
SHOWN_LINES = 6  # lines of the file shown around the closest match
GIT_HERMETIC = (
    "-c",
    "core.quotepath=false",
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
)

DIFF_ARGS = ("--no-color", "--no-ext-diff", "--no-renames", "--src-prefix=a/", "--dst-prefix=b/")


# The items of `proposal.create`'s and `proposal.attach_patch`'s `edits` and `files`, as the call
# validated them (no docstrings: a model's docstring would become its schema's description).


class Edit(Item):
    # Replace `old_string` by `new_string` in `path` (exactly once unless `replace_all`).
    path: RepoPath
    old_string: Text
    new_string: Text
    replace_all: Flag = False


class FileWrite(Item):
    # `path` gets exactly `content` (created if it does not exist).
    path: RepoPath
    content: Text


def _shown(text: str, limit: int = 120) -> str:
    out = repr(text)[1:-1]
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i}\t{line}" for i, line in enumerate(lines))


def closest_lines(text: str, needle: str) -> str:
    """The file's lines most like `needle` (its length in lines, at most `SHOWN_LINES`), numbered."""
    lines = text.split("\n")
    wanted = [line for line in needle.split("\n") if line.strip()] or [needle]
    probe = wanted[0].strip()
    best, best_score = 0, -1.0
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(probe)
    for index, line in enumerate(lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() <= best_score or matcher.quick_ratio() <= best_score:
            continue
        score = matcher.ratio()
        if score > best_score:
            best, best_score = index, score
    span = min(max(len(needle.split("\n")), 1), SHOWN_LINES)
    return _numbered(lines[best : best + span], best + 1)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def apply_edit(text: str, edit: Edit, where: str) -> str:
    """`text` with one edit made, or `ValidationError` saying exactly why not."""
    if edit.old_string == "":
        raise ValidationError(f"{where}: old_string is empty; to create or rewrite a whole file use files")
    if edit.old_string == edit.new_string:
        raise ValidationError(f"{where}: old_string and new_string are the same; the edit changes nothing")
    count = text.count(edit.old_string)
    if count == 0:
        raise ValidationError(
            f"{where}: old_string not found in {edit.path}: '{_shown(edit.old_string)}'. "
            f"The closest lines are:\n{closest_lines(text, edit.old_string)}"
        )
    if count > 1 and not edit.replace_all:
        starts: list[int] = []
        at = text.find(edit.old_string)
        while at >= 0 and len(starts) < 10:
            starts.append(_line_of(text, at))
            at = text.find(edit.old_string, at + len(edit.old_string))
        raise ValidationError(
            f"{where}: old_string occurs {count} times in {edit.path} (at lines "
            f"{', '.join(map(str, starts))}); include more surrounding text to pick one, or set replace_all"
        )
    return text.replace(edit.old_string, edit.new_string)


def _read_base(base: Path, rel: str, max_bytes: int) -> tuple[str | None, int]:
    """A base file's text and mode (`None`, 0o644 when it does not exist)."""
    target = base / rel
    try:
        info = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None, 0o644
    except OSError as exc:
        raise ToolError(f"read {rel}: {(exc.strerror or str(exc)).lower()}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValidationError(f"{rel} is not a regular file in the tree; edits change only regular files")
    data = read_regular_bytes(target, rel, max_bytes, verb="edit")
    if is_binary(data):
        raise ValidationError(f"{rel} is a binary file; edits change only text files")
    return data.decode("utf-8"), stat.S_IMODE(info.st_mode)


def _clean(base: Path, path: str, where: str) -> str:
    try:
        _abs, rel = resolve_repo_path(base, path)
    except ToolError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return rel


def _check_request(base: Path, edits: list[Edit], files: list[FileWrite], max_bytes: int) -> list[str]:
    """Every path the request names, cleaned; refuses malformed requests before any work."""
    if not edits and not files:
        raise ValidationError("give a patch, or edits and/or files to build one from")
    if len(edits) + len(files) > MAX_EDITS:
        raise ValidationError(f"at most {MAX_EDITS} edits and files in one call")
    written: set[str] = set()
    paths: list[str] = []
    for index, item in enumerate(files):
        where = f"files[{index}]"
        rel = _clean(base, item.path, where)
        if rel in written:
            raise ValidationError(f"{where}: {rel} is given twice in files")
        if len(item.content.encode("utf-8")) > max_bytes:
            raise ValidationError(f"{where}: content is over the limit of {max_bytes} bytes (repo.max_read_bytes)")
        if "\x00" in item.content:
            raise ValidationError(f"{where}: content holds a NUL byte; only text files can be written")
        written.add(rel)
        paths.append(rel)
    for index, edit in enumerate(edits):
        where = f"edits[{index}]"
        rel = _clean(base, edit.path, where)
        if rel in written:
            raise ValidationError(f"{where}: {rel} is also in files; put the whole new content there")
        paths.append(rel)
    return list(dict.fromkeys(paths))


def _write(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    os.chmod(path, mode)


def _seed(base: Path, scratch: Path, paths: list[str], max_bytes: int) -> list[str]:
    """Copy the base's versions of `paths` into the scratch tree; returns those that exist."""
    present = []
    for rel in paths:
        text, mode = _read_base(base, rel, max_bytes)
        if text is not None:
            _write(scratch / rel, text, mode)
            present.append(rel)
    return present


def _edit_scratch(scratch: Path, base: Path, edits: list[Edit], files: list[FileWrite], max_bytes: int) -> None:
    """Make the requested changes to the scratch tree (which holds the revision they build on)."""
    for item in files:
        rel = _clean(base, item.path, "files")
        target = scratch / rel
        mode = stat.S_IMODE(os.lstat(target).st_mode) if target.exists() else 0o644
        _write(target, item.content, mode)
    for index, edit in enumerate(edits):
        where = f"edits[{index}]"
        rel = _clean(base, edit.path, where)
        target = scratch / rel
        if not target.exists():
            raise ValidationError(f"{where}: {rel} does not exist; create it with files")
        text = target.read_bytes().decode("utf-8", errors="replace")
        changed = apply_edit(text, edit.model_copy(update={"path": rel}), where)
        _write(target, changed, stat.S_IMODE(os.lstat(target).st_mode))
    for rel in dict.fromkeys(_clean(base, e.path, "edits") for e in edits):
        if len((scratch / rel).read_bytes()) > max_bytes:
            raise ValidationError(f"{rel} would be over the limit of {max_bytes} bytes (repo.max_read_bytes)")


async def _git(scratch: Path, *args: str, stdin: bytes = b"") -> tuple[int, bytes, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CEILING_DIRECTORIES": str(scratch.parent),
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    code, out, err = await git.exec_git(scratch, [*GIT_HERMETIC, *args], stdin=stdin, env=env)
    return code, out, err.decode("utf-8", "replace").strip()[:300]


async def _git_ok(scratch: Path, *args: str) -> bytes:
    code, out, err = await _git(scratch, *args)
    if code != 0:
        raise ToolError(f"git {args[0]} failed while building the patch: {err}")
    return out


async def build_patch(
    base: Path,
    edits: list[Edit],
    files: list[FileWrite],
    *,
    max_bytes: int,
    on_top_of: str = "",
    on_top_of_paths: tuple[str, ...] = (),
) -> str:
    """The unified diff (git format, `a/`/`b/` prefixes, 3 lines of context) that turns `base`'s
    files into what `edits` and `files` describe. With `on_top_of` (a patch, touching
    `on_top_of_paths`) the edits are made to the files as that patch leaves them — a new
    revision built on the current one — and the result is still one patch against `base`.
    `ValidationError` for an edit that does not fit or a change that changes nothing. `base`
    is never written."""
    named = await anyio.to_thread.run_sync(_check_request, base, edits, files, max_bytes)
    paths = list(dict.fromkeys([*on_top_of_paths, *named]))
    scratch = Path(await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="rt-edits-")))
    try:
        await _git_ok(scratch, "init", "-q", ".")
        present = await anyio.to_thread.run_sync(_seed, base, scratch, paths, max_bytes)
        if present:
            await _git_ok(scratch, "add", "--", *present)
        if on_top_of:
            code, _out, err = await _git(scratch, "apply", "--whitespace=nowarn", "-", stdin=on_top_of.encode("utf-8"))
            if code != 0:
                raise ValidationError(
                    f"the current revision no longer applies to the tree ({err.removeprefix('error: ')}); "
                    "send a whole patch instead of edits"
                )
        await anyio.to_thread.run_sync(_edit_scratch, scratch, base, edits, files, max_bytes)
        fresh = [rel for rel in paths if rel not in present and (scratch / rel).exists()]
        if fresh:
            await _git_ok(scratch, "add", "-N", "--", *fresh)
        out = await _git_ok(scratch, "diff", *DIFF_ARGS, "--", *paths)
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))
    if not out:
        raise ValidationError("the edits and files leave every file as it is; there is nothing to propose")
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("the built patch is not UTF-8") from None


async def _apply_in(scratch: Path, text: str, label: str) -> None:
    code, _out, err = await _git(scratch, "apply", "--whitespace=nowarn", "-", stdin=text.encode("utf-8"))
    if code != 0:
        raise ValidationError(
            f"the {label} revision no longer applies to the tree ({err.removeprefix('error: ')}); "
            "read the whole current patch instead"
        )


async def revision_diff(base: Path, older: str, newer: str, paths: tuple[str, ...], *, max_bytes: int) -> str:
    """What changed in the files from one revision to another: both patches are applied to
    `base`'s versions of `paths` in a scratch repository and git diffs the two results. `""`
    when they leave the files the same; `ValidationError` when one no longer applies."""
    scratch = Path(await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(prefix="rt-interdiff-")))
    commit = ("-c", "user.name=roundtable", "-c", "user.email=roundtable@localhost", "commit", "-q", "--allow-empty")
    try:
        await _git_ok(scratch, "init", "-q", ".")
        await anyio.to_thread.run_sync(_seed, base, scratch, list(paths), max_bytes)
        await _git_ok(scratch, "add", "-A")
        await _git_ok(scratch, *commit, "-m", "base")
        await _apply_in(scratch, older, "older")
        await _git_ok(scratch, "add", "-A")
        await _git_ok(scratch, *commit, "-m", "older")
        older_commit = (await _git_ok(scratch, "rev-parse", "HEAD")).decode().strip()
        await _git_ok(scratch, "reset", "-q", "--hard", "HEAD~1")
        await _git_ok(scratch, "clean", "-q", "-fdx")
        await _apply_in(scratch, newer, "current")
        await _git_ok(scratch, "add", "-A")
        out = await _git_ok(scratch, "diff", "--cached", *DIFF_ARGS, older_commit)
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))
    return out.decode("utf-8", errors="replace")
