"""Does a patch apply to the base? `git apply --check`, with a refusal an agent can act on.

`check_applies` runs git's own dry run on the base (nothing is written). When git refuses, the
message names the file, shows the hunk that failed (its header and the lines it expects to find)
and the file's actual lines at that place, numbered, with the first line that differs — so a
patch written from a stale read is fixed in one step instead of learnt about later from a test
run that could not apply it.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio

from roundtable.errors import PatchDoesNotApply
from roundtable.services.repository import git
from roundtable.services.repository.patches import ParsedPatch
from roundtable.services.repository.repo import split_lines

_FAILED_AT = re.compile(r"error: patch failed: (.+):(\d+)$", re.M)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
SHOWN = 12  # lines of a hunk and of the file shown at most


def _shown(text: str, limit: int = 160) -> str:
    out = repr(text)[1:-1]
    return out if len(out) <= limit else out[: limit - 3] + "..."


def _hunk_at(patch: str, path: str, old_start: int) -> tuple[str, list[str], bool] | None:
    """The header and old-side lines of the hunk of `path` whose old side starts at `old_start`,
    and whether it has fewer context lines after its change than before (git then anchors it to
    the end of the file)."""
    lines = patch.split("\n")
    current = ""
    for index, line in enumerate(lines):
        if line.startswith("--- ") and lines[index + 1 : index + 2] != [] and lines[index + 1].startswith("+++ "):
            current = line[4:].split("\t", 1)[0]
            current = current[2:] if current.startswith("a/") else current
        elif line.startswith("+++ ") and current == "/dev/null":
            current = line[4:].split("\t", 1)[0][2:]
        m = _HUNK.match(line)
        if m is None or current != path or int(m.group(1)) != old_start:
            continue
        old_left = int(m.group(2) if m.group(2) is not None else 1)
        expected: list[str] = []
        tags: list[str] = []
        for body in lines[index + 1 :]:
            if old_left <= 0 or body.startswith(("@@", "diff --git ")):
                break
            tags.append(body[:1] or " ")
            if body[:1] in (" ", "-", ""):
                expected.append(body[1:])
                old_left -= 1
        text = "".join(tags)
        leading, trailing = len(text) - len(text.lstrip(" ")), len(text) - len(text.rstrip(" "))
        return line, expected, trailing < leading
    return None


def _explain(root: Path, patch: str, path: str, old_start: int) -> str:
    """The failing hunk beside the file's real lines (blocking: reads the file)."""
    found = _hunk_at(patch, path, old_start)
    if found is None:
        return ""
    header, expected, anchored = found
    try:
        actual = split_lines((root / path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return f"\nThe hunk {header} expects:\n" + "\n".join(f"\t{line}" for line in expected[:SHOWN])
    first = max(old_start, 1)
    have = actual[first - 1 : first - 1 + max(len(expected), 1)]
    differs = ""
    for offset, want in enumerate(expected):
        got = have[offset] if offset < len(have) else None
        if got != want:
            where = first + offset
            differs = f"\nFirst difference at line {where}: the hunk expects '{_shown(want)}', " + (
                f"the file has '{_shown(got)}'." if got is not None else "the file ends before it."
            )
            break
    if not differs and anchored:
        differs = (
            "\nThe lines match, but the hunk has fewer context lines after its change than before it, so "
            "git applies it only at the end of the file; add the lines that follow as context."
        )
    expect_text = "\n".join(f"{first + i}\t{line}" for i, line in enumerate(expected[:SHOWN]))
    have_text = "\n".join(f"{first + i}\t{line}" for i, line in enumerate(have[:SHOWN])) or "\t(no such lines)"
    more = f"\n\t… ({len(expected) - SHOWN} more)" if len(expected) > SHOWN else ""
    return (
        f"{differs}\nThe hunk {header} expects (context and removed lines):\n{expect_text}{more}\n"
        f"The file has ({len(actual)} lines):\n{have_text}\n"
        "Re-read the file (repo_read_file with start_line/end_line) and rebuild the patch, or send edits "
        "instead; from a workspace, workspace_sync brings it onto the current tree."
    )


async def check_applies(root: Path, parsed: ParsedPatch) -> None:
    """Refuse (`PatchDoesNotApply`) a patch that `git apply --check` would not apply to `root`."""
    result = await git.dry_run(root, parsed.text.encode("utf-8"))
    if result.ok:
        return
    detail = result.output
    lines = [line.removeprefix("error: ") for line in detail.splitlines() if line.strip()]
    summary = "; ".join(lines[:3]) or "git gave no reason"
    m = _FAILED_AT.search(detail)
    explanation = ""
    if m is not None:
        path, start = m.group(1), int(m.group(2))
        explanation = await anyio.to_thread.run_sync(_explain, root, parsed.text, path, start)
    raise PatchDoesNotApply(f"patch does not apply to the current tree: {summary}{explanation}")
