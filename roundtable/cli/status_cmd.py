"""`roundtable status [--json]`: a quick look without the console, in one screen.

What needs the operator (the console's `!` list: approvals waiting, transactions needing
attention, blocked tasks with why, failed sessions), what the gateway refused lately (connections
to hosts not allowed, a refused model credential, requests over a budget), the sessions running now with what each has
spent, each run's state and spend, where open proposals land (branch, pull request link, forge
checks with SHA and conclusion), and today's spend against the day budget. Read from the
database (no owner needed); whether an owner holds the project is read from its lock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from roundtable.cli.calls import opened
from roundtable.cli.common import handle_errors, json_option, print_json, root_option, run_async
from roundtable.domain import EventType

MAX_ROWS = 8  # per section, so the whole fits a terminal
GATEWAY_REFUSALS: tuple[str, ...] = (
    EventType.GATEWAY_CONNECTION_REFUSED,
    EventType.GATEWAY_CREDENTIAL_REFUSED,
    EventType.GATEWAY_BUDGET_REFUSED,
)


def _refusal_line(event: dict[str, Any]) -> str:
    """One line of what the gateway refused a session, newest first."""
    who = f"{event.get('session_id', '?')} ({event.get('agent_id', '?')})"
    if event["type"] == EventType.GATEWAY_CONNECTION_REFUSED:
        what = f"connection to {event.get('host')}:{event.get('port')} refused: {event.get('reason')}"
    elif event["type"] == EventType.GATEWAY_CREDENTIAL_REFUSED:
        what = f"the model API refused the credential ({event.get('status')}, {event.get('message')})"
    else:
        what = f"model request refused: {event.get('reason')}"
    return f"{event['at'][:19]}  {who}  {what}"


async def gather(root: Path) -> dict[str, Any]:
    """Everything `status` shows, as JSON-ready data."""
    from roundtable.services.sessions import budgets, usage
    from roundtable.services.views.models import attention, session_attention
    from roundtable.services.views.overview import load_overview
    from roundtable.store.records import Run

    async with opened(root) as runtime:
        config = runtime.config
        async with runtime.db.read() as r:
            overview = await load_overview(r, "", config, limit=200)
            needs = attention(overview)
            sessions = []
            for row in overview.sessions:  # a session with no end yet is running
                if not row.live:
                    continue
                spent = await usage.of_session(r, row.session.id)
                state, detail = session_attention(row.session)
                sessions.append(
                    {
                        "id": row.session.id,
                        "agent_id": row.session.agent_id,
                        "role": row.role,
                        "status": row.session.status,
                        "run_id": row.session.run_id,
                        "task_id": row.task_id,
                        "proposal_id": row.proposal_id,
                        "started_at": row.session.started_at,
                        "attention": {"state": state, "detail": detail},
                        "harness_session_id": row.session.external_session_id,
                        "usage": spent or usage.Totals().to_dict(),
                    }
                )
            runs = await r.all(
                Run,
                "SELECT * FROM runs WHERE status != 'archived' ORDER BY started_at DESC, id DESC LIMIT ?",
                (MAX_ROWS,),
            )
            spend = await usage.breakdown(r, "run_id")
            rows = []
            for run in runs:
                counts = {
                    str(k): int(v)
                    for k, v in await r.fetchall(
                        "SELECT status, count(*) FROM tasks WHERE run_id = ? GROUP BY status", (run.id,)
                    )
                }
                open_proposals = int(
                    await r.scalar(
                        "SELECT count(*) FROM proposals WHERE run_id = ? AND status IN ('pending', 'in_review')",
                        (run.id,),
                    )
                    or 0
                )
                rows.append(
                    {
                        "id": run.id,
                        "status": run.status,
                        "goal": run.goal or "",
                        "tasks": counts,
                        "open_proposals": open_proposals,
                        "usage": spend.get(run.id, usage.Totals()).to_dict(),
                    }
                )
            day = budgets.today()
            today = await usage.totals(r, day=day)
            # Where open proposals land beyond the working tree: branch, pull request, checks.
            landings = [
                {**dict(row), "checks": json.loads(row["checks_json"] or "[]")}
                for row in await r.fetchall(
                    "SELECT l.* FROM landings l JOIN proposals p ON p.id = l.proposal_id"
                    " WHERE p.status IN ('pending', 'in_review') ORDER BY l.updated_at DESC LIMIT ?",
                    (MAX_ROWS,),
                )
            ]
            refused = [
                {"type": str(row[0]), "at": str(row[1]), **json.loads(row[2] or "{}")}
                for row in await r.fetchall(
                    "SELECT type, created_at, payload_json FROM events WHERE type IN (?, ?, ?)"
                    " ORDER BY id DESC LIMIT ?",
                    (*GATEWAY_REFUSALS, MAX_ROWS),
                )
            ]
    from roundtable.cli.connect_cmd import _owner_pid

    limit = config.budgets.day
    return {
        "owner": {"running": bool(_owner_pid(root)), "pid": _owner_pid(root)},
        "needs_you": [{"kind": n.kind, "id": n.item_id, "text": n.text} for n in needs],
        "sessions": sessions,
        "runs": rows,
        "landings": landings,
        "gateway_refused": refused,
        "today": {
            "day": day,
            **today.to_dict(),
            "budget": {"tokens": limit.tokens, "usd": limit.usd} if limit.limited else None,
        },
    }


def _section(title: str, lines: list[str]) -> None:
    click.echo(f"{title} ({len(lines)})" if lines else f"{title}: none")
    for line in lines[:MAX_ROWS]:
        click.echo(f"  {line}")
    if len(lines) > MAX_ROWS:
        click.echo(f"  … and {len(lines) - MAX_ROWS} more")


@click.command()
@root_option
@json_option
@handle_errors
def status(root: Path, as_json: bool) -> None:
    """What needs you, the running sessions and their spend, the runs — in one screen."""
    from roundtable.services.sessions.budgets import describe_limit
    from roundtable.services.sessions.usage import describe

    data = run_async(gather(root))
    if as_json:
        print_json(data)
        return
    owner = data["owner"]
    click.echo(f"owner: running (pid {owner['pid']})" if owner["running"] else "owner: not running (roundtable start)")
    _section("NEEDS YOU", [f"! {n['text']}  [{n['id']}]" for n in data["needs_you"]])
    _section(
        "RUNNING SESSIONS",
        [
            f"{s['id']}  {s['agent_id']}  {s['status']}"
            + (f" ({s['attention']['state'].replace('_', ' ')})" if s["attention"]["state"] else "")
            + f"  task {s['task_id'] or '-'}  {describe(s['usage'])}"
            for s in data["sessions"]
        ],
    )
    runs = []
    for run in data["runs"]:
        tasks = ", ".join(f"{n} {k}" for k, n in sorted(run["tasks"].items())) or "no tasks"
        runs.append(
            f"{run['id']}  [{run['status']}]  {tasks} · {run['open_proposals']} open proposal(s) · "
            f"{describe(run['usage'])}  goal: {run['goal'] or '-'}"
        )
    _section("RUNS", runs)
    if data["gateway_refused"]:
        _section("REFUSED BY THE GATEWAY", [_refusal_line(e) for e in data["gateway_refused"]])
    if data["landings"]:
        from roundtable.cli.landing_cmd import landing_lines

        _section("LANDINGS", [line for row in data["landings"] for line in landing_lines(row)])
    today = data["today"]
    budget = today["budget"]
    line = f"TODAY ({today['day']} UTC): {describe(today)}"
    if budget:
        from roundtable.config import LimitConfig

        line += f" of the day budget of {describe_limit(LimitConfig(**budget))}"
    click.echo(line)
