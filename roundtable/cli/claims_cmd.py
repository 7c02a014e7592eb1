"""`roundtable claims list|claim|release|revoke|expire|reconcile`: the operator's view of claims.

Everything a tool exists for goes through `Runtime.call` as the operator (validated and audited
like any call): `list` is `resource.claim_status`, `claim` is `resource.claim`, `release` is
`resource.release`. `revoke`, `expire` and `reconcile` are operator transitions with no tool;
each changes its claims in one write transaction and appends one `claim.*` event per claim
(`reconcile` hashes the claimed resources first, outside any transaction).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.calls import call, given, with_runtime
from roundtable.cli.common import handle_errors, json_option, print_json, root_option, run_async

if TYPE_CHECKING:
    from roundtable.runtime import Runtime


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def claims() -> None:
    """List, claim, release, revoke, expire or reconcile claims."""


@claims.command("list")
@root_option
@json_option
@click.option("--agent", default="", help="Only this agent's claims.")
@click.option("--resource", default="", help="Only claims on this resource id.")
@click.option("--status", default="", help="Only this status (expiry is evaluated now).")
@handle_errors
def list_claims(root: Path, as_json: bool, agent: str, resource: str, status: str) -> None:
    """Print claims: <id> <agent_id> <claim_type> <status> <resource_id>."""
    args = {"agent_id": agent, "resource_id": resource, "status": status}

    async def every_page(rt: Runtime) -> dict[str, Any]:
        claims: list[dict[str, Any]] = []
        cursor = ""
        while True:
            page = await rt.call("resource.claim_status", {**args, **({"cursor": cursor} if cursor else {})})
            claims.extend(page["claims"])
            cursor = page["next_cursor"]
            if not page["has_more"]:
                return {"claims": claims}

    result = run_async(with_runtime(root, every_page))
    if as_json:
        print_json(result)
        return
    if not result["claims"]:
        asked = [f"{k.removesuffix('_id')} {v}" for k, v in args.items() if v]
        click.echo("no claims" + (f" matching {', '.join(asked)}" if asked else ""))
        return
    for c in result["claims"]:
        click.echo(f"{c['id']} {c['agent_id']} {c['claim_type']} {c['status']} {c['resource_id']}")


@claims.command("claim")
@root_option
@json_option
@click.option("--agent", required=True, help="The claimant.")
@click.option("--task", required=True, help="The task the claim is for.")
@click.option("--resource-type", default="file", show_default=True, help="file, directory or symbol.")
@click.option("--resource-id", default="", help="e.g. file:src/app.py (derived from --path when omitted).")
@click.option("--path", default="", help="Repository-relative path.")
@click.option("--symbol", default="", help="Symbol name (symbol resources).")
@click.option("--claim-type", default="write", show_default=True, help="read, write, review or exclusive.")
@click.option("--ttl", default=900, show_default=True, type=int, help="Lifetime in seconds.")
@click.option("--run", default="", help="Run to record the event in.")
@click.option("--id", "claim_id", default="", help="Explicit claim id.")
@click.option("--base-hash", default="", help="Content hash the claim is based on (default: computed).")
@click.option("--resume-policy", default="hold", show_default=True)
@click.option("--rationale", default="")
@handle_errors
def claim(
    root: Path,
    as_json: bool,
    agent: str,
    task: str,
    resource_type: str,
    resource_id: str,
    path: str,
    symbol: str,
    claim_type: str,
    ttl: int,
    run: str,
    claim_id: str,
    base_hash: str,
    resume_policy: str,
    rationale: str,
) -> None:
    """Claim a resource for an agent: prints <id> <claim_type> <status> <resource_id>."""
    args: dict[str, Any] = {
        "agent_id": agent,
        "task_id": task,
        "resource_type": resource_type,
        "claim_type": claim_type,
        "ttl_seconds": ttl,
        "resume_policy": resume_policy,
    }
    optional = {
        "resource_id": resource_id,
        "path": path,
        "symbol": symbol,
        "run_id": run,
        "claim_id": claim_id,
        "base_hash": base_hash,
        "rationale": rationale,
    }
    result = call(root, "resource.claim", {**args, **given(optional)})
    if as_json:
        print_json(result)
        return
    c = result["claim"]
    click.echo(f"{c['id']} {c['claim_type']} {c['status']} {c['resource_id']}")


@claims.command("release")
@root_option
@click.argument("claim_id", required=False)
@click.option("--claim", "claim_opt", default="", help="The claim (instead of the argument).")
@click.option("--reason", default="", help="Why (recorded in the event).")
@click.option("--actor", default="", help="Actor recorded in the event (default operator).")
@click.option("--run", default="", help="Run to record the event in.")
@handle_errors
def release(root: Path, claim_id: str | None, claim_opt: str, reason: str, actor: str, run: str) -> None:
    """Release any claim as the operator: prints <id> <status>."""
    target = _target(claim_id, claim_opt)
    args = {"claim_id": target, "reason": reason, "actor_id": actor or "operator", "run_id": run}
    result = call(root, "resource.release", given(args))
    click.echo(f"{result['claim']['id']} {result['claim']['status']}")


@claims.command("revoke")
@root_option
@click.argument("claim_id", required=False)
@click.option("--claim", "claim_opt", default="", help="The claim (instead of the argument).")
@click.option("--reason", default="", help="Why (recorded in the event).")
@click.option("--actor", default="operator", show_default=True, help="Actor recorded in the event.")
@click.option("--run", default="", help="Run to record the event in.")
@handle_errors
def revoke(root: Path, claim_id: str | None, claim_opt: str, reason: str, actor: str, run: str) -> None:
    """Revoke a claim as the operator: prints <id> <status>."""
    args = {"claim_id": _target(claim_id, claim_opt), "reason": reason, "actor_id": actor, "run_id": run}
    result = call(root, "claim.revoke", given(args))
    click.echo(f"{result['claim']['id']} {result['claim']['status']}")


@claims.command("expire")
@root_option
@click.option("--run", default="", help="Run to record the events in.")
@click.option("--at-unix", default=None, type=int, help="Evaluate expiry at this Unix time (default now).")
@handle_errors
def expire(root: Path, run: str, at_unix: int | None) -> None:
    """Expire every active claim whose TTL has elapsed, one claim.expired event each: prints
    <id> <status> per claim."""
    args: dict[str, Any] = {"run_id": run} if run else {}
    if at_unix is not None:
        try:
            args["at_unix_ns"] = int(datetime.fromtimestamp(at_unix, tz=UTC).timestamp()) * 1_000_000_000
        except (OverflowError, OSError, ValueError):
            raise click.BadParameter(f"{at_unix} is not a usable Unix time", param_hint="--at-unix") from None
    result = call(root, "claim.expire_due", args)
    for c in result["claims"]:
        click.echo(f"{c['id']} {c['status']}")


@claims.command("reconcile")
@root_option
@json_option
@click.option("--run", default="", help="Run to record the events in.")
@click.option("--agent", default="", help="Only this agent's claims.")
@click.option("--actor", default="system", show_default=True, help="Actor recorded in the events.")
@handle_errors
def reconcile(root: Path, as_json: bool, run: str, agent: str, actor: str) -> None:
    """Suspend every active write/exclusive claim whose resource changed since it was claimed
    (its base hash no longer matches), one claim.suspended event each: prints
    <id> <agent_id> <status> per claim."""
    args = {"run_id": run, "agent_id": agent, "actor_id": actor or "system"}
    result = call(root, "claim.reconcile", given(args))
    if as_json:
        print_json({"claims": result["claims"]})
        return
    for c in result["claims"]:
        click.echo(f"{c['id']} {c['agent_id']} {c['status']}")


def _target(claim_id: str | None, claim_opt: str) -> str:
    target = (claim_id or claim_opt or "").strip()
    if not target:
        raise click.UsageError("give the claim id (argument or --claim)")
    return target
