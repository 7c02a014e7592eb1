"""Patches: a git-faithful parser, a cross-check against git itself, content-addressed storage.

A patch is a unified diff, git style (`diff --git` with its extended header lines) or plain
(`---`/`+++`). `parse_patch` reads it the way `git apply` does — `rename from/to` (and the old
`rename old/new`), `copy from/to`, `similarity index`/`dissimilarity index`, `old mode`/`new mode`,
`new file mode`/`deleted file mode`, the mode on an `index` line, C-style quoted names — and
returns every path the patch touches (both sides of a rename or copy), each change with its
operation and modes, the old-side line ranges of every hunk and the added/deleted line counts;
`ParsedPatch.added_lines()` walks the added lines with their new-file numbers (the security scan
reads them there: one diff model).

It refuses, with a clear message and before anything is stored:
- binary and combined diffs, NUL bytes, malformed or lying hunk headers;
- a carriage return or any other control character in a header line, and any control
  character (C0, DEL, C1) in a path — `+++ b/package.json\r` is not `package.json`;
- a `diff --git` line whose names disagree with the `---`/`+++` or rename/copy lines (git would
  follow the latter, the reader of the header the former);
- paths that leave the repository or reach into `.git/` or `.roundtable/` (the path guard);
- symlinks (mode 120000), submodules (160000) and mode changes, unless the policy allows them
  (`patches.allow_symlinks`, `allow_submodules`, `allow_mode_changes`); allowed ones are listed
  in `ParsedPatch.special` and count as high-risk paths.

`git_cross_check` then runs `git apply --numstat --summary -z` on the same bytes (git only
reads the patch; nothing is written) and refuses the patch unless git's per-file names,
line counts, operations and modes are exactly what the parser derived. So what the gates,
claims, the transaction and its rollback see is what git will touch.

A new revision's patch is bounded before any of that work: at most `MAX_PATCH_BYTES` and at most
`repo.max_patch_files` file diffs (`parse_patch(max_files=…)`); a larger one is refused with the
limit named, so one request cannot hold a worker thread (or the write lock) for seconds.

`store_patch` writes the text to `.roundtable/patches/<sha256>.diff` atomically (temporary file,
then rename) — callers do that before the database commit that references it, so a committed
revision always has its file.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from roundtable.atomic import write_atomic_bytes
from roundtable.errors import ToolError, ValidationError
from roundtable.services.policy.engine import Policy
from roundtable.services.repository import git
from roundtable.services.repository.diff_lines import HUNK_HEADER, DiffLine, lines_of
from roundtable.services.repository.hashing import path_hash
from roundtable.services.repository.pathguard import resolve_repo_path

PATCH_DIR = Path(".roundtable") / "patches"
MAX_PATCH_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_PATCH_FILES = 1000  # `repo.max_patch_files`
SYMLINK_MODE = 0o120000
GITLINK_MODE = 0o160000
KNOWN_MODES = frozenset({0o100644, 0o100755, 0o100664, SYMLINK_MODE, GITLINK_MODE})
# Any C0 control, DEL or C1 control: never part of a path we accept.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# In a header line a tab may separate the name from a timestamp; nothing else is allowed.
_HEADER_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Allowances:
    """What the policy lets a patch do beyond changing regular files' contents."""

    symlinks: bool = False
    submodules: bool = False
    mode_changes: bool = False


NOTHING_SPECIAL = Allowances()


def allowances(policy: Policy) -> Allowances:
    """What the policy allows a patch beyond plain files."""
    return Allowances(
        symlinks=policy.allow_symlinks,
        submodules=policy.allow_submodules,
        mode_changes=policy.allow_mode_changes,
    )


@dataclass(frozen=True)
class FileChange:
    """One file diff: paths are repository-relative; `""` stands for /dev/null. Modes are the
    numbers git reads (0 when the patch names none)."""

    old: str
    new: str
    is_new: bool
    is_delete: bool
    is_rename: bool
    is_copy: bool = False
    old_mode: int = 0
    new_mode: int = 0
    score: int = 0
    added: int = 0
    deleted: int = 0
    # [first, end) indices of its hunks' lines in the patch's lines (`ParsedPatch.lines()`).
    body: tuple[int, int] = (0, 0)
    # Index of its first header line (`diff --git` or `---`) in the same lines.
    head: int = 0

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p in (self.old, self.new) if p))

    def describe(self) -> str:
        if self.is_rename:
            return f"rename {self.old} -> {self.new}"
        if self.is_copy:
            return f"copy {self.old} -> {self.new}"
        if self.is_new:
            return f"create {self.new}"
        if self.is_delete:
            return f"delete {self.old}"
        return self.old if self.old == self.new or not self.new else f"{self.old} -> {self.new}"

    def to_dict(self) -> dict[str, object]:
        return {
            "old": self.old,
            "new": self.new,
            "is_new": self.is_new,
            "is_delete": self.is_delete,
            "is_rename": self.is_rename,
            "is_copy": self.is_copy,
            "old_mode": f"{self.old_mode:06o}" if self.old_mode else "",
            "new_mode": f"{self.new_mode:06o}" if self.new_mode else "",
        }


@dataclass(frozen=True)
class ParsedPatch:
    text: str
    sha256: str
    touched: tuple[str, ...]
    changes: tuple[FileChange, ...]
    ranges: dict[str, tuple[tuple[int, int], ...]]
    # Paths whose change the policy had to allow (symlink, submodule, mode change) -> why.
    special: dict[str, str] = field(default_factory=dict)
    # git's refusal to apply it to the tree it was checked against before a write transaction
    # (`governance.proposals.prepare_revision`): "" when it applied, None when not checked yet.
    tree_refusal: str | None = None

    def lines(self) -> list[str]:
        """The patch's lines, as `FileChange.body` indexes them."""
        return self.text.split("\n")

    def added_lines(self) -> Iterator[tuple[FileChange, int, str]]:
        """Every line the patch adds: (its file diff, its number in the new file, its text without
        the `+` and without a trailing carriage return), in patch order."""
        lines = self.lines()
        for change in self.changes:
            start, end = change.body
            for line in lines_of("\n".join(lines[start:end])):
                if line.kind == "added":
                    yield change, line.new, line.text[1:].rstrip("\r")

    def file_parts(self) -> dict[str, str]:
        """Each file's part of the patch, headers included, by its path (the new one; the old one
        for a deletion), in patch order."""
        lines = self.lines()
        return {c.new or c.old: "\n".join(lines[c.head : c.body[1]]).rstrip("\n") + "\n" for c in self.changes}

    def file_lines(self) -> dict[str, list[DiffLine]]:
        """Each file's part of the patch line by line, numbered on its sides (`diff_lines.lines_of`)."""
        return {path: lines_of(part) for path, part in self.file_parts().items()}


def patch_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _shown(text: str) -> str:
    """A hostile string made safe to quote in an error: escaped and short."""
    out = repr(text)[1:-1]
    return out if len(out) <= 120 else out[:117] + "..."


def _guard(root: Path | None, rel: str, where: str) -> str:
    """A repository path from a patch, checked: no control characters, inside the root, clean.
    Without a root (a pure reading, e.g. the security scan) only the lexical checks run."""
    if not rel:
        raise ValidationError(f"invalid patch: empty path {where}")
    if CONTROL.search(rel):
        raise ValidationError(f"patch path {_shown(rel)} contains a control character ({where})")
    if root is None:
        clean = posixpath.normpath(rel)
        if rel.startswith("/") or clean == ".." or clean.startswith("../"):
            raise ValidationError(f"patch path {_shown(rel)}: path is outside the repository root")
    else:
        try:
            _abs, clean = resolve_repo_path(root, rel)
        except ToolError as exc:
            raise ValidationError(f"patch path {_shown(rel)}: {exc}") from None
    if clean != rel:
        raise ValidationError(f"patch path {_shown(rel)} is not a clean repository path (use {clean!r})")
    return rel


def _old_range(a: int, b: int, c: int) -> tuple[int, int]:
    """Old-file line range of a hunk `@@ -a,b +c,d @@`."""
    if b == 0:
        s = a if a > 0 else (c if c > 0 else 1)
        return (s, s)
    start = max(a, 1)
    return (start, max(a + b - 1, start))


_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}


def _unquote(text: str) -> tuple[str, str]:
    """A C-style quoted name at the start of `text` (git's quoting): (name, rest after it)."""
    out = bytearray()
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            try:
                return out.decode("utf-8"), text[i + 1 :]
            except UnicodeDecodeError:
                raise ValidationError("invalid patch: a quoted path is not UTF-8") from None
        if ch == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if re.fullmatch("[0-3][0-7][0-7]", text[i + 1 : i + 4]):
                out.append(int(text[i + 1 : i + 4], 8))
                i += 4
                continue
            raise ValidationError("invalid patch: bad escape in a quoted path")
        out.extend(ch.encode("utf-8"))
        i += 1
    raise ValidationError("invalid patch: unterminated quoted path")


def _quote(name: str) -> str:
    """A name as `git apply --summary` prints it with core.quotepath=false: quoted only when it
    holds a control character, which the parser has refused already — so as it is."""
    return name


def _value_name(value: str) -> str:
    """The name on a `rename from`/`copy to`… line: the whole value, or one quoted token."""
    if value.startswith('"'):
        name, rest = _unquote(value)
        if rest:
            raise ValidationError(f"invalid patch: text after a quoted path: {_shown(rest)}")
        return name
    return value


def _side_name(value: str, prefix: str) -> str | None:
    """The name on a `---`/`+++` line without its `a/`/`b/` prefix; None for /dev/null. A tab
    ends the name (a timestamp may follow)."""
    if value.startswith('"'):
        name, rest = _unquote(value)
        if rest and not rest.startswith("\t"):
            raise ValidationError(f"invalid patch: text after a quoted path: {_shown(rest)}")
    else:
        name = value.split("\t", 1)[0]
    if name == "/dev/null":
        return None
    if not name.startswith(prefix):
        raise ValidationError(f"patch path {_shown(name)} must start with {prefix} (git format, a/ and b/ prefixes)")
    return name[len(prefix) :]


def _header_pairs(rest: str) -> list[tuple[str, str]]:
    """Every way to read `diff --git <a> <b>` as two names (quoted or not), prefixes removed."""
    pairs: list[tuple[str, str]] = []
    if rest.startswith('"'):
        first, after = _unquote(rest)
        if after.startswith(" "):
            second = after[1:]
            if second.startswith('"'):
                name, tail = _unquote(second)
                if not tail:
                    pairs.append((first, name))
            else:
                pairs.append((first, second))
    else:
        for index, ch in enumerate(rest):
            if ch != " ":
                continue
            first, second = rest[:index], rest[index + 1 :]
            if second.startswith('"'):
                try:
                    name, tail = _unquote(second)
                except ValidationError:
                    continue
                if not tail:
                    pairs.append((first, name))
            else:
                pairs.append((first, second))
    return [(a[2:], b[2:]) for a, b in pairs if a.startswith("a/") and b.startswith("b/")]


def _mode(value: str, line_no: int) -> int:
    text = value.strip()
    if not re.fullmatch("[0-7]{1,7}", text):
        raise ValidationError(f"invalid patch: bad file mode {_shown(value)} on line {line_no}")
    mode = int(text, 8)
    if mode not in KNOWN_MODES:
        raise ValidationError(f"patch uses an unsupported file mode {text} on line {line_no}")
    return mode


@dataclass
class _Raw:
    """One file diff while it is being read."""

    line_no: int
    git: bool
    header: str = ""
    minus: str | None = None
    plus: str | None = None
    has_minus: bool = False
    has_plus: bool = False
    old_mode: int = 0
    new_mode: int = 0
    index_mode: int = 0
    is_new: bool = False
    is_delete: bool = False
    is_rename: bool = False
    is_copy: bool = False
    src: str | None = None
    dst: str | None = None
    score: int = 0
    added: int = 0
    deleted: int = 0
    hunks: list[tuple[int, int]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    body: tuple[int, int] = (0, 0)


def _set_once(raw: _Raw, key: str, line_no: int) -> None:
    if key in raw.seen:
        raise ValidationError(f"invalid patch: repeated '{key}' header line on line {line_no}")
    raw.seen.add(key)


def _ext_line(raw: _Raw, line: str, line_no: int) -> bool:
    """Apply one git extended header line; False if the line is not one (it ends the header)."""
    for prefix in ("old mode ", "new mode ", "deleted file mode ", "new file mode ", "index "):
        if line.startswith(prefix):
            value = line[len(prefix) :]
            _set_once(raw, prefix.strip(), line_no)
            if prefix == "index ":
                parts = value.split(" ")
                if not re.fullmatch("[0-9a-f]+\\.\\.[0-9a-f]+", parts[0]) or len(parts) > 2:
                    raise ValidationError(f"invalid patch: bad index line {line_no}")
                if len(parts) == 2:
                    raw.index_mode = _mode(parts[1], line_no)
            elif prefix == "old mode ":
                raw.old_mode = _mode(value, line_no)
            elif prefix == "new mode ":
                raw.new_mode = _mode(value, line_no)
            elif prefix == "deleted file mode ":
                raw.is_delete, raw.old_mode = True, _mode(value, line_no)
            else:
                raw.is_new, raw.new_mode = True, _mode(value, line_no)
            return True
    for prefix, kind, side in (
        ("copy from ", "copy", "src"),
        ("copy to ", "copy", "dst"),
        ("rename from ", "rename", "src"),
        ("rename to ", "rename", "dst"),
        ("rename old ", "rename", "src"),
        ("rename new ", "rename", "dst"),
    ):
        if line.startswith(prefix):
            _set_once(raw, f"{kind} {side}", line_no)
            name = _value_name(line[len(prefix) :])
            if kind == "copy":
                raw.is_copy = True
            else:
                raw.is_rename = True
            setattr(raw, side, name)
            return True
    for prefix in ("similarity index ", "dissimilarity index "):
        if line.startswith(prefix):
            _set_once(raw, "score", line_no)
            digits = re.match(r"\d+", line[len(prefix) :])
            if digits is None or int(digits.group()) > 100:
                raise ValidationError(f"invalid patch: bad {prefix.strip()} on line {line_no}")
            raw.score = int(digits.group())
            return True
    if line.startswith("--- "):
        _set_once(raw, "---", line_no)
        raw.has_minus, raw.minus = True, _side_name(line[4:], "a/")
        return True
    if line.startswith("+++ "):
        _set_once(raw, "+++", line_no)
        raw.has_plus, raw.plus = True, _side_name(line[4:], "b/")
        return True
    return False


def _check_header_line(line: str, line_no: int) -> None:
    if "\r" in line:
        raise ValidationError(f"patch header line {line_no} contains a carriage return: {_shown(line)}")
    if _HEADER_CONTROL.search(line):
        raise ValidationError(f"patch header line {line_no} contains a control character: {_shown(line)}")


def _read_hunks(raw: _Raw, lines: list[str], i: int) -> int:
    """Read the hunks starting at `lines[i]`; returns the index after the last one."""
    while i < len(lines) and lines[i].startswith("@@"):
        m = HUNK_HEADER.match(lines[i])
        if m is None:
            raise ValidationError(f"invalid patch: malformed hunk header on line {i + 1}: {_shown(lines[i][:80])}")
        a, b = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        c, d = int(m.group(3)), int(m.group(4) if m.group(4) is not None else 1)
        raw.hunks.append(_old_range(a, b, c))
        old_left, new_left = b, d
        header_at = i
        i += 1
        while old_left > 0 or new_left > 0:
            if i >= len(lines):
                raise ValidationError(_count_mismatch(lines, header_at, b, d))
            body = lines[i]
            tag = body[:1]
            if tag in (" ", ""):
                old_left, new_left = old_left - 1, new_left - 1
            elif tag == "-":
                old_left -= 1
                raw.deleted += 1
            elif tag == "+":
                new_left -= 1
                raw.added += 1
            elif tag != "\\":
                if tag == "@" or body.startswith("diff "):
                    raise ValidationError(_count_mismatch(lines, header_at, b, d))
                raise ValidationError(f"invalid patch: unexpected line {i + 1} inside a hunk: {_shown(body[:80])}")
            if old_left < 0 or new_left < 0:
                raise ValidationError(_count_mismatch(lines, header_at, b, d))
            i += 1
        if i < len(lines) and lines[i].startswith("\\"):
            i += 1
        if i < len(lines) and _more_body(lines, i):
            # git would silently drop these lines: the header promised fewer than the body has.
            raise ValidationError(_count_mismatch(lines, header_at, b, d))
    return i


def _more_body(lines: list[str], i: int) -> bool:
    """Whether `lines[i]`, right after a hunk's promised lines, still reads as hunk body."""
    line = lines[i]
    if line == "-- " or (line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
        return False  # a format-patch signature, or the next file's header
    return line[:1] in ("+", "-")


def _body_counts(lines: list[str], header_at: int) -> tuple[int, int, int]:
    """(old lines, new lines, index after the body) of the hunk whose header is `lines[header_at]`,
    counted the way a reader sees it: up to the next hunk or file header."""
    old = new = 0
    i = header_at + 1
    while i < len(lines):
        body = lines[i]
        if body.startswith(("@@", "diff ")) or (
            body.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            break
        tag = body[:1]
        if tag in (" ", ""):
            old, new = old + 1, new + 1
        elif tag == "-":
            old += 1
        elif tag == "+":
            new += 1
        elif tag != "\\":
            break
        i += 1
    while i > header_at + 1 and lines[i - 1] == "":  # blank lines after the last hunk are not part of it
        i -= 1
        old, new = old - 1, new - 1
    return old, new, i


def _count_mismatch(lines: list[str], header_at: int, old_count: int, new_count: int) -> str:
    """Why a hunk's body does not match its header, with both sets of counts."""
    old, new, _end = _body_counts(lines, header_at)
    return (
        f"invalid patch: the hunk at line {header_at + 1} ({_shown(lines[header_at][:80])}) promises "
        f"{old_count} old and {new_count} new lines, but its body has {old} old and {new} new lines "
        "(context lines count on both sides); fix the counts in the @@ header"
    )


def _binary_marker(line: str) -> bool:
    return line.startswith("GIT binary patch") or (line.startswith("Binary files ") and line.endswith(" differ"))


def _read_file(lines: list[str], i: int, *, git_style: bool) -> tuple[_Raw, int]:
    raw = _Raw(line_no=i + 1, git=git_style)
    if git_style:
        _check_header_line(lines[i], i + 1)
        raw.header = lines[i][len("diff --git ") :]
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            _check_header_line(lines[i], i + 1)
            if not _ext_line(raw, lines[i], i + 1):
                break
            i += 1
    else:
        for _ in range(2):
            _check_header_line(lines[i], i + 1)
            _ext_line(raw, lines[i], i + 1)
            i += 1
    if i < len(lines) and _binary_marker(lines[i]):
        raise ValidationError(f"binary patches are not supported (line {i + 1})")
    end = _read_hunks(raw, lines, i)
    raw.body = (i, end)
    return raw, end


def _resolve(raw: _Raw, root: Path | None) -> FileChange:
    """Names, operation and modes of one file diff, every disagreement refused."""
    where = f"file diff at line {raw.line_no}"
    if raw.is_new and raw.is_delete:
        raise ValidationError(f"invalid patch: {where} both creates and deletes a file")
    if (raw.is_rename or raw.is_copy) and (raw.is_new or raw.is_delete or raw.is_rename == raw.is_copy):
        raise ValidationError(f"invalid patch: {where} mixes rename, copy, create or delete")
    if raw.has_minus and raw.minus is None and raw.git and not raw.is_new:
        raise ValidationError(f"invalid patch: {where} has --- /dev/null without 'new file mode'")
    if raw.has_plus and raw.plus is None and raw.git and not raw.is_delete:
        raise ValidationError(f"invalid patch: {where} has +++ /dev/null without 'deleted file mode'")
    if raw.is_new and raw.has_minus and raw.minus is not None:
        raise ValidationError(f"invalid patch: {where} creates a file but has an old name")
    if raw.is_delete and raw.has_plus and raw.plus is not None:
        raise ValidationError(f"invalid patch: {where} deletes a file but has a new name")
    if not raw.git:
        if raw.minus is None and raw.plus is None:
            raise ValidationError("patch has a file diff with no path")
        raw.is_new, raw.is_delete = raw.minus is None, raw.plus is None
    old = raw.minus or ""
    new = raw.plus or ""
    if raw.is_rename or raw.is_copy:
        if raw.src is None or raw.dst is None:
            raise ValidationError(f"invalid patch: {where} names only one side of a rename or copy")
        if raw.has_minus and raw.minus != raw.src:
            raise ValidationError(
                f"patch names disagree in the {where}: --- names {_shown(old)}, the rename/copy source is {_shown(raw.src)}"
            )
        if raw.has_plus and raw.plus != raw.dst:
            raise ValidationError(
                f"patch names disagree in the {where}: +++ names {_shown(new)}, the rename/copy target is {_shown(raw.dst)}"
            )
        old, new = raw.src, raw.dst
        if old == new:
            raise ValidationError(f"invalid patch: {where} renames or copies {_shown(old)} onto itself")
    if raw.git:
        pairs = _header_pairs(raw.header)
        named = bool(old or new)
        if named:
            want = (old or new, new or old)
            if want not in pairs:
                raise ValidationError(
                    f"patch names disagree in the {where}: 'diff --git {_shown(raw.header)}' does not name "
                    f"{_shown(want[0])} and {_shown(want[1])}"
                )
        else:
            same = sorted({a for a, b in pairs if a == b})
            if len(same) != 1:
                raise ValidationError(f"invalid patch: cannot read the file names of 'diff --git {_shown(raw.header)}'")
            old = "" if raw.is_new else same[0]
            new = "" if raw.is_delete else same[0]
        if not raw.is_new and not old:
            old = new
        if not raw.is_delete and not new:
            new = old
    elif not raw.is_new and not raw.is_delete and old != new:
        raise ValidationError(f"patch changes path {_shown(old)} to {_shown(new)} without a rename header")
    if old:
        _guard(root, old, where)
    if new:
        _guard(root, new, where)
    old_mode = raw.old_mode or raw.index_mode
    changed = raw.hunks or raw.is_rename or raw.is_copy or raw.is_new or raw.is_delete
    if not changed and not (raw.old_mode and raw.new_mode and raw.old_mode != raw.new_mode):
        raise ValidationError(f"invalid patch: {where} changes nothing")
    return FileChange(
        old=old,
        new=new,
        is_new=raw.is_new,
        is_delete=raw.is_delete,
        is_rename=raw.is_rename,
        is_copy=raw.is_copy,
        old_mode=old_mode,
        new_mode=raw.new_mode,
        score=raw.score,
        added=raw.added,
        deleted=raw.deleted,
        body=raw.body,
        head=raw.line_no - 1,
    )


def _special(change: FileChange, allow: Allowances) -> str:
    """Why a change needs the policy's leave (`""` if it does not); refuses what is not allowed."""
    modes = {m for m in (change.old_mode, change.new_mode) if m}
    path = change.new or change.old
    if SYMLINK_MODE in modes:
        if not allow.symlinks:
            raise ValidationError(
                f"patch touches a symbolic link (mode 120000): {_shown(path)}; the policy does not allow "
                "symlinks (patches.allow_symlinks)"
            )
        return "symlink"
    if GITLINK_MODE in modes:
        if not allow.submodules:
            raise ValidationError(
                f"patch touches a submodule (mode 160000): {_shown(path)}; the policy does not allow "
                "submodules (patches.allow_submodules)"
            )
        return "submodule"
    mode_change = bool(change.old_mode and change.new_mode and change.old_mode != change.new_mode)
    executable = change.is_new and change.new_mode == 0o100755
    if mode_change or executable:
        what = f"{change.old_mode:06o} => {change.new_mode:06o}" if mode_change else "created executable"
        if not allow.mode_changes:
            raise ValidationError(
                f"patch changes the mode of {_shown(path)} ({what}); the policy does not allow mode "
                "changes (patches.allow_mode_changes)"
            )
        return f"mode change ({what})"
    return ""


def _too_many_files(count: int, max_files: int) -> ValidationError:
    return ValidationError(
        f"patch changes {count} files, over the limit of {max_files} per patch (repo.max_patch_files); "
        "split it into smaller proposals"
    )


def _too_large() -> ValidationError:
    return ValidationError(
        f"patch is larger than {MAX_PATCH_BYTES // (1024 * 1024)} MiB, the limit for one patch; "
        "split it into smaller proposals"
    )


def parse_patch(
    text: str, root: Path | None, allow: Allowances = NOTHING_SPECIAL, *, max_files: int = 0
) -> ParsedPatch:
    """Parse a unified diff the way git does; every touched path goes through the path guard
    (`root=None`: the lexical checks only, no file system access). `max_files` (0: no limit)
    refuses a patch with more file diffs than that before any per-file work. CPU-bound on a
    large patch: call it from a worker thread (`asyncio.to_thread`) in the owner."""
    if not text.strip():
        raise ValidationError("patch is empty")
    if len(text) > MAX_PATCH_BYTES or len(text.encode("utf-8")) > MAX_PATCH_BYTES:
        raise _too_large()
    if max_files:
        headers = text.count("\ndiff --git ") + text.startswith("diff --git ")
        if headers > max_files:
            raise _too_many_files(headers, max_files)
    if "\x00" in text:
        raise ValidationError("binary patches are not supported")
    if not text.endswith("\n"):
        raise ValidationError(
            f"invalid patch: it does not end with a newline; its last line (line {text.count(chr(10)) + 1}) "
            "must end with \\n, or git reads the patch as corrupt"
        )
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if line.startswith("@@") and not HUNK_HEADER.match(line):
            raise ValidationError(f"invalid patch: malformed hunk header on line {number}: {_shown(line[:80])}")
    raws: list[_Raw] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            raw, i = _read_file(lines, i, git_style=True)
            raws.append(raw)
        elif line.startswith(("diff --cc ", "diff --combined ")):
            raise ValidationError(f"combined diffs are not supported (line {i + 1})")
        elif (
            line.startswith("--- ")
            and i + 2 < len(lines)
            and lines[i + 1].startswith("+++ ")
            and lines[i + 2].startswith("@@")
        ):
            raw, i = _read_file(lines, i, git_style=False)
            raws.append(raw)
        elif line.startswith("@@"):
            raise ValidationError(f"invalid patch: hunk without a file header on line {i + 1}")
        elif _binary_marker(line):
            raise ValidationError(f"binary patches are not supported (line {i + 1})")
        else:
            i += 1  # text before, between or after file diffs (a commit message): git skips it too
    if not raws:
        raise ValidationError("patch contains no diff headers")
    if max_files and len(raws) > max_files:
        raise _too_many_files(len(raws), max_files)
    changes: list[FileChange] = []
    ranges: dict[str, list[tuple[int, int]]] = {}
    touched: set[str] = set()
    special: dict[str, str] = {}
    for raw in raws:
        change = _resolve(raw, root)
        why = _special(change, allow)
        if why:
            for path in change.paths:
                special[path] = why
        changes.append(change)
        touched.update(change.paths)
        current = change.old or change.new
        if raw.hunks:
            ranges.setdefault(current, []).extend(raw.hunks)
    return ParsedPatch(
        text=text,
        sha256=patch_sha256(text),
        touched=tuple(sorted(touched)),
        changes=tuple(changes),
        ranges={k: tuple(v) for k, v in ranges.items()},
        special=special,
    )


# --- what git reads ------------------------------------------------------------------------


def _summary_lines(change: FileChange) -> list[str]:
    """The lines `git apply --summary` prints for one file diff (core.quotepath=false)."""
    if change.is_new:
        mode = f"mode {change.new_mode:06o} " if change.new_mode else ""
        return [f" create {mode}{_quote(change.new)}"]
    if change.is_delete:
        mode = f"mode {change.old_mode:06o} " if change.old_mode else ""
        return [f" delete {mode}{_quote(change.old)}"]
    out: list[str] = []
    mode_change = bool(change.old_mode and change.new_mode and change.old_mode != change.new_mode)
    if change.is_rename or change.is_copy:
        kind = "rename" if change.is_rename else "copy"
        old, new = change.old, change.new
        prefix = 0
        while True:
            a, b = old.find("/", prefix), new.find("/", prefix)
            if a < 0 or a != b or old[prefix:a] != new[prefix:b]:
                break
            prefix = a + 1
        if prefix:
            out.append(f" {kind} {old[:prefix]}{{{old[prefix:]} => {new[prefix:]}}} ({change.score}%)")
        else:
            out.append(f" {kind} {old} => {new} ({change.score}%)")
        if mode_change:
            out.append(f" mode change {change.old_mode:06o} => {change.new_mode:06o}")
        return out
    if change.score:
        out.append(f" rewrite {_quote(change.new)} ({change.score}%)")
    if mode_change:
        out.append(f" mode change {change.old_mode:06o} => {change.new_mode:06o} {_quote(change.new)}")
    return out


def expected_git_view(parsed: ParsedPatch) -> tuple[list[str], list[str]]:
    """What `git apply --numstat --summary -z` must print for this patch: (numstat records,
    summary lines)."""
    numstat = [f"{c.added}\t{c.deleted}\t{c.new or c.old}" for c in parsed.changes]
    summary = [line for c in parsed.changes for line in _summary_lines(c)]
    return numstat, summary


async def git_cross_check(root: Path, parsed: ParsedPatch) -> None:
    """Refuse the patch unless git reads exactly the files, counts, operations and modes the
    parser derived. `git apply --numstat --summary` only reads the patch."""
    result = await git.read_patch_view(root, parsed.text.encode("utf-8"))
    if result.returncode != 0:
        first = (result.stderr.splitlines() or ["no reason given"])[0]
        raise ValidationError(f"invalid patch: git apply cannot read it: {_shown(first)}")
    try:
        text = result.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("patch refused: git reads a file name that is not UTF-8") from None
    *numstat, tail = text.split("\0")
    summary = tail.split("\n")
    if summary and summary[-1] == "":
        summary.pop()
    want_numstat, want_summary = expected_git_view(parsed)
    if len(numstat) != len(want_numstat):
        raise ValidationError(
            f"patch refused: git reads {len(numstat)} file diff(s), roundtable parsed {len(want_numstat)}"
        )
    for got, want in zip(numstat, want_numstat, strict=True):
        if got != want:
            raise ValidationError(
                f"patch refused: git and roundtable read it differently: git sees {_shown(got)}, "
                f"roundtable parsed {_shown(want)}"
            )
    if summary != want_summary:
        got_line = next((g for g, w in zip(summary, want_summary, strict=False) if g != w), None)
        want_line = next((w for g, w in zip(summary, want_summary, strict=False) if g != w), None)
        if got_line is None:
            got_line = "\n".join(summary[len(want_summary) :]) or "(nothing)"
            want_line = "\n".join(want_summary[len(summary) :]) or "(nothing)"
        raise ValidationError(
            f"patch refused: git and roundtable read its operations differently: git sees {_shown(got_line)}, "
            f"roundtable parsed {_shown(want_line or '')}"
        )


def tree_problems(root: Path, parsed: ParsedPatch, allow: Allowances = NOTHING_SPECIAL) -> list[str]:
    """Touched paths the tree holds as something other than a regular file — a directory, a
    FIFO, a device, or a symlink (allowed only when the policy allows symlinks *and* the patch
    says it is one, mode 120000): git would follow or refuse them, or change a link it was not
    told about. Blocking (`lstat` only): call from a worker thread."""
    declared_links = {
        path for change in parsed.changes if SYMLINK_MODE in (change.old_mode, change.new_mode) for path in change.paths
    }
    out: list[str] = []
    for path in parsed.touched:
        try:
            st = os.lstat(root / path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISREG(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode):
            if allow.symlinks and path in declared_links:
                continue
            out.append(f"{path} is a symbolic link in the tree; roundtable patches only regular files")
        else:
            out.append(f"{path} is not a regular file in the tree; roundtable patches only regular files")
    return out


async def check_patch(root: Path, parsed: ParsedPatch, allow: Allowances = NOTHING_SPECIAL) -> None:
    """Everything a new revision must pass beyond parsing: git's reading and the tree's files."""
    await git_cross_check(root, parsed)
    problems = await asyncio.to_thread(tree_problems, root, parsed, allow)
    if problems:
        raise ValidationError(f"patch refused: {problems[0]}")


def patch_rel_path(sha256: str) -> str:
    return (PATCH_DIR / f"{sha256}.diff").as_posix()


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(paths: list[Path]) -> None:
    """Flush many files (and their directories) to disk. Issued concurrently, so the
    filesystem journal can commit them together instead of once per file."""
    targets = list(dict.fromkeys([*paths, *(p.parent for p in paths)]))
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(targets)))) as pool:
        list(pool.map(_fsync_path, targets))


def store_patch(root: Path, parsed: ParsedPatch) -> str:
    """Store the patch content-addressed; returns its path relative to the root."""
    rel = patch_rel_path(parsed.sha256)
    target = root / rel
    if not target.exists():
        try:
            write_atomic_bytes(target, parsed.text.encode("utf-8"))
        except OSError as exc:  # a full or read-only disk is the operator's to fix: say so
            raise ToolError(f"store patch {rel}: {exc.strerror or exc}") from None
    return rel


def read_patch(root: Path, sha256: str) -> str:
    """The stored text of a revision, verified against its hash."""
    path = root / patch_rel_path(sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"patch revision {sha256} is missing from {PATCH_DIR.as_posix()}/") from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ToolError(f"patch revision {sha256} does not match its hash (the file was modified)")
    return data.decode("utf-8")


def file_hash(root: Path, rel: str) -> str:
    """sha256 of a repository file's bytes; `""` when it does not exist. The path is
    looked at with `lstat`: a symlink, FIFO or device gets its sentinel, never its contents."""
    try:
        return path_hash(root / rel, rel)
    except OSError as exc:
        raise ToolError(f"hash file {rel}: {exc.strerror or exc}") from None
