"""`roundtable sessions …` and `roundtable resume`: agent session records and the supervisor.

`list` and `show` read the database (`show --follow` prints the transcript as it streams); `register`, `heartbeat` and `end` (for harnesses that
report their own sessions) are the operator operations `session.register|heartbeat|end` run
through `Runtime.call`. `launch` and `revoke` are requests to the running owner's supervisor,
sent over the legacy socket as the operator operations `session.launch` / `session.revoke`, and
`send` (`session.send`: a message to a session, which resumes an ended one); only
an owner hosting a supervisor answers them. `resume` suspends the agent's stale claims, then prints the resume
briefing of an agent or session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from roundtable.cli.calls import call, given, opened, owner_call, read, with_runtime
from roundtable.cli.common import fail, handle_errors, json_option, print_json, root_option, run_async
from roundtable.domain import SessionStatus

if TYPE_CHECKING:
    from roundtable.runtime import Runtime
    from roundtable.store.db import Reader


def _operation(root: Path, tool: str, args: dict[str, Any]) -> Any:
    """Run one operator operation on the project (`cli.calls`; no owner needed)."""
    from roundtable.store.records import AgentSession

    return AgentSession.from_row(call(root, tool, given(args))["session"])


def _line(*parts: str) -> str:
    return " ".join(parts)


@click.group(invoke_without_command=True)
@root_option
@json_option
@click.pass_context
@handle_errors
def sessions(ctx: click.Context, root: Path, as_json: bool) -> None:
    """List, show, launch or revoke agent sessions (no subcommand: list)."""
    if ctx.invoked_subcommand is None:
        _list(root, as_json)


def _list(root: Path, as_json: bool) -> None:
    from roundtable.services.sessions import records as svc

    rows = read(root, svc.list_sessions)
    if as_json:
        print_json({"sessions": [s.to_dict() for s in rows]})
        return
    if not rows:
        click.echo("no sessions (the owner launches them for a run's agents; `roundtable sessions launch` starts one)")
        return
    for s in rows:
        click.echo(_line(s.id, s.agent_id, s.status, s.adapter, s.external_resume_command).rstrip())


@sessions.command("list")
@root_option
@json_option
@handle_errors
def list_cmd(root: Path, as_json: bool) -> None:
    """One line per session: id, agent, status, adapter, resume command."""
    _list(root, as_json)


@sessions.command("show")
@click.argument("session_id")
@click.option("--transcript", is_flag=True, help="Print what the agent did, in words, instead of the record.")
@click.option(
    "--follow", "-f", is_flag=True, help="Print the transcript and follow it as it streams, until the session ends."
)
@root_option
@json_option
@handle_errors
def show(session_id: str, transcript: bool, follow: bool, root: Path, as_json: bool) -> None:
    """A session's record, its capability state (never the token) and its lifecycle notes; with
    --transcript or --follow, its transcript (messages, tool calls with their arguments and a short
    result, errors) read from the harness's own stream in the session's log."""
    if transcript or follow:
        code = run_async(_print_transcript(root, session_id, follow=follow, as_json=as_json))
        raise SystemExit(code)
    from roundtable.services.sessions import capabilities, usage
    from roundtable.services.sessions import records as svc

    async def query(r: Reader) -> dict[str, Any]:
        session = await svc.get(r, session_id)
        caps = await capabilities.for_session(r, session_id)
        events = await svc.session_events(r, session_id)
        spent = await usage.of_session(r, session_id)
        hidden = {"token_sha256"}
        return {
            "session": session.to_dict(),
            "capabilities": [{k: v for k, v in c.to_dict().items() if k not in hidden} for c in caps],
            "events": events,
            "usage": spent,
            "pending": svc.pending_messages(session),
        }

    data = read(root, query)
    if as_json:
        print_json(data)
        return
    s = data["session"]
    for key in (
        "id",
        "agent_id",
        "run_id",
        "adapter",
        "status",
        "started_at",
        "last_seen_at",
        "ended_at",
        "mcp_socket",
    ):
        click.echo(f"{key}: {s[key]}")
    click.echo(f"metadata: {s['metadata_json']}")
    for waiting in data["pending"]:
        click.echo(
            f"pending message from {waiting['sent_by']} ({waiting['at']}), delivered when its turn ends:"
            f" {json.dumps(waiting['message'], ensure_ascii=False)}"
        )
    spent = data["usage"]
    if spent is None:
        click.echo("usage: none reported (the harness printed no usage)")
    else:
        cost = f"${spent['cost_usd']:.4f} ({spent['cost_source']})" if spent["cost_source"] else "cost unknown"
        work_for = f"  for {spent['proposal_id']} r{spent['revision']}" if spent["proposal_id"] else ""
        click.echo(
            f"usage: {spent['input_tokens']:,} input ({spent['cached_input_tokens']:,} cached)"
            f" + {spent['output_tokens']:,} output tokens · {cost} · model {spent['model'] or '-'}{work_for}"
        )
    for cap in data["capabilities"]:
        state = (
            f"revoked {cap['revoked_at']} ({cap['revoked_reason']})"
            if cap["revoked_at"]
            else f"expires {cap['expires_at']}"
        )
        click.echo(
            f"capability {cap['id']} role={cap['role']} task={cap['task_id']} proposal={cap['proposal_id'] or '-'} {state}"
        )
    for event in data["events"]:
        click.echo(f"- {event['created_at']} {event['event_type']} {json.dumps(event['payload'])}")


async def _print_transcript(root: Path, session_id: str, *, follow: bool, as_json: bool) -> int:
    """Print the session's transcript from its log; with `follow`, keep printing what it appends
    until the session has ended and everything it wrote is shown. 0, or 1 when there is no such
    session."""
    import asyncio

    from roundtable.services.sessions import records as svc
    from roundtable.services.sessions.transcript import ATTENTION_WORDS, Attention, Transcript
    from roundtable.services.views.models import exit_text
    from roundtable.store.records import AgentSession
    from roundtable.tui.session_log import log_changes, log_path, read_chunk

    async with opened(root) as runtime:
        db = runtime.db
        async with db.read() as r:
            found = await r.fetchall("SELECT 1 FROM agent_sessions WHERE id = ?", (session_id,))
        if not found:
            fail(f"no session {session_id}")
        path = log_path(root, session_id)
        if path is None:
            fail(f"{session_id!r} cannot name a session log")
        transcript = Transcript()
        offset = 0
        changes = log_changes(path) if follow else None
        draining = changes is None  # the session has ended: what it wrote is read once more
        while True:
            chunk = await asyncio.to_thread(read_chunk, path, offset)
            offset = chunk.next_offset
            for line in chunk.lines:
                for entry in transcript.feed(line):
                    click.echo(json.dumps(entry.to_dict(), ensure_ascii=False) if as_json else entry.line())
            if chunk.lines:
                continue  # more may be there already (one read takes at most 1 MiB)
            if draining:
                break
            async with db.read() as r:
                session: AgentSession = await svc.get(r, session_id)
            if session.ended_at:
                draining = True
                continue
            assert changes is not None
            await anext(changes)
        if changes is not None:
            await changes.aclose()
        async with db.read() as r:
            session = await svc.get(r, session_id)
    state = transcript.attention
    if session.ended_at and state == Attention.WORKING:
        state = Attention.FINISHED if session.status == SessionStatus.ENDED else Attention.FAILED
    words = ATTENTION_WORDS[state] + (f": {transcript.detail}" if transcript.detail else "")
    waiting = svc.pending_messages(session)
    if waiting:
        words += f" · {len(waiting)} message(s) pending, delivered when its turn ends"
    ending = f"ended ({exit_text(session) or session.status})" if session.ended_at else session.status
    if as_json:
        print_json(
            {
                "session_id": session_id,
                "status": session.status,
                "attention": str(state),
                "detail": transcript.detail,
                "pending": waiting,
            }
        )
    else:
        click.echo(f"— {session_id} {ending} · {words}")
    return 0


@sessions.command("register")
@click.option("--id", "session_id", default="", help="Session id (your choice).")
@click.option("--agent", default="", help="Agent id.")
@click.option("--run", "run_id", default="", help="Run id.")
@click.option("--adapter", default="", help="Adapter name.")
@click.option("--cwd", default="", help="Working directory.")
@click.option("--provider", default="")
@click.option("--model", default="")
@click.option("--external-session-id", default="")
@click.option("--resume-command", default="")
@click.option("--mcp-socket", default="")
@click.option("--status", default="active", show_default=True)
@root_option
@handle_errors
def register(
    session_id: str,
    agent: str,
    run_id: str,
    adapter: str,
    cwd: str,
    provider: str,
    model: str,
    external_session_id: str,
    resume_command: str,
    mcp_socket: str,
    status: str,
    root: Path,
) -> None:
    """Record (or replace) a session an agent harness reports itself."""
    if not all(v.strip() for v in (session_id, agent, run_id, adapter, cwd)):
        fail("id, agent, run, adapter, and cwd are required")
    args = {
        "session_id": session_id,
        "agent_id": agent,
        "run_id": run_id,
        "adapter": adapter,
        "working_directory": cwd,
        "provider": provider,
        "model": model,
        "external_session_id": external_session_id,
        "resume_command": resume_command,
        "mcp_socket": mcp_socket,
        "status": status,
    }
    s = _operation(root, "session.register", args)
    click.echo(_line(s.id, s.agent_id, s.status, s.external_resume_command).rstrip())


@sessions.command("heartbeat")
@click.option("--session", "session_id", default="")
@click.option("--status", default="")
@click.option("--external-session-id", default="")
@root_option
@handle_errors
def heartbeat(session_id: str, status: str, external_session_id: str, root: Path) -> None:
    """Mark a session as seen now."""
    if not session_id.strip():
        fail("session is required")
    args = {"session_id": session_id, "status": status, "external_session_id": external_session_id}
    s = _operation(root, "session.heartbeat", args)
    click.echo(_line(s.id, s.status, s.last_seen_at))


@sessions.command("end")
@click.option("--session", "session_id", default="")
@click.option("--status", default="ended", show_default=True)
@root_option
@handle_errors
def end(session_id: str, status: str, root: Path) -> None:
    """Mark a session ended."""
    if not session_id.strip():
        fail("session is required")
    s = _operation(root, "session.end", {"session_id": session_id, "status": status})
    click.echo(_line(s.id, s.status, s.ended_at))


@sessions.command("launch")
@click.option("--agent", required=True, help="Agent id (implementer-N, reviewer-N, tester-1, security-1).")
@click.option("--task", "task_id", required=True, help="Task the session works on.")
@click.option("--proposal", "proposal_id", default="", help="Proposal (reviewer, tester, security).")
@click.option("--run", "run_id", default="", help="Run (default: the latest active run).")
@click.option(
    "--adapter", default="", help="Adapter (default: the agent's configured adapter; `scripted` = demo agent)."
)
@click.option("--model", default="")
@root_option
@json_option
@handle_errors
def launch(
    agent: str, task_id: str, proposal_id: str, run_id: str, adapter: str, model: str, root: Path, as_json: bool
) -> None:
    """Ask the running owner's supervisor to start an agent session."""
    args = {"agent_id": agent, "task_id": task_id}
    for key, value in (("proposal_id", proposal_id), ("run_id", run_id), ("adapter", adapter), ("model", model)):
        if value:
            args[key] = value
    result = owner_call(root, "session.launch", args)
    if as_json:
        print_json(result)
        return
    s = result.get("session", {})
    click.echo(
        _line(str(s.get("id", "")), str(s.get("agent_id", "")), str(s.get("status", "")), str(s.get("adapter", "")))
    )


@sessions.command("revoke")
@click.option("--session", "session_id", required=True)
@click.option("--reason", default="operator", show_default=True)
@root_option
@handle_errors
def revoke(session_id: str, reason: str, root: Path) -> None:
    """Revoke a session's capability now (the running owner stops its process shortly after)."""
    result = owner_call(root, "session.revoke", {"session_id": session_id, "reason": reason})
    click.echo(_line(session_id, "revoked" if result.get("revoked") else "already-revoked"))


@sessions.command("send")
@click.argument("session_id")
@click.argument("message")
@root_option
@json_option
@handle_errors
def send(session_id: str, message: str, root: Path, as_json: bool) -> None:
    """Send a session a message, as the operator: a running Claude Code session reads it now,
    within its turn; a running Codex session gets it when its turn ends (it is resumed with it
    then); an ended one is resumed with it now (its harness's own session, in the same workspace)."""
    if not message.strip():
        fail("the message is empty")
    result = owner_call(root, "session.send", {"session_id": session_id, "message": message})
    if as_json:
        print_json(result)
        return
    click.echo(str(result.get("note") or session_id))
    follow = str(result.get("resumed_in") or session_id)
    click.echo(f"follow it: roundtable sessions show {follow} --follow")


@click.command()
@click.option("--session", "session_id", default="", help="Session id.")
@click.option("--agent", default="", help="Agent id (its current session is chosen).")
@root_option
@handle_errors
def resume(session_id: str, agent: str, root: Path) -> None:
    """Print the resume briefing for an agent or a session."""
    from roundtable.services.sessions import briefing
    from roundtable.services.sessions import records as svc

    if not session_id and not agent:
        fail("resume requires --session or --agent")

    async def work(runtime: Runtime) -> str:
        async with runtime.db.read() as r:
            if session_id:
                session = await svc.get(r, session_id)
            else:
                found = await svc.for_agent(r, agent)
                if found is None:
                    fail(f"no agent session found for {agent}")
                session = found
        # Stale claims are suspended before the briefing is built, so it lists what still holds.
        stale = (
            await runtime.call(
                "claim.reconcile",
                given({"agent_id": session.agent_id, "actor_id": session.agent_id, "run_id": session.run_id}),
            )
        )["claims"]
        async with runtime.db.read() as r:
            text: str = (await briefing.build(r, session)).markdown()
        if stale:
            text += "\nStale claims suspended on resume:\n"
            text += "".join(f"- {c['resource_id']} ({c['id']})\n" for c in stale)
        return text

    click.echo(run_async(with_runtime(root, work)), nl=False)
