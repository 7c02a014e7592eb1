"""`roundtable transactions`: list applied patches and roll one back (operator only).

`list` reads one snapshot; `rollback` goes through `Runtime.call("patch.rollback")` as the
operator, so it is checked and audited like any tool call: it refuses unless every touched file
still has the hash the apply left, then restores the pre-images and records `patch.rolled_back`.

A transaction that recovery or a failed apply/rollback could not settle carries the reason as
`needs_attention` (the files were left as they were found); `list --needs-attention` shows only
those, and the text listing prints the reason under the row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from roundtable.cli.calls import call, read
from roundtable.cli.common import handle_errors, json_option, print_json, root_option


def _list(root: Path, status: str) -> list[dict[str, Any]]:
    from roundtable.services.applying.transactions import list_transactions

    rows = read(root, lambda r: list_transactions(r, status))
    out = []
    for row in rows:
        data = row.to_dict()
        meta = json.loads(row.metadata_json or "{}")
        data["files"] = meta.get("patch_files", [])
        data["needs_attention"] = str(meta.get("needs_attention", ""))
        data["error"] = str(meta.get("error", ""))
        out.append(data)
    return out


def _rollback(root: Path, transaction_id: str, reason: str, reset: bool = False) -> dict[str, Any]:
    args: dict[str, Any] = {"transaction_id": transaction_id, "reason_md": reason}
    if reset:
        args["reset"] = True
    return call(root, "patch.rollback", args)


@click.group()
def transactions() -> None:
    """List or roll back applied patches."""


@transactions.command("list")
@root_option
@json_option
@click.option("--status", default="", help="Only transactions in this status (applied, rolled_back, ...).")
@click.option("--needs-attention", "attention", is_flag=True, help="Only transactions that need the operator.")
@handle_errors
def list_cmd(root: Path, as_json: bool, status: str, attention: bool) -> None:
    """List patch transactions, oldest first."""
    rows = _list(root, status)
    if attention:
        rows = [row for row in rows if row["needs_attention"]]
    if as_json:
        print_json({"transactions": rows})
        return
    if not rows:
        click.echo("no transactions")
        return
    for row in rows:
        files = ", ".join(row["files"][:3]) + (f" (+{len(row['files']) - 3})" if len(row["files"]) > 3 else "")
        when = row["applied_at"] or row["created_at"]
        click.echo(
            f"{row['id']} [{row['status']}] proposal {row['proposal_id']} {when} by {row['applied_by']}: {files}"
        )
        if row["needs_attention"]:
            click.echo(f"    needs attention: {row['needs_attention']}")


@transactions.command("rollback")
@click.argument("transaction_id")
@root_option
@json_option
@click.option("--reason", default="operator rollback", show_default=True, help="Why (recorded in the event).")
@click.option(
    "--reset",
    is_flag=True,
    help="A committed landing with nothing built on it: move the branch back instead of adding a revert commit.",
)
@handle_errors
def rollback_cmd(transaction_id: str, root: Path, as_json: bool, reason: str, reset: bool) -> None:
    """Revert an applied transaction if its files are unchanged since the apply (a committed
    landing gets a revert commit)."""
    if reset:
        click.confirm(f"Move the branch back past {transaction_id}'s commit (history is rewritten)?", abort=True)
    out = _rollback(root, transaction_id, reason, reset)
    if as_json:
        print_json(out)
        return
    tx = out.get("transaction") or {}
    click.echo(f"rolled back {tx.get('id', transaction_id)}; proposal {tx.get('proposal_id', '')} is rolled_back")
