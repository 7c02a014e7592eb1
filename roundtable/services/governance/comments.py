"""Line comments on a proposal's revision: the review loop's notes, kept with the proposal.

A comment is attached to one revision (its number and patch) and to a line the revision's diff
shows (`services.repository.diff_lines`: the new file's line, or a removed line's old number with side
`old`), to a whole file of the diff (no line), or to the whole proposal (no path). The operator
may always comment; an agent only on someone else's proposal (the author answers with a new
revision, not with comments) and only as a registered, enabled agent. Comments are accepted
while the proposal is open, up to `MAX_PER_REVISION` per author and revision, each at most
`MAX_BODY` characters. Nothing else changes: a later revision leaves the comments on the one they
were made on, and the comments on the current revision are the open ones (what the author's next
briefing and `proposal.get` show).

Reading and parsing the revision's patch happen before the write transaction (`anchors`), so the
write lock is never held for them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.domain import ReviewEvent, is_open
from roundtable.errors import PermissionDenied, ToolError, ValidationError
from roundtable.services.args import Args, Id, Positive, RepoPath, Text
from roundtable.services.repository.diff_lines import DiffLine, anchor_problem, lines_of
from roundtable.services.repository.patches import Allowances, ParsedPatch, parse_patch, read_patch
from roundtable.services.run_scope import NO_HINT, RunHint, resolve
from roundtable.store.db import Reader, Tx
from roundtable.store.records import PatchRevision, Proposal, ProposalComment

MAX_BODY = 4000  # characters of one comment
MAX_PER_REVISION = 200  # comments one author may leave on one revision
BRIEF_CHARS = 300  # a comment's body in a summary line
OPERATOR_AUTHOR = "operator"


class CommentArgs(Args):
    # `proposal.comment`: where (`check_place` checks it against the revision's diff) and what.
    proposal_id: Id
    revision: Positive | None = None
    path: RepoPath = ""
    line: Positive = Field(0, description="In the new file (side old: the old).")
    side: Literal["new", "old"] = "new"
    body_md: Annotated[Text, MaxLen(MAX_BODY)]


@dataclass(frozen=True)
class Anchors:
    """One revision's commentable places: its touched files and each file's diff lines."""

    proposal_id: str
    number: int
    sha256: str
    touched: tuple[str, ...]
    lines: dict[str, list[DiffLine]]


async def revision_row(q: Reader | Tx, proposal_id: str, number: int) -> PatchRevision:
    """Revision `number` of the proposal (0: the current one)."""
    p = await q.get(Proposal, proposal_id)
    wanted = number or p.revision_number
    row = await q.one(
        PatchRevision,
        "SELECT * FROM patch_revisions WHERE proposal_id = ? AND number = ?",
        (proposal_id, wanted),
    )
    if row is None:
        raise ValidationError(
            f"proposal {proposal_id} has revisions 1 to {p.revision_number}; there is no revision {wanted}"
        )
    return row


# A stored revision passed every check when it was made: it is read again whatever the policy
# allows today, to find its lines (never to judge it).
_READ_ANY = Allowances(symlinks=True, submodules=True, mode_changes=True)


def read_revision(text: str) -> ParsedPatch:
    """A stored revision's patch as the patch parser reads it (`parse_patch`: git's own reading of
    names, renames and quoting), whatever the policy allowed when it was proposed."""
    return parse_patch(text, None, _READ_ANY)


def revision_lines(text: str) -> dict[str, list[DiffLine]]:
    """Each file of a stored revision's patch (`read_revision`), with its hunks' lines numbered
    (`lines_of`)."""
    parsed = read_revision(text)
    lines = parsed.lines()
    return {c.new or c.old: lines_of("\n".join(lines[c.body[0] : c.body[1]])) for c in parsed.changes}


async def anchors(root: Path, revision: PatchRevision) -> Anchors:
    """The revision's patch read and split into numbered lines, on a worker thread."""

    def load() -> dict[str, list[DiffLine]]:
        return revision_lines(read_patch(root, revision.sha256))

    try:
        touched = tuple(str(f) for f in json.loads(revision.touched_files_json or "[]"))
    except ValueError:
        touched = ()
    return Anchors(revision.proposal_id, revision.number, revision.sha256, touched, await asyncio.to_thread(load))


def check_place(found: Anchors, path: str, line: int, side: str) -> None:
    """Refuse a place the revision's diff does not show (nothing is recorded)."""
    if not path:
        if line:
            raise ValidationError("a comment on a line needs the path of its file")
        return
    if path not in found.touched and path not in found.lines:
        shown = ", ".join(found.touched[:10]) or "none"
        raise ValidationError(f"{path} is not in revision {found.number}'s diff (its files: {shown})")
    if not line:
        return
    problem = anchor_problem(found.lines.get(path, []), path, line, side)
    if problem:
        raise ValidationError(f"revision {found.number}: {problem}")


async def _check_commenter(tx: Tx, p: Proposal, author: str, is_operator: bool) -> None:
    if is_operator:
        return
    if author == p.agent_id:
        raise PermissionDenied(
            f"{author} is the author of proposal {p.id}: answer comments with a new revision "
            "(proposal_attach_patch or workspace_propose), not with comments"
        )
    row = await tx.fetchone("SELECT is_enabled FROM agents WHERE id = ?", (author,))
    if row is None:
        raise PermissionDenied(f"{author} is not a registered agent; only registered agents may comment")
    if not row["is_enabled"]:
        raise PermissionDenied(f"agent {author} is disabled and cannot comment")


async def add(
    tx: Tx,
    found: Anchors,
    args: CommentArgs,
    *,
    author: str,
    is_operator: bool,
    session_id: str = "",
    runs: RunHint = NO_HINT,
) -> ProposalComment:
    """Record one comment at a place `check_place` accepted in `found` (prepared before the
    transaction). Refused, with nothing recorded, when the proposal is decided, when the author
    comments on their own proposal, or when the current revision changed under a comment meant
    for it (`args.revision` not named)."""
    path, line, side, body = args.path.strip(), args.line, args.side, args.body_md.strip()
    revision_given = args.revision is not None
    comment_id = clock.new_id("C")
    p = await tx.get(Proposal, found.proposal_id)
    if not is_open(p.status):
        raise ToolError(f"proposal {p.id} is {p.status}; comments are accepted only while pending or in_review")
    if not revision_given and p.revision_number != found.number:
        raise ToolError(
            f"proposal {p.id} was revised to revision {p.revision_number} meanwhile; comment on it again "
            f"(or name revision {found.number})"
        )
    await _check_commenter(tx, p, author, is_operator)
    check_place(found, path, line, side)
    count = int(
        await tx.scalar(
            "SELECT count(*) FROM proposal_comments WHERE proposal_id = ? AND revision = ? AND author = ?",
            (p.id, found.number, author),
        )
        or 0
    )
    if count >= MAX_PER_REVISION:
        raise ToolError(f"{author} has left {count} comments on revision {found.number}, the most one author may")
    if await tx.scalar("SELECT 1 FROM proposal_comments WHERE id = ?", (comment_id,)):
        raise ToolError(f"comment {comment_id} already exists")
    now = clock.now()
    await tx.insert(
        "proposal_comments",
        {
            "id": comment_id,
            "proposal_id": p.id,
            "revision": found.number,
            "revision_sha": found.sha256,
            "path": path,
            "line": line or None,
            "side": side,
            "body_md": body,
            "author": author,
            "session_id": session_id or None,
            "created_at": now,
        },
    )
    await tx.append_event(
        await resolve(tx, runs, owner=p.run_id),
        ReviewEvent.COMMENTED,
        {
            "proposal_id": p.id,
            "comment_id": comment_id,
            "revision": found.sha256,
            "revision_number": found.number,
            "path": path,
            "line": line,
            "side": side,
            "where": place(path, line, side),
        },
        actor_id=author,
        task_id=p.task_id,
    )
    row = await tx.one(ProposalComment, "SELECT * FROM proposal_comments WHERE id = ?", (comment_id,))
    assert row is not None
    return row


def place(path: str, line: int, side: str = "new") -> str:
    """`calc/ops.py:9`, `calc/ops.py:-4` (a removed line), `calc/ops.py` or `(whole proposal)`."""
    if not path:
        return "(whole proposal)"
    if not line:
        return path
    return f"{path}:{'-' if side == 'old' else ''}{line}"


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def summary(c: ProposalComment) -> dict[str, Any]:
    """A comment as an agent reads it in a result: where, who, what (body cut to `BRIEF_CHARS`)."""
    out: dict[str, Any] = {"id": c.id, "revision": c.revision, "at": place(c.path, c.line, c.side)}
    out["author"] = c.author
    out["body_md"] = _clip(c.body_md, BRIEF_CHARS)
    return out


def brief_line(c: ProposalComment) -> str:
    """`calc/ops.py:9 — body` (one line, the body cut), as briefings list them."""
    return f"{place(c.path, c.line, c.side)} — {_clip(c.body_md, BRIEF_CHARS)} ({c.author})"


_ORDER = "ORDER BY CASE WHEN path = '' THEN 0 ELSE 1 END, path, coalesce(line, 0), created_at, id"


async def for_revision(q: Reader | Tx, proposal_id: str, number: int) -> list[ProposalComment]:
    return await q.all(
        ProposalComment,
        f"SELECT * FROM proposal_comments WHERE proposal_id = ? AND revision = ? {_ORDER}",
        (proposal_id, number),
    )


async def every(q: Reader | Tx, proposal_id: str) -> list[ProposalComment]:
    """Every comment on the proposal, revision by revision."""
    return await q.all(
        ProposalComment,
        f"SELECT * FROM proposal_comments WHERE proposal_id = ? ORDER BY revision, {_ORDER[9:]}",
        (proposal_id,),
    )
