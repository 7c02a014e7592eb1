"""Tasks: create (upsert by id), read, list, update, and the operator-authored `readable_paths`.

Every change appends an event (`task.created`, `task.updated`, `task.assigned`). The operator may
create, replace and update any task. An agent (`agent` given) acts only on its own work: it may
create tasks (never replace an existing id), assign a task only to itself, and change a task only
when the task is assigned to it, or unassigned and the same call takes it (`assigned_agent_id`
equal to its own id).

`readable_paths` is the repository scope the assigned
agent may read in a capability session. Entries are repository-relative, lexically normalised
and de-duplicated; credential and configuration locations are refused with an error naming the
entry. The list is stored as `readable_paths_json` and returned on the task as the JSON array
`readable_paths` (task records in results carry `readable_paths`, not the JSON text column).

A task belongs to one run (`run_id`), fixed when it is created from what the call names, else the
caller's run, else the one active run (`services.run_scope`); its events go to that run.
"""

from __future__ import annotations

import json
import posixpath
import sqlite3
from pathlib import Path
from typing import Annotated, Any

from annotated_types import MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.config import LimitsConfig
from roundtable.domain import EventType, Risk, TaskStatus
from roundtable.errors import PermissionDenied, ToolError, ValidationError
from roundtable.services.args import Args, Id, Int, NewId, RepoPath, RiskWord, Text, Title, Word
from roundtable.services.coordination import quotas
from roundtable.services.coordination.session_scope import Scope, where
from roundtable.services.paging import PageRequest, after
from roundtable.services.project import Project
from roundtable.services.repository.pathguard import is_sensitive_path, resolve_repo_path
from roundtable.services.run_scope import NO_HINT, RunHint, resolve, resolve_sync
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Task

DEFAULT_PRIORITY = 100
MAX_BODY = 200_000
MAX_READABLE_PATHS = 200


class CreateArgs(Args):
    # `task.create` (the title's bound, one line of 500 characters, is the `Title` type's).
    title: Title
    body_md: Annotated[Text, MaxLen(MAX_BODY)] = Field(description="Markdown.")
    priority: Int = Field(default=DEFAULT_PRIORITY, description="Lower first; default 100.")
    risk: RiskWord = Field(
        default=Risk.NORMAL, description="Default normal; high and critical need a human's approval."
    )
    assigned_agent_id: Id = Field(default="", description="Its agent.")
    readable_paths: Annotated[list[RepoPath], MaxLen(MAX_READABLE_PATHS)] = Field(
        default=[], description="Paths its agent may read."
    )
    task_id: NewId = ""
    status: Word = Field(default=TaskStatus.OPEN, description="Initial status (default open).")


class UpdateStatusArgs(Args):
    # `task.update_status`: the non-empty fields are written.
    task_id: Id
    status: Word = ""
    assigned_agent_id: Id = Field(default="", description="New assignee.")


def task_dict(task: Task) -> dict[str, Any]:
    """A task record for results: snake_case columns with `readable_paths` as a JSON array."""
    out = task.to_dict()
    raw = out.pop("readable_paths_json", "") or "[]"
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = []
    out["readable_paths"] = [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
    return out


def sensitive_component(path: str) -> str:
    """The first component of a normalised relative `path` naming a credential or configuration
    location (the path guard's list), or "" when there is none."""
    for part in path.split("/"):
        if part and is_sensitive_path(part):
            return part
    return ""


def normalise_readable_path(entry: str) -> str:
    """One `readable_paths` entry, normalised; raises `ValidationError` naming the entry."""
    if not entry.strip():
        raise ValidationError("readable_paths must not contain empty entries")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in entry):
        raise ValidationError(f"readable_paths entry {entry!r} contains a control character")
    if "\\" in entry:
        raise ValidationError(f"readable_paths entry {entry!r} must use / separators")
    if entry.startswith("/"):
        raise ValidationError(f"readable_paths entry {entry!r} must be relative to the repository root")
    if ".." in entry.split("/"):
        raise ValidationError(f"readable_paths entry {entry!r} must not contain '..'")
    clean = posixpath.normpath(entry)
    if clean in ("", "."):
        clean = "."
    hit = sensitive_component(clean)
    if hit:
        raise ValidationError(f"readable_paths entry {entry!r} names a credential or configuration location ({hit})")
    return clean


def validate_readable_paths(entries: list[str], root: Path | None = None) -> list[str]:
    """Normalise and de-duplicate `readable_paths` (order kept); refuse bad entries. With
    `root`, an entry that exists must also stay inside it once symlinks are resolved."""
    out: list[str] = []
    for entry in entries:
        clean = normalise_readable_path(entry)
        if root is not None and clean != ".":
            try:
                resolve_repo_path(root, clean)
            except ToolError as exc:
                raise ValidationError(f"readable_paths entry {entry!r}: {exc}") from None
        if clean not in out:
            out.append(clean)
    return out


async def get_task(q: Reader | Tx, task_id: str) -> Task:
    task = await q.get(Task, task_id)
    return task


TASK_ORDER = ("priority", "created_at", "id")


async def list_tasks(q: Reader | Tx, scope: Scope | None = None, page: PageRequest | None = None) -> list[Task]:
    """Every task in order; only those `scope` may read when one is given (a session's). With
    `page`: at most one more than its limit, after its key (`services.paging`)."""
    condition, scoped = where(scope, "tasks")
    clauses = [condition] if condition else []
    params: list[Any] = list(scoped)
    limit = ""
    if page is not None:
        if page.key is not None:
            sql, more = after(TASK_ORDER, page.key)
            clauses.append(sql)
            params.extend(more)
        limit = f" LIMIT {page.limit + 1}"
    filtered = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    return await q.all(Task, f"SELECT * FROM tasks {filtered}ORDER BY {', '.join(TASK_ORDER)}{limit}", params)


def _task_values(args: CreateArgs, root: Path | None) -> tuple[Any, ...]:
    """A new task's checked column values, in `_UPSERT_TASK`'s order (without the times and run)."""
    paths = validate_readable_paths(list(args.readable_paths), root)
    return (
        args.task_id or clock.new_id("T"),
        args.title,
        args.body_md,
        args.status or TaskStatus.OPEN,
        args.priority or DEFAULT_PRIORITY,
        args.risk,
        args.assigned_agent_id or None,
        json.dumps(paths, ensure_ascii=False),
    )


async def create_task(
    tx: Tx, project: Project, args: CreateArgs, *, actor: str = "", agent: str = "", runs: RunHint = NO_HINT
) -> Task:
    """Create a task, or (operator only) replace one with the same id (keeping its `created_at`
    and its run), inside `tx`, with the agent's task quota (the project's `limits`, `quotas`)
    checked in the same round trip on the writer's thread (`Tx.run`). `agent` is the acting agent
    ("" for operator authority); `actor` is recorded on the event; `runs` is what the call says
    about the run (`services.run_scope`)."""
    values = _task_values(args, project.root)
    task: Task = await tx.run(_create_job, tx, args, values, actor, agent, runs, project.config.limits)
    return task


_UPSERT_TASK = (
    "INSERT INTO tasks (id, title, body_md, status, priority, risk, assigned_agent_id, readable_paths_json,"
    " created_at, updated_at, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT(id) DO UPDATE SET title = excluded.title, body_md = excluded.body_md,"
    " status = excluded.status, priority = excluded.priority, risk = excluded.risk,"
    " assigned_agent_id = excluded.assigned_agent_id, readable_paths_json = excluded.readable_paths_json,"
    " updated_at = excluded.updated_at"
)


def _create_job(
    conn: sqlite3.Connection,
    tx: Tx,
    args: CreateArgs,
    values: tuple[Any, ...],
    actor: str,
    agent: str,
    runs: RunHint,
    limits: LimitsConfig,
) -> Task:
    """`create_task`'s reads and writes, quota included, on the writer's thread inside `tx`."""
    task_id, assigned_agent_id = values[0], args.assigned_agent_id
    found = conn.execute("SELECT run_id FROM tasks WHERE id = ?", (task_id,)).fetchone() if args.task_id else None
    replaced = found is not None
    if agent:
        if replaced:
            raise PermissionDenied(f"task {task_id} already exists; agents create new tasks, they never replace one")
        if assigned_agent_id and assigned_agent_id != agent:
            raise PermissionDenied(
                f"an agent may assign a new task only to itself ({agent}), not to {assigned_agent_id}"
            )
    # A replaced task keeps its run (the upsert leaves `run_id` alone) unless it had none.
    run = resolve_sync(conn, runs, owner=str(found[0] or "") if found is not None else "")
    now = clock.now()
    conn.execute(_UPSERT_TASK, (*values, now, now, run)).close()
    if found is not None and not found[0] and run:
        conn.execute("UPDATE tasks SET run_id = ? WHERE id = ?", (run, task_id)).close()
    task = Task.from_row(conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone())
    tx.emit(
        conn,
        run,
        EventType.TASK_REPLACED if replaced else EventType.TASK_CREATED,
        {
            "task_id": task.id,
            "title": task.title,
            "status": task.status,
            "priority": task.priority,
            "risk": task.risk,
            "assigned_agent_id": task.assigned_agent_id,
        },
        actor_id=actor or agent,
        task_id=task.id,
    )
    tx.tables.add("tasks")
    quotas.check_sync(conn, limits, "task", run_id=task.run_id, agent_id=agent)
    return task


def check_task_change(task: Task, agent: str, assigned_agent_id: str) -> None:
    """An agent may change a task assigned to it, or take an unassigned one (assigning it to
    itself in the same call); it never assigns a task to another agent."""
    if assigned_agent_id and assigned_agent_id != agent:
        raise PermissionDenied(f"task {task.id}: an agent may assign a task only to itself ({agent})")
    owner = task.assigned_agent_id
    if owner == agent:
        return
    if owner:
        raise PermissionDenied(f"task {task.id} is assigned to {owner}; only {owner} or the operator may change it")
    if assigned_agent_id != agent:
        raise PermissionDenied(f"task {task.id} is unassigned; take it first (assigned_agent_id {agent}) to change it")


async def update_task_status(
    tx: Tx, args: UpdateStatusArgs, *, actor: str = "", agent: str = "", runs: RunHint = NO_HINT
) -> Task:
    """Overwrite the non-empty fields and refresh `updated_at` (even when nothing changed), and
    append `task.updated` to the task's run (unless the call names one, `services.run_scope`).
    `agent` is the acting agent ("" for operator authority)."""
    task_id, status, assigned_agent_id = args.task_id, args.status, args.assigned_agent_id
    before = await get_task(tx, task_id)
    if agent:
        check_task_change(before, agent, assigned_agent_id)
    values: dict[str, Any] = {"updated_at": clock.now()}
    if status:
        values["status"] = status
    if assigned_agent_id:
        values["assigned_agent_id"] = assigned_agent_id
    await tx.update("tasks", {"id": task_id}, values)
    task = await get_task(tx, task_id)
    await tx.append_event(
        await resolve(tx, runs, owner=task.run_id),
        EventType.TASK_UPDATED,
        {
            "task_id": task.id,
            "status": task.status,
            "previous_status": before.status,
            "assigned_agent_id": task.assigned_agent_id,
            "previous_assigned_agent_id": before.assigned_agent_id,
        },
        actor_id=actor or agent,
        task_id=task.id,
    )
    return task


async def assign_task(tx: Tx, run_id: str, task_id: str, agent_id: str, actor: str) -> bool:
    """The Chair's assignment: only if the task is still open and unassigned (re-checked inside
    this transaction, so a concurrent `task.update_status` wins). Appends `task.assigned`."""
    changed = await tx.execute(  # an UPDATE: its row count
        "UPDATE tasks SET assigned_agent_id = ?, status = 'in_progress', updated_at = ?"
        " WHERE id = ? AND status = 'open' AND coalesce(assigned_agent_id, '') = ''",
        (agent_id, clock.now(), task_id),
    )
    if not changed:
        return False
    tx.tables.add("tasks")
    await tx.append_event(
        run_id,
        EventType.TASK_ASSIGNED,
        {"task_id": task_id, "assigned_agent_id": agent_id},
        actor_id=actor,
        task_id=task_id,
    )
    return True
