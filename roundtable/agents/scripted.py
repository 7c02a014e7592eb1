"""Scripted agents: small MCP clients (official SDK) that play one role through their session.

Launched by the supervisor (adapter `scripted`) with `ROUNDTABLE_MCP_SOCKET` and
`ROUNDTABLE_MCP_TOKEN` in the environment, an agent connects to its per-session endpoint —
Streamable HTTP over the Unix socket, through `httpx2`'s `uds=` transport — and follows the
agent protocol: request a turn, wait for `agent.turn_scheduled` with the `table.watch` long
poll, start the turn, claim, read, do its role's work, complete the turn. It never names its
own identity: the endpoint fills `agent_id`, `run_id`, `task_id` and the bound proposal from
the capability.

Roles (from `ROUNDTABLE_AGENT_ID`):
- implementer: claims the file named by the task's recipe (a fenced block opened with
  `` ```append <path>`` in the task body; else the first readable file), reads it, appends the
  recipe text and proposes the diff, then asks for review;
- reviewer: claims and reads every file the proposal touches, votes `approve`;
- security: runs the security scan on the bound proposal, votes `approve` unless it blocks;
- tester: claims and reads the touched files, submits reported evidence, votes `approve`.

`--probe NAME` (repeatable) first tries a forbidden operation and prints whether it was refused
(`proposal.create`, `claim-write`, `read:<path>`, `agent-mismatch`); `--until-revoked` keeps
calling after the work until the capability is revoked. Every step prints one JSON line on
stdout, which the supervisor captures (redacted) into the session log.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import re
import sys
import time
from contextlib import AsyncExitStack
from typing import Any

TURN_TIMEOUT = 60.0
_RECIPE = re.compile(r"```append[ \t]+(\S+)[ \t]*\n(.*?)```", re.S)


class CallFailed(Exception):
    """A tool call answered with `isError`."""


def emit(**fields: Any) -> None:
    print(json.dumps(fields, ensure_ascii=False, default=str), flush=True)


class Session:
    """One connected MCP client session plus the tool-name mapping the server advertised."""

    def __init__(self, session: Any, names: dict[str, str]) -> None:
        self.session = session
        self.names = names

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        name = self.names.get(tool, tool)
        result = await self.session.call_tool(name, {k: v for k, v in args.items() if v is not None})
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            raise CallFailed(text)
        if isinstance(result.structured_content, dict):
            return result.structured_content
        return json.loads(text) if text else {}

    async def attempt(self, tool: str, **args: Any) -> tuple[bool, str]:
        """(refused, text) of one call."""
        try:
            payload = await self.call(tool, **args)
        except CallFailed as exc:
            return True, str(exc)
        return False, json.dumps(payload)[:200]


async def connect(stack: AsyncExitStack, socket_path: str, token: str, *, direct: bool = False) -> Session:
    """Through `roundtable mcp stdio --socket` (default), or straight to the socket (`direct`)."""
    from mcp import Client

    if direct:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(
            transport=httpx2.AsyncHTTPTransport(uds=socket_path),
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30.0, read=None),
        )
        await stack.enter_async_context(http)
        transport: Any = streamable_http_client("http://localhost/mcp", http_client=http)
    else:
        from mcp.client.stdio import StdioServerParameters

        from roundtable.services.adapters import bridge_argv

        argv = bridge_argv(socket_path, os.getcwd())
        # The bridge reads the token from its environment (never from argv).
        transport = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    client = await stack.enter_async_context(Client(transport, mode="legacy"))
    listed = await client.session.list_tools()
    names = {_dotted(tool.name): tool.name for tool in listed.tools}
    return Session(client.session, names)


def _dotted(name: str) -> str:
    if "." in name:
        return name
    if name.startswith("test_evidence_"):
        return "test.evidence." + name[len("test_evidence_") :]
    return name.replace("_", ".", 1)


# --- the turn protocol ---------------------------------------------------------------------


async def take_turn(s: Session, reason: str, timeout: float) -> int:
    """Request a turn and wait until it is scheduled; returns the request event id (0 = none)."""
    try:
        req = await s.call("agent.turn_request", reason_md=reason)
    except CallFailed as exc:
        emit(step="turn_unavailable", error=str(exc))
        return 0
    request_id = int(req.get("request_event_id", 0))
    emit(step="turn_requested", request_event_id=request_id, queue_position=req.get("queue_position"))
    cursor = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = await s.call("table.watch", after_event_id=cursor, limit=200, wait_ms=2000)
        for event in page.get("events", []):
            payload = event.get("payload") or {}
            if not payload and event.get("payload_json"):
                payload = json.loads(event["payload_json"])
            if event.get("type") == "agent.turn_scheduled" and int(payload.get("request_event_id", -1)) == request_id:
                await s.call("agent.turn_start", request_event_id=request_id)
                emit(step="turn_started", request_event_id=request_id)
                return request_id
        cursor = int(page.get("next_after_event_id", cursor))
    emit(step="turn_not_scheduled", request_event_id=request_id)
    return 0


async def end_turn(s: Session, request_id: int) -> None:
    if request_id:
        try:
            await s.call("agent.turn_complete", request_event_id=request_id)
            emit(step="turn_completed", request_event_id=request_id)
        except CallFailed as exc:
            emit(step="turn_complete_failed", error=str(exc))


# --- roles -----------------------------------------------------------------------------------


def _record(payload: dict[str, Any], key: str) -> dict[str, Any]:
    value = payload.get(key, payload)
    return value if isinstance(value, dict) else {}


def _readable(task: dict[str, Any]) -> list[str]:
    value = task.get("readable_paths")
    if value is None:
        try:
            value = json.loads(task.get("readable_paths_json") or "[]")
        except ValueError:
            value = []
    return [str(v) for v in value] if isinstance(value, list) else []


def make_patch(path: str, before: str, after: str) -> str:
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(diff)


async def claim_file(s: Session, path: str, mode: str) -> None:
    await s.call(
        "resource.claim",
        resource_type="file",
        resource_id=f"file:{path}",
        path=path,
        claim_type=mode,
        rationale=f"{mode} for my session",
    )
    emit(step="claimed", path=path, mode=mode)


async def implementer(s: Session, task_id: str) -> None:
    task = _record(await s.call("task.get"), "task")
    body = str(task.get("body_md", ""))
    match = _RECIPE.search(body)
    if match:
        path, addition = match.group(1), match.group(2)
    else:
        readable = _readable(task)
        if not readable:
            raise CallFailed("task has no readable_paths to work on")
        path, addition = readable[0], f"# touched by {os.environ.get('ROUNDTABLE_AGENT_ID', 'agent')}\n"
    await claim_file(s, path, "write")
    current = str((await s.call("repo.read_file", path=path)).get("content", ""))
    emit(step="read", path=path, bytes=len(current))
    updated = current + ("" if current.endswith("\n") or not current else "\n") + addition
    proposal = _record(
        await s.call(
            "proposal.create",
            title=f"{task.get('title', task_id)}",
            summary_md=f"Scripted change to `{path}` for task {task_id}.",
            affected_resources=[f"file:{path}"],
            risk="normal",
            patch=make_patch(path, current, updated),
        ),
        "proposal",
    )
    emit(step="proposed", proposal_id=proposal.get("id"))
    try:
        await s.call("proposal.request_review", proposal_id=proposal.get("id"))
        emit(step="review_requested", proposal_id=proposal.get("id"))
    except CallFailed as exc:
        emit(step="review_request_failed", error=str(exc))


async def _touched_files(s: Session, proposal_id: str) -> list[str]:
    got = await s.call("proposal.get", proposal_id=proposal_id)
    files: list[str] = []
    for key in ("resources", "affected_resources", "touched_files"):
        for item in got.get(key, []) or []:
            rid = item.get("id", "") if isinstance(item, dict) else str(item)
            if rid.startswith("file:"):
                files.append(rid[len("file:") :])
    return sorted(set(files))


async def read_proposal(s: Session, proposal_id: str, mode: str) -> None:
    for path in await _touched_files(s, proposal_id):
        await claim_file(s, path, mode)
        content = (await s.call("repo.read_file", path=path)).get("content", "")
        emit(step="read", path=path, bytes=len(str(content)))


async def reviewer(s: Session, proposal_id: str) -> None:
    await read_proposal(s, proposal_id, "review")
    vote = await s.call("vote.cast", vote="approve", reason_md="Scripted review: the change is small and clear.")
    emit(step="voted", vote=_record(vote, "vote").get("vote"))


async def security(s: Session, proposal_id: str) -> None:
    review = await s.call("security.review")
    record = _record(review, "review") if "review" in review else _record(review, "security_review")
    status = record.get("status", "")
    emit(step="security_reviewed", status=status)
    verdict = "reject" if status in ("veto", "needs_changes", "blocked") else "approve"
    vote = await s.call("vote.cast", vote=verdict, reason_md=f"Security scan status: {status or 'done'}.")
    emit(step="voted", vote=_record(vote, "vote").get("vote"))


async def tester(s: Session, proposal_id: str) -> None:
    await read_proposal(s, proposal_id, "read")
    run = await s.call(
        "test.evidence.submit",
        command="python -m pytest -q",
        outcome="passed",
        summary_md="Scripted tester: read the change; reporting the expected outcome.",
    )
    emit(step="evidence", status=_record(run, "test_run").get("status"))
    vote = await s.call("vote.cast", vote="approve", reason_md="Evidence submitted.")
    emit(step="voted", vote=_record(vote, "vote").get("vote"))


ROLES = {"implementer": implementer, "reviewer": reviewer, "security": security, "tester": tester}


async def probe(s: Session, name: str, readable: list[str]) -> None:
    if name == "proposal.create":
        refused, text = await s.attempt(
            "proposal.create", title="x", summary_md="x", affected_resources=[], risk="normal", patch=""
        )
    elif name == "claim-write":
        path = readable[0] if readable else "README.md"
        refused, text = await s.attempt(
            "resource.claim", resource_type="file", resource_id=f"file:{path}", path=path, claim_type="write"
        )
    elif name.startswith("read:"):
        refused, text = await s.attempt("repo.read_file", path=name[len("read:") :])
    elif name == "agent-mismatch":
        refused, text = await s.attempt("resource.claim_status", agent_id="implementer-99")
    else:
        refused, text = await s.attempt(name)
    emit(probe=name, refused=refused, text=text)


async def until_revoked(s: Session, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    emit(step="waiting_for_revocation")
    while time.monotonic() < deadline:
        refused, text = await s.attempt("table.get_state")
        if refused:
            emit(probe="after-revocation", refused=True, text=text)
            return
        await asyncio.sleep(0.1)
    emit(probe="after-revocation", refused=False, text="still allowed")


async def main_async(args: argparse.Namespace) -> int:
    socket_path = os.environ.get("ROUNDTABLE_MCP_SOCKET", "")
    token = os.environ.get("ROUNDTABLE_MCP_TOKEN", "")
    agent_id = os.environ.get("ROUNDTABLE_AGENT_ID", "")
    task_id = os.environ.get("ROUNDTABLE_TASK_ID", "")
    proposal_id = os.environ.get("ROUNDTABLE_PROPOSAL_ID", "")
    role = agent_id.rsplit("-", 1)[0] if "-" in agent_id else ""
    if not socket_path or not token or role not in ROLES:
        print("scripted agent: needs ROUNDTABLE_MCP_SOCKET, ROUNDTABLE_MCP_TOKEN and a role agent id", file=sys.stderr)
        return 2
    async with AsyncExitStack() as stack:
        s = await connect(stack, socket_path, token, direct=args.direct)
        emit(step="connected", agent_id=agent_id, tools=len(s.names))
        readable: list[str] = []
        try:
            readable = _readable(_record(await s.call("task.get"), "task"))
        except CallFailed:
            pass
        for name in args.probe:
            await probe(s, name, readable)
        request_id = await take_turn(s, f"{role} work on {proposal_id or task_id}", args.turn_timeout)
        try:
            if role == "implementer":
                await implementer(s, task_id)
            else:
                await ROLES[role](s, proposal_id)  # type: ignore[operator]
        except CallFailed as exc:
            emit(step="failed", error=str(exc))
            await end_turn(s, request_id)
            return 1
        await end_turn(s, request_id)
        emit(step="done")
        if args.until_revoked:
            await until_revoked(s, args.revoke_timeout)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="roundtable-scripted-agent", description=__doc__.split("\n")[0])
    parser.add_argument("--probe", action="append", default=[], help="try a forbidden operation first")
    parser.add_argument("--until-revoked", action="store_true", help="after the work, call until refused")
    parser.add_argument("--direct", action="store_true", help="talk to the socket without the stdio bridge")
    parser.add_argument("--turn-timeout", type=float, default=TURN_TIMEOUT)
    parser.add_argument("--revoke-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
