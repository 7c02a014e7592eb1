"""`roundtable watch`: print the run's projections and events; `--follow` long-polls for more.

Opens its own runtime (no listener, no Chair) and reads through the `table.watch` tool, so it
sees exactly what an agent sees. Text output, one line per item:

    WATCH run=<run_id or (all)> active_agents=<n> open_tasks=<n> active_claims=<n> suspended_claims=<n>
    BLOCKED <task_id> <title>
    PROPOSAL <id> <status> <title>
    APPROVAL <id> <status> <subject>
    TX <id> <status> <proposal_id>
    EVENT <event_id> <type> <actor_id> <task_id>

With `--follow` the first page is printed whole; after that the call is made in cursor mode
with `wait_ms`, so new events are printed as soon as they are committed (this process) or
within a quarter second (other processes), and no event is ever skipped: the projection lines
are printed again only when they change. SIGINT/SIGTERM end `--follow` with exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path
from typing import Any

import click

from roundtable.cli.calls import opened
from roundtable.cli.common import handle_errors, json_option, print_json, root_option
from roundtable.config import parse_duration

MAX_WAIT_MS = 30_000
# Shown as the header's run when no --run is given; parentheses never occur in a run id.
ALL_RUNS = "(all)"


def projection_lines(page: dict[str, Any]) -> list[str]:
    lines = [
        f"WATCH run={page.get('run_id') or ALL_RUNS} active_agents={page['active_agents']} open_tasks={page['open_tasks']}"
        f" active_claims={page['active_claims']} suspended_claims={page['suspended_claims']}"
    ]
    lines += [f"BLOCKED {t['id']} {t['title']}" for t in page["blocked_tasks"]]
    lines += [f"PROPOSAL {p['id']} {p['status']} {p['title']}" for p in page["pending_proposals"]]
    lines += [f"APPROVAL {a['id']} {a['status']} {a['subject']}" for a in page["required_approvals"]]
    lines += [f"TX {t['id']} {t['status']} {t['proposal_id']}" for t in page["transactions"]]
    return lines


def event_lines(page: dict[str, Any]) -> list[str]:
    return [f"EVENT {e['id']} {e['type']} {e['actor_id']} {e['task_id']}" for e in page["events"]]


async def _watch(
    root: Path, run_id: str, limit: int, after: int | None, follow: bool, as_json: bool, wait: float
) -> None:
    async with opened(root) as runtime:
        if run_id:
            async with runtime.db.read() as reader:
                known = await reader.fetchone("SELECT 1 FROM runs WHERE id = ?", (run_id,))
            if known is None:
                from roundtable.errors import NotFound

                raise NotFound("run", run_id)  # `get run RUN-nope: not found`, as the tools say it
        args: dict[str, Any] = {"run_id": run_id, "limit": limit}
        if after is not None:
            args["after_event_id"] = after
        page = await runtime.call("table.watch", args)
        if as_json:
            if follow:
                click.echo(json.dumps(page, ensure_ascii=False, separators=(",", ":")))
            else:
                print_json(page)
        else:
            shown = projection_lines(page)
            for line in shown + event_lines(page):
                click.echo(line)
        if not follow:
            return
        cursor = int(page["next_after_event_id"])
        more = bool(page["has_more_events"])
        wait_ms = max(1, min(MAX_WAIT_MS, int(wait * 1000)))
        while True:
            args = {"run_id": run_id, "limit": limit, "after_event_id": cursor, "wait_ms": 0 if more else wait_ms}
            page = await runtime.call("table.watch", args)
            cursor = int(page["next_after_event_id"])
            more = bool(page["has_more_events"])
            if as_json:
                if page["events"]:
                    click.echo(json.dumps(page, ensure_ascii=False, separators=(",", ":")))
                continue
            projection = projection_lines(page)
            if projection != shown:
                shown = projection
                for line in projection:
                    click.echo(line)
            for line in event_lines(page):
                click.echo(line)


async def _until_signalled(coro: Any) -> None:
    """Run `coro`; SIGINT/SIGTERM cancel it and end quietly."""
    task = asyncio.ensure_future(coro)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        pass
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return seconds if seconds > 0 else 2.0


@click.command()
@root_option
@click.option("--run", "run_id", default="", help="Only events of this run (default: all runs).")
@click.option("--limit", type=int, default=10, show_default=True, help="Events per page (at most 200).")
@click.option("--after", type=click.IntRange(min=0), default=None, help="Start after this event id (cursor mode).")
@click.option("--follow", is_flag=True, help="Keep printing new events until interrupted.")
@click.option(
    "--interval",
    default="2s",
    show_default=True,
    callback=_duration,
    help="With --follow: longest wait for a new event before polling again (at most 30s).",
)
@json_option
@handle_errors
def watch(root: Path, run_id: str, limit: int, after: int | None, follow: bool, interval: float, as_json: bool) -> None:
    """Print projections and events of the coordination table; --follow for a live feed."""
    asyncio.run(_until_signalled(_watch(root, run_id, limit, after, follow, as_json, interval)))
