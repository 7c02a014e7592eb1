"""`roundtable land PROPOSAL [--mode branch|pull-request]`: bring a proposal's landing branch (and
pull request) to its current revision now, read the forge's checks of that commit, and print
where it stands — what a running owner does on its own every `landing.poll_interval`.
`landing_lines` is also how `roundtable status` shows landings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from roundtable.cli.calls import call, given
from roundtable.cli.common import handle_errors, json_option, print_json, root_option


def landing_lines(row: dict[str, Any]) -> list[str]:
    """One landing as lines for people: branch and commit, pull request, each check."""
    branch = str(row.get("ref", "")).removeprefix("refs/heads/") or "-"
    commit = str(row.get("commit_sha", ""))[:12] or "-"
    lines = [f"{row['proposal_id']}  [{row['mode']}]  branch {branch} @ {commit}"]
    if row.get("pr_url"):
        lines.append(f"  pull request #{row['pr_number']} ({row.get('pr_state') or 'open'}): {row['pr_url']}")
    for check in json.loads(row.get("checks_json") or "[]"):
        lines.append(f"  {check['conclusion']:<9} {check['name']}  {str(check['sha'])[:12]}  {check['url']}")
    return lines


@click.command()
@root_option
@json_option
@click.argument("proposal_id")
@click.option("--mode", type=click.Choice(["branch", "pull-request"]), default=None, help="Default: landing.mode.")
@handle_errors
def land(root: Path, as_json: bool, proposal_id: str, mode: str | None) -> None:
    """Build the proposal's branch commit for its current revision, push it, open or update its
    pull request and read the forge's checks (the owner does this on its own)."""
    out = call(root, "landing.sync", given({"proposal_id": proposal_id, "mode": mode}))
    if as_json:
        print_json(out)
        return
    if out.get("waiting"):
        click.echo(out["waiting"])
    for line in landing_lines(out["landing"] or {"proposal_id": proposal_id, "mode": mode or "?"}):
        click.echo(line)
