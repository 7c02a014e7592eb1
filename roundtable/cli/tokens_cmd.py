"""`roundtable tokens create|list|revoke`: bearer tokens for the HTTP endpoint (authenticated by
default). A token is printed once; only its sha256 is stored. An agent token acts as that agent
(only while it is registered and enabled); an operator token carries operator authority."""

from __future__ import annotations

from pathlib import Path

import click

from roundtable.cli.calls import call
from roundtable.cli.common import handle_errors, json_option, print_json, root_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def tokens() -> None:
    """Bearer tokens for the HTTP endpoint (only hashes are stored; revocation is immediate)."""


@tokens.command("create")
@root_option
@click.option("--agent", "agent_id", default="", help="Issue an agent token for this agent id.")
@click.option("--operator", is_flag=True, help="Issue an operator token.")
@handle_errors
def create(root: Path, agent_id: str, operator: bool) -> None:
    """Create a token and print it once (keep it in the client's secret store; harnesses on this
    machine need none: `roundtable connect --agent ID` lets the bridge read a credential file)."""
    if operator == bool(agent_id):
        raise click.UsageError("give exactly one of --agent ID or --operator")
    principal = "operator" if operator else "agent"
    args = {"principal": principal, "agent_id": agent_id} if agent_id else {"principal": principal}
    result = call(root, "token.create", args)
    token = result["secret"]
    click.echo(f"created {result['token']['id']} for {principal}{' ' + agent_id if agent_id else ''}", err=True)
    if agent_id:
        from roundtable.config import load_config
        from roundtable.services.coordination.agents import configured_agents

        if agent_id not in {a.id for a in configured_agents(load_config(root))}:
            click.echo(
                f"note: {agent_id} is not a configured agent; the token is refused until an agent with that id "
                "is registered and enabled",
                err=True,
            )
    click.echo(token)


@tokens.command("list")
@root_option
@json_option
@handle_errors
def list_(root: Path, as_json: bool) -> None:
    """List tokens (ids, principals, state; never the token)."""
    rows = call(root, "token.list")["tokens"]
    if as_json:
        print_json(rows)
        return
    if not rows:
        click.echo("no tokens (local harnesses need none: `roundtable connect --agent ID`)")
        return
    for row in rows:
        shown = f"revoked {row['revoked_at']}" if row["revoked_at"] else "active"
        click.echo(f"{row['id']} {row['principal']} {row['agent_id'] or '-'} {shown}")


@tokens.command("revoke")
@root_option
@click.argument("token_id")
@handle_errors
def revoke(root: Path, token_id: str) -> None:
    """Revoke a token by id; the next request with it gets 401."""
    result = call(root, "token.revoke", {"token_id": token_id})
    click.echo(f"revoked {result['token']['id']}")
