"""`roundtable proposals comment PROPOSAL BODY [--path P [--line N [--side old]]] [--revision N]`
and `roundtable proposals comments PROPOSAL [--all]`: the operator's line comments without the
console.

`comment` is `proposal.comment` through `Runtime.call` as the operator (with or without a running
owner): refused, changing nothing, when the place is not in the revision's diff. `comments` lists
the comments on the current revision (`--all`: on every revision), one `path:line — body` line each.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.calls import call, read
from roundtable.cli.common import handle_errors, json_option, print_json, root_option

if TYPE_CHECKING:
    from roundtable.store.db import Reader


def _comments(root: Path, proposal_id: str, every: bool) -> list[dict[str, Any]]:
    from roundtable.services.governance import comments
    from roundtable.store.records import Proposal

    async def query(r: Reader) -> list[dict[str, Any]]:
        p = await r.get(Proposal, proposal_id)
        found = await (comments.every(r, p.id) if every else comments.for_revision(r, p.id, p.revision_number))
        return [c.to_dict() for c in found]

    return read(root, query)


@click.group()
def proposals() -> None:
    """Comment on a proposal's lines, or list the comments."""


@proposals.command("comment")
@root_option
@json_option
@click.argument("proposal_id")
@click.argument("body")
@click.option("--path", default="", help="A file of the revision's diff (none: on the whole proposal).")
@click.option("--line", type=int, default=0, help="A line the diff shows (the new file's; none: on the file).")
@click.option("--side", type=click.Choice(["new", "old"]), default="new", help="old: LINE is a removed line's.")
@click.option("--revision", type=int, default=0, help="Revision number (default: the current one).")
@handle_errors
def comment(
    root: Path, as_json: bool, proposal_id: str, body: str, path: str, line: int, side: str, revision: int
) -> None:
    """Attach a comment to a line, a file or the whole proposal (its author sees it in its next briefing)."""
    args: dict[str, Any] = {"proposal_id": proposal_id, "body_md": body}
    if path:
        args["path"] = path
    if line:
        args["line"] = line
    if side != "new":
        args["side"] = side
    if revision:
        args["revision"] = revision
    result = call(root, "proposal.comment", args)
    if as_json:
        print_json(result)
        return
    made = result["comment"]
    click.echo(f"{made['id']} on {proposal_id} r{made['revision']} {made['at']}")


@proposals.command("comments")
@root_option
@json_option
@click.argument("proposal_id")
@click.option("--all", "every", is_flag=True, help="Every revision's comments, not only the current one's.")
@handle_errors
def comments_cmd(root: Path, as_json: bool, proposal_id: str, every: bool) -> None:
    """The comments on the proposal's current revision (--all: every revision), by place."""
    from roundtable.services.governance.comments import place

    rows = _comments(root, proposal_id, every)
    if as_json:
        print_json({"comments": rows})
        return
    if not rows:
        click.echo("no comments")
    for row in rows:
        where = place(row["path"], row["line"], row["side"])
        click.echo(f"r{row['revision']} {where} — {row['body_md']} ({row['author']})")
