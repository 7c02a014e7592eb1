"""MCP resources: what agents read most, under one URI scheme, behind the tools' authority.

URIs (`roundtable://…`; ids are percent-encoded where needed):

| URI | content | read as |
| --- | --- | --- |
| `roundtable://table` | the coordination table | `table.get_state` |
| `roundtable://run/{run_id}` | the run's state summary: recent events, blocked tasks, pending proposals, approvals, counts, usage (tokens and USD spent, per agent and task) | `table.watch` (snapshot mode) |
| `roundtable://turns/{run_id}` | the turn queue: outstanding requests in order, the one in flight, recent finished ones | authority of `table.watch` for that run |
| `roundtable://events/{run_id}{?after,limit}` | one page of the event log after a cursor | `table.watch` (cursor mode) |
| `roundtable://task/{task_id}` | one task | `task.get` |
| `roundtable://proposal/{proposal_id}` | a proposal, its revisions, current patch and gate report | `proposal.get` |
| `roundtable://doc/{name}` | `AGENTS.ROUNDTABLE.md`, `POLICIES.ROUNDTABLE.md`, `PROJECT.ROUNDTABLE.md` | the project's rulebook, readable by every connection |
| `roundtable://file/{+path}` | one repository file | `repo.read_file` |

Every read goes through an `Access` — the principal of the request — whose `call` is the tool call
the transport would make for the same principal (`Runtime.call` over HTTP, `check_call` then
`Runtime.call` on a capability session). A capability session therefore reads only its run, its
task, the proposals of its task and the files its readable paths and claims allow; an anonymous
caller reads what the read-only tools show. Listing and completion never show an id the caller
could not read.
"""

from __future__ import annotations

import json
import mimetypes
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import parse_qs, quote, unquote, urlsplit

import anyio

from roundtable.domain import TERMINAL_TASK_STATUSES, ProposalStatus
from roundtable.errors import NotFound, PermissionDenied, ToolError, ValidationError
from roundtable.services.coordination import turns as turn_service
from roundtable.services.coordination.runs import get_run
from roundtable.services.coordination.session_scope import Scope, where
from roundtable.services.coordination.state import WATCH_MAX_LIMIT
from roundtable.services.repository.pathguard import HIDDEN_DIRS, is_sensitive_path
from roundtable.tools.context import Caller

if TYPE_CHECKING:
    from pathlib import Path

    from roundtable.runtime import Runtime

SCHEME = "roundtable"
DOCS: tuple[str, ...] = ("AGENTS.ROUNDTABLE.md", "POLICIES.ROUNDTABLE.md", "PROJECT.ROUNDTABLE.md")
DOC_MAX_BYTES = 1024 * 1024
JSON = "application/json"
MARKDOWN = "text/markdown"
RUN_EVENTS = 20  # events in a run summary
FINISHED_TURNS = 20  # finished turns kept in the queue resource
COMPLETION_MAX = 100
TASK_DONE = tuple(sorted(TERMINAL_TASK_STATUSES))
PROPOSAL_DONE = (ProposalStatus.ACCEPTED, ProposalStatus.REJECTED, ProposalStatus.ROLLED_BACK)


# What a capability session is bound to and may read (None for HTTP principals): the one scope
# rule its tools apply too (`services.coordination.session_scope`).
Bound = Scope


class Access(Protocol):
    """The principal of one MCP request, as the tools see it."""

    caller: Caller
    bound: Bound | None

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a (read) tool for this principal; raises `RoundtableError` when refused."""
        ...

    async def check(self, tool: str, args: dict[str, Any]) -> None:
        """Raise unless this principal may call `tool` with `args` (nothing runs)."""
        ...

    async def live(self) -> bool:
        """Whether this principal may still receive pushes (a revoked capability may not)."""
        ...


# --- URIs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A parsed resource URI."""

    kind: str
    ident: str = ""
    query: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        """What changes of the store are matched against (see `change_keys`)."""
        return (self.kind, self.ident)

    def arg(self, name: str) -> str:
        return next((value for key, value in self.query if key == name), "")


KINDS = ("table", "run", "turns", "events", "task", "proposal", "doc", "file")


def uri(kind: str, ident: str = "") -> str:
    """The URI of a resource (`uri("task", "T-1")` → `roundtable://task/T-1`)."""
    if kind == "table":
        return f"{SCHEME}://table"
    safe = "/" if kind == "file" else ""
    return f"{SCHEME}://{kind}/{quote(ident, safe=safe + '-._~')}"


def parse(text: str) -> Ref | None:
    """The resource a URI names, or None when it is not one of ours."""
    if not isinstance(text, str) or len(text) > 8192:
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme != SCHEME or parts.fragment:
        return None
    kind = parts.netloc
    if kind not in KINDS:
        return None
    ident = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
    query: list[tuple[str, str]] = []
    if parts.query:
        for key, values in parse_qs(parts.query, keep_blank_values=True).items():
            query.append((key, values[-1]))
    if kind == "table":
        return Ref("table") if not ident and not query else None
    if not ident or any(ord(ch) < 32 for ch in ident):
        return None
    if kind != "file" and "/" in ident:
        return None
    if kind != "events" and query:
        return None
    if kind == "events":
        for key, value in query:
            if key not in ("after", "limit") or not value.isdigit() or len(value) > 18:
                return None
    if kind == "doc" and ident not in DOCS:
        return None
    return Ref(kind, ident, tuple(sorted(query)))


@dataclass(frozen=True)
class Template:
    uri_template: str
    name: str
    title: str
    description: str
    mime_type: str
    arguments: tuple[str, ...]


TEMPLATES: tuple[Template, ...] = (
    Template(
        "roundtable://run/{run_id}",
        "run",
        "Run summary",
        "A run's state summary: recent events, blocked tasks, pending proposals, required approvals, counts, "
        "usage (tokens and USD its sessions spent, per agent and task).",
        JSON,
        ("run_id",),
    ),
    Template(
        "roundtable://turns/{run_id}",
        "turns",
        "Turn queue",
        "A run's turn queue: outstanding requests first come first served, the turn in flight, recent "
        "finished turns. Subscribe to it to be told when your turn is scheduled.",
        JSON,
        ("run_id",),
    ),
    Template(
        "roundtable://events/{run_id}{?after,limit}",
        "events",
        "Event log",
        "One page of a run's event log: events with an id above `after` (oldest first, at most `limit`, "
        "default 10, at most 200); pass next_after_event_id back as `after`. Without `after`: the newest events.",
        JSON,
        ("run_id", "after", "limit"),
    ),
    Template(
        "roundtable://task/{task_id}",
        "task",
        "Task",
        "One task: title, body, status, assignee, readable paths.",
        JSON,
        ("task_id",),
    ),
    Template(
        "roundtable://proposal/{proposal_id}",
        "proposal",
        "Proposal",
        "A proposal with its revisions, the current revision's patch and the gate report.",
        JSON,
        ("proposal_id",),
    ),
    Template(
        "roundtable://doc/{name}",
        "doc",
        "Project rulebook",
        "AGENTS.ROUNDTABLE.md, POLICIES.ROUNDTABLE.md or PROJECT.ROUNDTABLE.md.",
        MARKDOWN,
        ("name",),
    ),
    Template(
        "roundtable://file/{+path}",
        "file",
        "Repository file",
        "One repository file as text (repo.read_file: the same path rules; a supervised session needs the "
        "path in its readable paths and a claim covering it).",
        "text/plain",
        ("path",),
    ),
)
TEMPLATE_BY_URI = {t.uri_template: t for t in TEMPLATES}


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Content:
    uri: str
    mime_type: str
    text: str


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


async def read(runtime: Runtime, access: Access, text: str) -> Content:
    """The content of resource `text` for `access`; raises `NotFound`, `PermissionDenied` or
    another `RoundtableError` (the caller maps them to JSON-RPC errors)."""
    ref = parse(text)
    if ref is None:
        raise NotFound("resource", text[:200])
    if ref.kind == "table":
        return Content(text, JSON, _json(await access.call("table.get_state", {})))
    if ref.kind == "run":
        summary = await access.call("table.watch", {"run_id": ref.ident, "limit": RUN_EVENTS})
        return Content(text, JSON, _json({**summary, "usage": await run_usage(runtime, ref.ident)}))
    if ref.kind == "events":
        args: dict[str, Any] = {"run_id": ref.ident}
        if ref.arg("after"):
            args["after_event_id"] = int(ref.arg("after"))
        if ref.arg("limit"):
            args["limit"] = min(WATCH_MAX_LIMIT, max(1, int(ref.arg("limit"))))  # the template's range
        return Content(text, JSON, _json(await access.call("table.watch", args)))
    if ref.kind == "turns":
        await access.check("table.watch", {"run_id": ref.ident})
        return Content(text, JSON, _json(await turn_queue(runtime, ref.ident)))
    if ref.kind == "task":
        return Content(text, JSON, _json(await access.call("task.get", {"task_id": ref.ident})))
    if ref.kind == "proposal":  # a session's scope is the tool's to apply (another task's is refused)
        got = await access.call("proposal.get", {"proposal_id": ref.ident, "detail": True})  # the whole record
        return Content(text, JSON, _json(got))
    if ref.kind == "doc":
        return Content(text, MARKDOWN, await read_doc(runtime.root, ref.ident))
    if ref.kind == "file":
        got = await access.call("repo.read_file", {"path": ref.ident})
        if got.get("binary"):  # repo.read_file gives no bytes of a binary file
            return Content(text, "application/octet-stream", "")
        return Content(text, mimetypes.guess_type(ref.ident)[0] or "text/plain", str(got.get("content", "")))
    raise NotFound("resource", text[:200])  # pragma: no cover - parse() admits only the kinds above


async def run_usage(runtime: Runtime, run_id: str) -> dict[str, Any]:
    """What the run's supervised sessions spent: in all, and per agent and per task."""
    from roundtable.services.sessions import usage

    async with runtime.db.read() as r:
        total = await usage.totals(r, run_id=run_id)
        agents = await usage.breakdown(r, "agent_id", run_id=run_id)
        tasks = await usage.breakdown(r, "task_id", run_id=run_id)
    return {
        **total.to_dict(),
        "by_agent": {k: v.to_dict() for k, v in agents.items()},
        "by_task": {k: v.to_dict() for k, v in tasks.items() if k},
    }


async def read_doc(root: Path, name: str) -> str:
    if name not in DOCS:
        raise NotFound("document", name)

    def load() -> str:
        path = os.path.join(os.fspath(root), name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise NotFound("document", name) from None
        except OSError as exc:
            raise ToolError(f"read {name}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as handle:
            if not os.path.isfile(path):
                raise ToolError(f"read {name}: not a regular file")
            data = handle.read(DOC_MAX_BYTES + 1)
        if len(data) > DOC_MAX_BYTES:
            raise ToolError(f"read {name}: larger than {DOC_MAX_BYTES} bytes")
        return data.decode("utf-8", "replace")

    return await anyio.to_thread.run_sync(load)


def doc_stamp(root: Path, name: str) -> tuple[int, int]:
    """(mtime_ns, size) of a document, (0, -1) when it is missing (for change detection)."""
    try:
        st = os.stat(os.path.join(os.fspath(root), name), follow_symlinks=False)
    except OSError:
        return (0, -1)
    return (st.st_mtime_ns, st.st_size)


async def turn_queue(runtime: Runtime, run_id: str) -> dict[str, Any]:
    """The turn queue of `run_id` (the caller has already been authorised for it)."""
    async with runtime.db.read() as reader:
        run = await get_run(reader, run_id)
        all_turns = await turn_service.load_turns(reader, run_id)
    outstanding = list(turn_service.outstanding(all_turns).values())
    in_flight = next((t for t in all_turns.values() if t.in_flight), None)
    finished = [t for t in all_turns.values() if t.finished][-FINISHED_TURNS:]
    return {
        "run_id": run_id,
        "run_status": run.status,
        "in_flight": in_flight.to_dict() if in_flight is not None else None,
        "queue": [dict(t.to_dict(), position=i + 1) for i, t in enumerate(outstanding)],
        "recent": [t.to_dict() for t in reversed(finished)],
    }


# --- listing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    uri: str
    name: str
    title: str
    description: str
    mime_type: str


async def listing(runtime: Runtime, access: Access) -> list[Listed]:
    """The concrete resources `access` may read: the rulebook, the table, and the live runs,
    open tasks and undecided proposals (closed ones stay readable through the templates)."""
    out: list[Listed] = []
    for name in DOCS:
        if doc_stamp(runtime.root, name)[1] >= 0:
            out.append(Listed(uri("doc", name), name, name, f"The project's {name}.", MARKDOWN))
    out.append(Listed(uri("table"), "table", "Coordination table", "Runs, agents, tasks, claims, proposals, …", JSON))
    bound = access.bound
    async with runtime.db.read() as reader:
        if bound is None:
            runs = await reader.fetchall(
                "SELECT id, goal FROM runs WHERE status = 'active' ORDER BY started_at DESC, id"
            )
            tasks = await reader.fetchall(
                f"SELECT id, title FROM tasks WHERE status NOT IN ({_marks(TASK_DONE)}) ORDER BY created_at, id",
                TASK_DONE,
            )
            proposals = await reader.fetchall(
                f"SELECT id, title FROM proposals WHERE status NOT IN ({_marks(PROPOSAL_DONE)}) ORDER BY created_at, id",
                PROPOSAL_DONE,
            )
        else:
            run_sql, run_params = where(bound, "runs")
            runs = await reader.fetchall(f"SELECT id, goal FROM runs WHERE {run_sql}", run_params)
            task_sql, task_params = where(bound, "tasks")
            tasks = await reader.fetchall(
                f"SELECT id, title FROM tasks WHERE {task_sql} AND status NOT IN ({_marks(TASK_DONE)})"
                " ORDER BY created_at, id",
                (*task_params, *TASK_DONE),
            )
            proposal_sql, proposal_params = where(bound, "proposals")
            proposals = await reader.fetchall(
                f"SELECT id, title FROM proposals WHERE {proposal_sql} AND status NOT IN ({_marks(PROPOSAL_DONE)})"
                " ORDER BY created_at, id",
                (*proposal_params, *PROPOSAL_DONE),
            )
    for row in runs:
        goal = str(row["goal"] or "")[:200]
        out.append(Listed(uri("run", row["id"]), f"run {row['id']}", f"Run {row['id']}", goal or "A run.", JSON))
        out.append(
            Listed(
                uri("turns", row["id"]),
                f"turns {row['id']}",
                f"Turn queue of {row['id']}",
                "Subscribe to learn when your turn is scheduled.",
                JSON,
            )
        )
    for row in tasks:
        title = str(row["title"] or "")[:200]
        out.append(Listed(uri("task", row["id"]), f"task {row['id']}", f"Task: {title}", title, JSON))
    for row in proposals:
        title = str(row["title"] or "")[:200]
        out.append(Listed(uri("proposal", row["id"]), f"proposal {row['id']}", f"Proposal: {title}", title, JSON))
    return out


def _marks(values: Iterable[object]) -> str:
    return ", ".join("?" for _ in values)


# --- completion -----------------------------------------------------------------------------


async def candidates(runtime: Runtime, access: Access, argument: str, context: dict[str, str]) -> list[str]:
    """Every value `access` may see for an argument named `argument` (prompt or template)."""
    bound = access.bound
    if argument == "run_id":
        if bound is not None:
            return [bound.run_id]
        return await _ids(runtime, "SELECT id FROM runs WHERE status != 'archived' ORDER BY started_at DESC, id")
    if argument == "task_id":
        if bound is not None:
            return [bound.task_id]
        return await _ids(runtime, "SELECT id FROM tasks ORDER BY created_at DESC, id")
    if argument == "proposal_id":
        if bound is not None:
            sql, params = where(bound, "proposals")
            return await _ids(runtime, f"SELECT id FROM proposals WHERE {sql} ORDER BY created_at DESC, id", params)
        return await _ids(runtime, "SELECT id FROM proposals ORDER BY created_at DESC, id")
    if argument == "agent_id":
        if bound is not None:
            return [bound.agent_id]
        if access.caller.agent_id and not access.caller.is_operator:
            return [access.caller.agent_id]
        return await _ids(runtime, "SELECT id FROM agents WHERE is_enabled = 1 ORDER BY id")
    if argument == "session_id":
        if bound is not None:
            return [bound.session_id]
        agent = context.get("agent_id") or (access.caller.agent_id if not access.caller.is_operator else "")
        if agent:
            return await _ids(
                runtime, "SELECT id FROM agent_sessions WHERE agent_id = ? ORDER BY started_at DESC, id", (agent,)
            )
        return await _ids(runtime, "SELECT id FROM agent_sessions ORDER BY started_at DESC, id")
    if argument == "name":
        return [name for name in DOCS if doc_stamp(runtime.root, name)[1] >= 0]
    return []


async def path_candidates(runtime: Runtime, access: Access, prefix: str) -> list[str]:
    """Repository paths that complete `prefix` (one directory level), hiding `.git/`,
    `.roundtable/` and credential locations; a session sees only its readable paths."""
    bound = access.bound
    directory, _, stem = prefix.rpartition("/")
    if directory.startswith("/") or ".." in directory.split("/"):
        return []

    if directory and (
        any(part in HIDDEN_DIRS or part in ("", ".") for part in directory.split("/")) or is_sensitive_path(directory)
    ):
        return []

    def scan() -> list[str]:
        root = os.path.realpath(os.fspath(runtime.root))
        base = os.path.realpath(os.path.join(root, directory)) if directory else root
        if base != root and not base.startswith(root + os.sep):
            return []  # a directory symlink leading out of the repository
        try:
            entries = list(os.scandir(base))
        except OSError:
            return []
        found: list[str] = []
        for entry in entries:
            if not entry.name.startswith(stem) or entry.name in HIDDEN_DIRS:
                continue
            rel = f"{directory}/{entry.name}" if directory else entry.name
            if is_sensitive_path(rel):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            found.append(rel + "/" if is_dir else rel)
        return sorted(found)

    paths = await anyio.to_thread.run_sync(scan)
    if bound is not None:
        scope = bound
        readable = [r.strip("/") for r in scope.readable if r.strip("/")]

        def visible(path: str) -> bool:  # a readable file, or a directory on the way to one
            bare = path.rstrip("/")
            return scope.sees_path(bare) or (path.endswith("/") and any(r.startswith(bare + "/") for r in readable))

        paths = [p for p in paths if visible(p)]
    return paths


async def _ids(runtime: Runtime, sql: str, params: tuple[Any, ...] = ()) -> list[str]:
    async with runtime.db.read() as reader:
        rows = await reader.fetchall(sql + " LIMIT 5000", params)
    return [str(row[0]) for row in rows]


def complete(values: list[str], prefix: str) -> tuple[list[str], int]:
    """The first `COMPLETION_MAX` values starting with `prefix` (unique, in order) and the total."""
    seen: dict[str, None] = {}
    for value in values:
        if value.startswith(prefix):
            seen.setdefault(value, None)
    matched = list(seen)
    return matched[:COMPLETION_MAX], len(matched)


# --- what a committed change touches -----------------------------------------------------------


@dataclass
class Touched:
    """The resource keys a change touched, and the events behind each (for `_meta`)."""

    keys: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, key: tuple[str, str], event: dict[str, Any] | None) -> None:
        bucket = self.keys.setdefault(key, [])
        if event is not None:
            bucket.append(event)


def payload_of(event: dict[str, Any]) -> dict[str, Any]:
    cached = event.get("_payload")
    if isinstance(cached, dict):
        return cached
    raw = event.get("payload")
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(event.get("payload_json") or "{}")
    except (TypeError, ValueError):
        value = {}
    return value if isinstance(value, dict) else {}


def change_keys(events: Iterable[dict[str, Any]], tables: Iterable[str] = ()) -> Touched:
    """Which resources a committed change touched: the table on any write; a run (and its event
    log) on any of its events; its turn queue on turn events; a task on events naming it; a
    proposal on events naming it."""
    touched = Touched()
    tables = set(tables)
    any_event = False
    for event in events:
        any_event = True
        payload = payload_of(event)
        touched.add(("table", ""), event)
        run_id = str(event.get("run_id") or "")
        if run_id:
            touched.add(("run", run_id), event)
            touched.add(("events", run_id), event)
            if event.get("type") in turn_service.TURN_EVENTS:
                touched.add(("turns", run_id), event)
        for task_id in {event.get("task_id"), payload.get("task_id")}:
            if isinstance(task_id, str) and task_id:
                touched.add(("task", task_id), event)
        proposal_id = payload.get("proposal_id")
        if isinstance(proposal_id, str) and proposal_id:
            touched.add(("proposal", proposal_id), event)
    if tables and not any_event:
        touched.add(("table", ""), None)
    return touched


__all__ = [
    "DOCS",
    "TEMPLATES",
    "Access",
    "Bound",
    "Content",
    "Listed",
    "PermissionDenied",
    "Ref",
    "ValidationError",
    "candidates",
    "change_keys",
    "complete",
    "listing",
    "parse",
    "path_candidates",
    "read",
    "uri",
]
