"""Scripted agents: small MCP clients (official SDK) that play one role through their session.

Launched by the supervisor (adapter `scripted`) with `ROUNDTABLE_MCP_SOCKET` and
`ROUNDTABLE_MCP_TOKEN` in the environment, an agent connects to its per-session endpoint —
Streamable HTTP over the Unix socket, through `httpx2`'s `uds=` transport — and follows the
agent protocol: subscribe to its run's turn queue (`roundtable://turns/{run_id}`), request a
turn, wait for the queue's `notifications/resources/updated` and read it until the turn in
flight is its own (re-reading every few seconds if no notification comes, so it never hangs; a
server without subscriptions is followed with the `table.watch` long poll), start the turn,
claim, read, do its role's work, complete the turn. It never names its
own identity: the endpoint fills `agent_id`, `run_id`, `task_id` and the bound proposal from
the capability.

Roles (from `ROUNDTABLE_AGENT_ID`):
- implementer: claims the file named by the task's recipe (a fenced block opened with
  `` ```append <path>`` in the task body; else the first readable file), reads it, appends the
  recipe text and proposes the diff, then asks for review;
- reviewer: claims and reads every file the proposal touches, votes `approve` (`--vote revise`:
  asks for a revision, with a reason);
- security: runs the security scan on the bound proposal, votes `approve` unless it blocks;
- tester: claims and reads the touched files, submits reported evidence, votes `approve`;
- architect (the planner, capability role `planner`): reads its planning task (the run's goal),
  turns it into tasks with `task.create` — each fenced `` ```append <path>`` block of the goal
  becomes one task; without one, the built-in plan for the repository (a `mul()` for the demo
  calculator, else a README line) — and marks its planning task completed.

In a workspace (`ROUNDTABLE_WORKSPACE`, its working directory: a git worktree of the project the
supervisor made for it) the implementer edits the file there with plain file I/O, as a harness
would with its own tools, and proposes with `workspace.propose` (which claims the file for it);
without one it claims, reads through `repo.read_file` and proposes a diff it wrote.

Relaunched with a briefing (`ROUNDTABLE_BRIEFING_FILE`: why it was launched, what failed
before), an implementer that already has an open proposal for its task proposes again as a
revision of it instead of proposing anew (in a workspace, its previous revision is in place).
When the proposal's current revision carries line comments (`proposal.get` lists them), the
revision answers each with a note line below the line it is about (`address_comments`: a file
comment's note goes at the file's end), so a comment visibly makes revision 2.

`--usage-stream FILE` prints FILE's lines (a harness's machine-readable output, e.g. a captured
Claude Code `stream-json` or Codex `exec --json` stream) before the first call, so the supervisor
meters the spend it reports as it would a real harness's.

`--probe NAME` (repeatable) first tries a forbidden operation and prints whether it was refused
(`proposal.create`, `claim-write`, `read:<path>`, `agent-mismatch`); `--until-revoked` keeps
calling after the work until the capability is revoked. Every step prints one JSON line on
stdout, which the supervisor captures (redacted) into the session log.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import json
import os
import re
import sys
import time
import warnings
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import yaml

from roundtable.domain import ReviewStatus, Risk, TaskStatus, TestOutcome, TurnEvent, Vote

TURN_TIMEOUT = 60.0
# Without a notification the turn queue is re-read this often (a missed or late push).
NOTIFY_FALLBACK = 3.0
_RECIPE = re.compile(r"```append[ \t]+(\S+)[ \t]*\n(.*?)```", re.S)


class CallFailed(Exception):
    """A tool call answered with `isError`."""


def emit(**fields: Any) -> None:
    print(json.dumps(fields, ensure_ascii=False, default=str), flush=True)


class Session:
    """One connected MCP client session plus the tool-name mapping the server advertised, and
    the resource updates the server pushed."""

    def __init__(self, session: Any, names: dict[str, str], updates: Updates | None = None) -> None:
        self.session = session
        self.names = names
        self.updates = updates or Updates()

    async def call(self, tool: str, **args: Any) -> dict[str, Any]:
        name = self.names.get(tool, tool)
        result = await self.session.call_tool(name, {k: v for k, v in args.items() if v is not None})
        text = "".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            raise CallFailed(text)
        if isinstance(result.structured_content, dict):
            return result.structured_content
        # An agent's result is its compact YAML rendering (a diff may follow in a block of its own).
        first = getattr(result.content[0], "text", "") if result.content else ""
        value = yaml.safe_load(first) if first else {}
        return value if isinstance(value, dict) else {}

    async def attempt(self, tool: str, **args: Any) -> tuple[bool, str]:
        """(refused, text) of one call."""
        try:
            payload = await self.call(tool, **args)
        except CallFailed as exc:
            return True, str(exc)
        return False, json.dumps(payload)[:200]


class Updates:
    """`notifications/resources/updated` received, by URI (the client's message handler)."""

    def __init__(self) -> None:
        self.uris: set[str] = set()
        self.event = asyncio.Event()

    async def handler(self, message: Any) -> None:
        if getattr(message, "method", "") == "notifications/resources/updated":
            self.uris.add(str(message.params.uri))
            self.event.set()

    async def wait(self, uri: str, timeout: float) -> bool:
        """Wait until `uri` was updated (True) or `timeout` passes (False); consumes the update."""
        deadline = time.monotonic() + timeout
        while uri not in self.uris:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.event.clear()
            try:
                await asyncio.wait_for(self.event.wait(), remaining)
            except TimeoutError:
                return False
        self.uris.discard(uri)
        return True


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

        from roundtable.services.sessions.adapters import bridge_argv

        argv = bridge_argv(socket_path, os.getcwd())
        # The bridge reads the token from its environment (never from argv).
        transport = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    updates = Updates()
    client = await stack.enter_async_context(Client(transport, mode="legacy", message_handler=updates.handler))
    listed = await client.session.list_tools()
    names = {_dotted(tool.name): tool.name for tool in listed.tools}
    return Session(client.session, names, updates)


def _dotted(name: str) -> str:
    if "." in name:
        return name
    if name.startswith("test_evidence_"):
        return "test.evidence." + name[len("test_evidence_") :]
    return name.replace("_", ".", 1)


# --- the turn protocol ---------------------------------------------------------------------


async def take_turn(s: Session, reason: str, timeout: float, run_id: str = "") -> int:
    """Request a turn and wait until it is scheduled; returns the request event id (0 = none).

    With a run id the agent subscribes to the run's turn queue first (so no update can slip
    between the request and the wait) and waits for its updates; otherwise, or when the server
    refuses the subscription, it follows the event log with `table.watch`."""
    uri = f"roundtable://turns/{run_id}" if run_id else ""
    subscribed = False
    if uri:
        try:
            await s.session.subscribe_resource(uri)
            subscribed = True
        except Exception as exc:  # an older server, or no stream for notifications
            emit(step="turn_subscribe_failed", error=str(exc)[:200])
    try:
        req = await s.call("agent.turn_request", reason_md=reason)
    except CallFailed as exc:
        emit(step="turn_unavailable", error=str(exc))
        return 0
    request_id = int(req.get("request_event_id", 0))
    emit(step="turn_requested", request_event_id=request_id, queue_position=req.get("queue_position"))
    deadline = time.monotonic() + timeout
    if subscribed:
        found = await _wait_on_queue(s, uri, request_id, deadline)
        with contextlib.suppress(Exception):
            await s.session.unsubscribe_resource(uri)
    else:
        found = await _watch_for_turn(s, request_id, deadline)
    if not found:
        emit(step="turn_not_scheduled", request_event_id=request_id)
        return 0
    await s.call("agent.turn_start", request_event_id=request_id)
    emit(step="turn_started", request_event_id=request_id)
    return request_id


async def _wait_on_queue(s: Session, uri: str, request_id: int, deadline: float) -> bool:
    """Read the turn queue after each update (or every `NOTIFY_FALLBACK` s without one) until
    the turn in flight is `request_id`; False when it expired or the deadline passed."""
    notified = False
    while time.monotonic() < deadline:
        result = await s.session.read_resource(uri)
        queue = json.loads("".join(getattr(c, "text", "") for c in result.contents) or "{}")
        flight = queue.get("in_flight") or {}
        if int(flight.get("request_event_id", -1)) == request_id:
            emit(step="turn_scheduled", request_event_id=request_id, notified=notified)
            return True
        mine = [t for t in queue.get("recent", []) if int(t.get("request_event_id", -1)) == request_id]
        if mine:  # finished (expired) before it was started
            emit(step="turn_finished_unstarted", status=mine[0].get("status"))
            return False
        wait = max(0.0, min(NOTIFY_FALLBACK, deadline - time.monotonic()))
        notified = await s.updates.wait(uri, wait)
    return False


async def _watch_for_turn(s: Session, request_id: int, deadline: float) -> bool:
    cursor = 0
    while time.monotonic() < deadline:
        page = await s.call("table.watch", after_event_id=cursor, limit=200, wait_ms=2000)
        for event in page.get("events", []):
            payload = event.get("payload") or {}
            if not payload and event.get("payload_json"):
                payload = json.loads(event["payload_json"])
            if event.get("type") == TurnEvent.SCHEDULED and int(payload.get("request_event_id", -1)) == request_id:
                return True
        cursor = int(page.get("next_after_event_id", cursor))
    return False


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


def file_in(root: Path, path: str) -> str:
    """`path` itself, or when it is a directory under `root` its first regular file in name
    order (`calc` → `calc/__init__.py`); a directory with no file stays as it is."""
    target = root / path
    if not target.is_dir():
        return path
    for dirpath, dirnames, filenames in os.walk(target):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if (Path(dirpath) / name).is_file() and not name.startswith("."):
                return (Path(dirpath) / name).relative_to(root).as_posix()
    return path


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


def briefing() -> str:
    """The launch briefing the supervisor wrote for this session ('' when none)."""
    path = os.environ.get("ROUNDTABLE_BRIEFING_FILE", "")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


NOTE_CHARS = 72
_PLACE = re.compile(r"^(?P<path>.+?)(?::(?P<old>-)?(?P<line>\d+))?$")


def _note(path: str, body: str, indent: str) -> str:
    """One line answering a comment, in the file's comment syntax."""
    text = " ".join(body.split())
    text = text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"
    if path.endswith((".md", ".txt", ".rst")):
        return f"{indent}Review note: {text}"
    if path.endswith((".js", ".ts", ".go", ".c", ".h", ".java", ".rs")):
        return f"{indent}// Review: {text}"
    return f"{indent}# Review: {text}"


def address_comments(path: str, text: str, comments: list[dict[str, Any]]) -> str:
    """`text` (the file as the commented revision has it) with a note line answering each comment
    on `path` (or on the whole proposal): below its line (with that line's indentation), at the
    end for a file comment or a removed line's. Notes already there are not added again."""
    lines = text.splitlines()
    at_end: list[str] = []
    below: list[tuple[int, str]] = []
    for comment in comments:
        place = str(comment.get("at", ""))
        body = str(comment.get("body_md", ""))
        match = _PLACE.match(place)
        where = match.group("path") if match and place != "(whole proposal)" else ""
        if where and where != path:
            continue
        number = int(match.group("line")) if match and match.group("line") and not match.group("old") else 0
        if 0 < number <= len(lines):
            line = lines[number - 1]
            below.append((number, _note(path, body, line[: len(line) - len(line.lstrip())])))
        else:
            at_end.append(_note(path, body, ""))
    for number, note in sorted(below, key=lambda item: item[0], reverse=True):
        if note not in lines:
            lines.insert(number, note)
    lines += [note for note in at_end if note not in lines]
    return "\n".join(lines) + ("\n" if text.endswith("\n") or not text else "")


async def _open_comments(s: Session, proposal: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The comments on the current revision of `proposal` (none without one)."""
    if proposal is None:
        return []
    got = await s.call("proposal.get", proposal_id=proposal.get("id"))
    found = [c for c in got.get("comments", []) or [] if isinstance(c, dict)]
    if found:
        emit(step="comments", count=len(found), at=[c.get("at") for c in found])
    return found


async def _own_open_proposal(s: Session, task_id: str) -> dict[str, Any] | None:
    listed = await s.call("proposal.list", task_id=task_id)
    mine = [
        p
        for p in listed.get("proposals", []) or []
        if isinstance(p, dict)
        and p.get("agent_id") == os.environ.get("ROUNDTABLE_AGENT_ID")
        and p.get("status") in ("pending", "in_review")
    ]
    return mine[-1] if mine else None


async def implementer(s: Session, task_id: str) -> None:
    task = _record(await s.call("task.get"), "task")
    note = briefing()
    if note:
        emit(step="briefing", text=note[:500])
    body = str(task.get("body_md", ""))
    match = _RECIPE.search(body)
    if match:
        path, addition = match.group(1), match.group(2)
    else:
        readable = _readable(task)
        if not readable:
            raise CallFailed("task has no readable_paths to work on")
        path, addition = readable[0], f"# touched by {os.environ.get('ROUNDTABLE_AGENT_ID', 'agent')}\n"
    workspace = os.environ.get("ROUNDTABLE_WORKSPACE", "")
    if workspace:
        await implement_in_workspace(s, task, task_id, Path(workspace), path, addition)
        return
    await claim_file(s, path, "write")
    current = str((await s.call("repo.read_file", path=path)).get("content", ""))
    emit(step="read", path=path, bytes=len(current))
    updated = current + ("" if current.endswith("\n") or not current else "\n") + addition
    existing = await _own_open_proposal(s, task_id)
    updated = address_comments(path, updated, await _open_comments(s, existing))
    if existing is not None:
        # A relaunch for a revision: the same change, attached again (a new revision to review).
        await s.call("proposal.attach_patch", proposal_id=existing.get("id"), patch=make_patch(path, current, updated))
        emit(step="revised", proposal_id=existing.get("id"))
        await s.call("proposal.request_review", proposal_id=existing.get("id"))
        return
    proposal = _record(
        await s.call(
            "proposal.create",
            title=f"{task.get('title', task_id)}",
            summary_md=f"Scripted change to `{path}` for task {task_id}.",
            affected_resources=[f"file:{path}"],
            risk=Risk.NORMAL,
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


async def implement_in_workspace(
    s: Session, task: dict[str, Any], task_id: str, workspace: Path, path: str, addition: str
) -> None:
    """Edit the file in the workspace with plain file I/O and propose the workspace's diff (a
    readable path that is a directory: its first file)."""
    path = file_in(workspace, path)
    target = workspace / path
    current = target.read_text(encoding="utf-8") if target.exists() else ""
    emit(step="read", path=path, bytes=len(current), workspace=str(workspace))
    updated = current
    if addition not in current:  # a relaunch finds its previous revision in place
        updated = current + ("" if current.endswith("\n") or not current else "\n") + addition
    existing = await _own_open_proposal(s, task_id)
    updated = address_comments(path, updated, await _open_comments(s, existing))
    if updated != current:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(updated, encoding="utf-8")
        emit(step="edited", path=path)
    result = await s.call(
        "workspace.propose",
        title=f"{task.get('title', task_id)}",
        summary_md=f"Scripted change to `{path}` for task {task_id}.",
    )
    proposal = _record(result, "proposal")
    emit(step="revised" if existing is not None else "proposed", proposal_id=proposal.get("id"))
    if "reviewers" in result:  # workspace.propose asked for the review itself
        emit(step="review_requested", proposal_id=proposal.get("id"))


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


REVISE_REASON = "Scripted review: please add a docstring to the new function."


async def reviewer(s: Session, proposal_id: str, verdict: str = "approve") -> None:
    await read_proposal(s, proposal_id, "review")
    reason = REVISE_REASON if verdict == "revise" else "Scripted review: the change is small and clear."
    await s.call("vote.cast", vote=verdict, reason_md=reason)
    emit(step="voted", vote=verdict)


async def security(s: Session, proposal_id: str) -> None:
    review = await s.call("security.review")
    record = _record(review, "review") if "review" in review else _record(review, "security_review")
    status = record.get("status", "")
    emit(step="security_reviewed", status=status)
    verdict = Vote.REJECT if status in (ReviewStatus.VETO, ReviewStatus.NEEDS_CHANGES) else Vote.APPROVE
    await s.call("vote.cast", vote=verdict, reason_md=f"Security scan status: {status or 'done'}.")
    emit(step="voted", vote=verdict)


async def tester(s: Session, proposal_id: str) -> None:
    await read_proposal(s, proposal_id, "read")
    run = await s.call(
        "test.evidence.submit",
        command="python -m pytest -q",
        outcome=TestOutcome.PASSED,
        summary_md="Scripted tester: read the change; reporting the expected outcome.",
    )
    emit(step="evidence", status=_record(run, "test_run").get("status"))
    await s.call("vote.cast", vote=Vote.APPROVE, reason_md="Evidence submitted.")
    emit(step="voted", vote=Vote.APPROVE)


# The built-in plan when the goal carries no recipe: (title, body, readable paths) per repository.
MUL_PLAN = (
    "Add mul() to the calculator",
    "Add multiplication to the calculator.\n\n```append calc/ops.py\n\n\n"
    "def mul(a: int, b: int) -> int:\n    return a * b\n```\n",
    ["calc", "tests"],
)
README_PLAN = (
    "Mention Roundtable in the README",
    "Note in the README that Roundtable coordinates this project.\n\n```append README.md\n\n"
    "Changes here are proposed, reviewed and applied through Roundtable.\n```\n",
    ["README.md"],
)


async def _exists(s: Session, path: str) -> bool:
    """Whether `path` is readable here (a read claim first, as the session rules ask)."""
    try:
        await claim_file(s, path, "read")
        await s.call("repo.read_file", path=path)
    except CallFailed:
        return False
    return True


async def planner(s: Session, task_id: str, request_id: int = 0) -> None:
    task = _record(await s.call("task.get"), "task")
    goal = str(task.get("body_md", ""))
    plan: list[tuple[str, str, list[str]]] = []
    for number, match in enumerate(_RECIPE.finditer(goal), 1):
        path = match.group(1)
        top = path.split("/", 1)[0]
        plan.append((f"Step {number}: change {path}", match.group(0), [top]))
    if not plan:
        plan.append(MUL_PLAN if await _exists(s, "calc/ops.py") else README_PLAN)
    for title, body, readable in plan:
        created = _record(await s.call("task.create", title=title, body_md=body, readable_paths=readable), "task")
        emit(step="task_created", task_id=created.get("id"), title=title)
    # The turn ends before the planning task closes: a session bound to a closed task is refused.
    await end_turn(s, request_id)
    await s.call("task.update_status", status=TaskStatus.COMPLETED)
    emit(step="planned", tasks=len(plan))


ROLES = {
    "implementer": implementer,
    "reviewer": reviewer,
    "security": security,
    "tester": tester,
    "architect": planner,
}


async def probe(s: Session, name: str, readable: list[str]) -> None:
    if name == "proposal.create":
        refused, text = await s.attempt(
            "proposal.create", title="x", summary_md="x", affected_resources=[], risk=Risk.NORMAL, patch=""
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
    if args.usage_stream:
        for line in Path(args.usage_stream).read_text(encoding="utf-8").splitlines():  # noqa: ASYNC240 - before any work
            if line.strip():
                print(line.strip(), flush=True)
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
        try:
            request_id = await take_turn(
                s,
                f"{role} work on {proposal_id or task_id}",
                args.turn_timeout,
                os.environ.get("ROUNDTABLE_RUN_ID", ""),
            )
        except CallFailed as exc:
            emit(step="refused", error=str(exc))
            return 1
        try:
            if role == "architect":
                await planner(s, task_id, request_id)
                request_id = 0  # the planner ended its turn itself
            elif role == "implementer":
                await implementer(s, task_id)
            elif role == "reviewer":
                await reviewer(s, proposal_id, args.vote)
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
    parser.add_argument("--vote", choices=("approve", "revise"), default="approve", help="a reviewer's vote")
    # What an adapter of another name adds to the command line (the scripted agent follows its script).
    parser.add_argument("--prompt", default="", help=argparse.SUPPRESS)
    parser.add_argument("--model", default="", help=argparse.SUPPRESS)
    parser.add_argument("--revoke-timeout", type=float, default=60.0)
    parser.add_argument("--usage-stream", default="", help="print this harness output file first (metered usage)")
    args = parser.parse_args(argv)
    # resources/subscribe is the handshake era's (2026-07-28 replaced it with subscriptions/listen);
    # these agents speak the handshake era on purpose, like most harnesses today.
    warnings.filterwarnings("ignore", message=r".*2026-07-28.*")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
