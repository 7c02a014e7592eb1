"""`roundtable approvals [list] | approve ID | deny ID --note TEXT` and `roundtable apply PROPOSAL`:
the operator's decisions without the console (CI, scripts).

`approve`/`deny` record the decision on a requested approval (`human.request_approval` with a
status, as the console's `a`/`x` do); `apply` applies an approved proposal through `patch.apply`,
which re-checks every gate and is refused, changing nothing, when one does not pass. Each is an
operator operation through `Runtime.call` (with or without a running owner).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.calls import call, read
from roundtable.cli.common import handle_errors, json_option, print_json, root_option

if TYPE_CHECKING:
    from roundtable.store.db import Reader

OPERATOR_NAME = "operator"


async def _requested(r: Reader) -> list[dict[str, Any]]:
    from roundtable.store.records import HumanApproval

    rows = await r.all(
        HumanApproval, "SELECT * FROM human_approvals WHERE status = 'requested' ORDER BY created_at, id"
    )
    return [row.to_dict() for row in rows]


@click.group(invoke_without_command=True)
@root_option
@json_option
@click.pass_context
@handle_errors
def approvals(ctx: click.Context, root: Path, as_json: bool) -> None:
    """Approvals waiting for you; approve or deny one (no subcommand: list)."""
    if ctx.invoked_subcommand is None:
        _list(root, as_json)


def _list(root: Path, as_json: bool) -> None:
    rows = read(root, _requested)
    if as_json:
        print_json({"approvals": rows})
        return
    if not rows:
        click.echo("no approval is waiting for you")
    for row in rows:
        click.echo(f"{row['id']}  proposal {row['proposal_id'] or '-'}  {row['subject']}")


@approvals.command("list")
@root_option
@json_option
@handle_errors
def list_cmd(root: Path, as_json: bool) -> None:
    """Approvals waiting for a decision, oldest first."""
    _list(root, as_json)


def _decide(root: Path, approval_id: str, status: str, note: str) -> dict[str, Any]:
    from roundtable.errors import ValidationError

    pending = {row["id"]: row for row in read(root, _requested)}
    row = pending.get(approval_id)
    if row is None:
        raise ValidationError(f"approval {approval_id} is not waiting for a decision (roundtable approvals lists them)")
    args: dict[str, Any] = {
        "approval_id": approval_id,
        "subject": row["subject"],
        "reason_md": row["reason_md"] or row["subject"],
        "status": status,
        "decided_by": OPERATOR_NAME,
    }
    if row["proposal_id"]:
        args["proposal_id"] = row["proposal_id"]
    if note:
        args["decision_md"] = note
    return call(root, "human.request_approval", args)["approval"]  # type: ignore[no-any-return]


@approvals.command("approve")
@root_option
@click.argument("approval_id")
@click.option("--note", default="", help="A note recorded with the decision.")
@handle_errors
def approve(root: Path, approval_id: str, note: str) -> None:
    """Approve a requested approval (then `roundtable apply PROPOSAL` applies its proposal)."""
    row = _decide(root, approval_id, "approved", note)
    click.echo(f"{row['id']} approved" + (f" (proposal {row['proposal_id']})" if row.get("proposal_id") else ""))


@approvals.command("deny")
@root_option
@click.argument("approval_id")
@click.option("--note", required=True, help="Why (the author sees it).")
@handle_errors
def deny(root: Path, approval_id: str, note: str) -> None:
    """Deny a requested approval, with the reason."""
    row = _decide(root, approval_id, "denied", note)
    click.echo(f"{row['id']} denied")


@click.command()
@root_option
@json_option
@click.argument("proposal_id")
@click.option("--run", "run_id", default="", help="The run to record the transaction in (when several are active).")
@click.option(
    "--mode",
    type=click.Choice(["working-tree", "commit", "branch", "pull-request"]),
    default=None,
    help="How it lands (default: landing.mode in .roundtable/config.yaml).",
)
@handle_errors
def apply(root: Path, as_json: bool, proposal_id: str, run_id: str, mode: str | None) -> None:
    """Apply an approved proposal (every gate is checked again; a refusal changes nothing)."""
    args = {"proposal_id": proposal_id, "applied_by": OPERATOR_NAME, **({"run_id": run_id} if run_id else {})}
    if mode:
        args["mode"] = mode
    result = call(root, "patch.apply", args)
    if as_json:
        print_json(result)
        return
    tx = result.get("transaction") or {}
    landed = (result.get("landing") or {}).get("summary", "")
    click.echo(f"{proposal_id} applied as {tx.get('id', '?')}" + (f": {landed}" if landed else ""))
