"""One file's part of a unified diff, line by line, each line with its numbers in the old and the new file.

The patch parser (`patches.parse_patch`) is the one reader of a patch's structure: files, names,
renames, hunks. This module numbers the lines of one file's part it found — each line classified
(`header`, `hunk`, `context`, `added`, `removed`, `note`) and numbered on the side(s) it belongs
to, from the hunk headers (`@@ -a,b +c,d @@`): `lines_of`. The same numbering gives the security
scan its added lines (`ParsedPatch.added_lines`), a line comment its anchor
(`services.governance.comments`) and the console's review view the lines its cursor moves over
(`ParsedPatch.file_lines`). Pure functions of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["header", "hunk", "context", "added", "removed", "note"]
Side = Literal["new", "old"]
SIDES: tuple[str, ...] = ("new", "old")

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class DiffLine:
    """One line of a file's diff: what it is, its text (without the newline) and its line number
    in the old and in the new file (0 where it has none: headers, added lines on the old side,
    removed lines on the new side)."""

    kind: Kind
    text: str
    old: int = 0
    new: int = 0

    def number(self, side: str) -> int:
        """Its line number on `side` (`new` or `old`), 0 when it has none there."""
        return self.new if side == "new" else self.old

    @property
    def anchor(self) -> tuple[str, int] | None:
        """(side, line) a comment on this line is attached to: the new file's line where it has
        one, a removed line's old number; None for headers and notes."""
        if self.kind in ("added", "context"):
            return ("new", self.new)
        if self.kind == "removed":
            return ("old", self.old)
        return None


def lines_of(part: str) -> list[DiffLine]:
    """One file's part of a diff, line by line, numbered from its hunk headers."""
    out: list[DiffLine] = []
    old = new = 0
    old_left = new_left = 0
    for text in part.splitlines():
        match = HUNK_HEADER.match(text)
        if match:
            old, new = int(match.group(1)), int(match.group(3))
            old_left = int(match.group(2)) if match.group(2) is not None else 1
            new_left = int(match.group(4)) if match.group(4) is not None else 1
            out.append(DiffLine("hunk", text))
            continue
        in_hunk = old_left > 0 or new_left > 0
        if in_hunk and text.startswith("+") and new_left > 0:
            out.append(DiffLine("added", text, 0, new))
            new, new_left = new + 1, new_left - 1
        elif in_hunk and text.startswith("-") and old_left > 0:
            out.append(DiffLine("removed", text, old, 0))
            old, old_left = old + 1, old_left - 1
        elif in_hunk and (text.startswith(" ") or text == "") and old_left > 0 and new_left > 0:
            out.append(DiffLine("context", text, old, new))
            old, new, old_left, new_left = old + 1, new + 1, old_left - 1, new_left - 1
        elif text.startswith("\\"):
            out.append(DiffLine("note", text))
        else:
            out.append(DiffLine("header", text))
    return out


def anchor_problem(lines: list[DiffLine], path: str, line: int, side: str) -> str:
    """Why line `line` of `path`'s `side` cannot carry a comment ('' when it can): it must be a
    line the diff shows on that side — an added or context line of the new file, a removed or
    context line of the old one."""
    kinds = ("added", "context") if side == "new" else ("removed", "context")
    if any(d.kind in kinds and d.number(side) == line for d in lines):
        return ""
    shown = [d.number(side) for d in lines if d.kind in kinds]
    if not shown:
        return f"the diff of {path} shows no line of the {side} file; comment on the file instead (no line)"
    return (
        f"line {line} of the {side} {path} is not in the diff (it shows {_ranges(shown)}); "
        "comment on a line the diff shows, or on the file (no line)"
    )


def _ranges(numbers: list[int]) -> str:
    """`3-7, 12` for the sorted runs of `numbers` (at most five runs named)."""
    runs: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    named = [f"{a}-{b}" if a != b else str(a) for a, b in runs[:5]]
    more = f" and {len(runs) - 5} more ranges" if len(runs) > 5 else ""
    return "lines " + ", ".join(named) + more
