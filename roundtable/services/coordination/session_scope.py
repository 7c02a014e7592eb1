"""What a supervised session may read: one rule for its tools and for its MCP resources.

A capability session sees its run, its own agent record, its task (a planner: every task of its
run, the ones it plans among them), the proposals of its task and everything that hangs off them
(revisions, votes, test runs, human approvals, security reviews, decisions, transactions), the
claims on its task and its own claims, and the files of its task's readable paths (file reads
also need a claim: `capabilities.check_call`). Shared knowledge — memory and the rulebook — is
not scoped.

`Scope` says it for one session. `check_read` refuses a call that names something outside it by
id or path (`capabilities.check_call` runs it before any tool, so the refusal is a `capability.denied`
like any other); `condition` is the SQL that the list reads (`table.get_state`, `table.watch`,
`task.list`, `proposal.list`) and the resource listing add, so a tool, a resource and a listing
show the same rows.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roundtable.errors import PermissionDenied
from roundtable.services.repository.pathguard import is_sensitive_path
from roundtable.store.db import Reader, Tx
from roundtable.store.records import SessionCapability

OUT_OF_SCOPE = "out_of_scope"
# Planners turn a run's goal into tasks: they see the tasks of their run, not only their own.
RUN_TASK_ROLES = frozenset({"planner"})


class OutOfScope(PermissionDenied):
    """A read of something outside the session's scope (`reason_code` as `capabilities.Denied`)."""

    reason_code = OUT_OF_SCOPE


@dataclass(frozen=True)
class Scope:
    """What one capability session may read (see the module docstring)."""

    agent_id: str
    run_id: str
    task_id: str
    proposal_id: str = ""
    session_id: str = ""
    readable: tuple[str, ...] = ()
    role: str = ""

    @classmethod
    def of(cls, cap: SessionCapability, readable: Iterable[str] = ()) -> Scope:
        return cls(
            agent_id=cap.agent_id,
            run_id=cap.run_id,
            task_id=cap.task_id,
            proposal_id=cap.proposal_id or "",
            session_id=cap.session_id,
            readable=tuple(readable),
            role=cap.role,
        )

    def sees_path(self, path: str) -> bool:
        """Whether a repository path lies in the task's readable paths (lexically)."""
        return in_readable(path, list(self.readable))


# --- which rows ----------------------------------------------------------------------------------

_TASK_PROPOSALS = "SELECT id FROM proposals WHERE task_id = ?"


def condition(scope: Scope, table: str) -> tuple[str, tuple[Any, ...]] | None:
    """The SQL condition (and its parameters) a read of `table` adds for `scope`; None when the
    table is not scoped (memory). Column names are unqualified: use it on the table itself."""
    task, run = scope.task_id, scope.run_id
    if table == "runs":
        return "id = ?", (run,)
    if table == "agents":
        return "id = ?", (scope.agent_id,)
    if table == "tasks":
        if scope.role in RUN_TASK_ROLES:
            return "(id = ? OR run_id = ?)", (task, run)
        return "id = ?", (task,)
    if table == "claims":
        return "(task_id = ? OR agent_id = ?)", (task, scope.agent_id)
    if table == "proposals":
        return "task_id = ?", (task,)
    if table in ("transactions", "votes", "test_runs", "patch_revisions"):
        return f"proposal_id IN ({_TASK_PROPOSALS})", (task,)
    if table in ("human_approvals", "security_reviews", "decisions"):
        return f"(task_id = ? OR proposal_id IN ({_TASK_PROPOSALS}))", (task, task)
    if table == "events":
        return "run_id = ?", (run,)
    return None


def where(scope: Scope | None, table: str) -> tuple[str, tuple[Any, ...]]:
    """`condition` as a `WHERE …` / `AND …`-ready pair: ("", ()) when nothing is added."""
    found = condition(scope, table) if scope is not None else None
    return found if found is not None else ("", ())


# --- reads by id ---------------------------------------------------------------------------------

# Arguments that name one record, and how to find the task it belongs to.
_OWNER_SQL: dict[str, str] = {
    "proposal_id": "SELECT task_id FROM proposals WHERE id = ?",
    "test_run_id": (
        "SELECT coalesce(p.task_id, t.task_id) FROM test_runs t LEFT JOIN proposals p ON p.id = t.proposal_id"
        " WHERE t.id = ?"
    ),
    "approval_id": (
        "SELECT coalesce(p.task_id, a.task_id) FROM human_approvals a LEFT JOIN proposals p ON p.id = a.proposal_id"
        " WHERE a.id = ?"
    ),
}


# Reads of one resource record (a path, its hash): the path must be one the session may read.
_RESOURCE_READS = frozenset({"resource.get"})


async def check_read(reader: Reader | Tx, scope: Scope, tool: str, args: dict[str, Any]) -> None:
    """Refuse (`OutOfScope`) a call whose arguments name a proposal, test run or approval of
    another task, or a resource outside the readable paths. An id that names nothing passes: the
    tool itself says it is not found."""
    resource_id = args.get("resource_id")
    if tool in _RESOURCE_READS and isinstance(resource_id, str) and resource_id.strip():
        path = await reader.scalar("SELECT path FROM resources WHERE id = ?", (resource_id,))
        if path is not None and not scope.sees_path(clean_path(str(path)) or ""):
            raise OutOfScope(f"{tool}: resource {resource_id} is outside the task's readable_paths")
    for name, sql in _OWNER_SQL.items():
        value = args.get(name)
        if not isinstance(value, str) or not value.strip():
            continue
        rows = await reader.fetchall(sql, (value,))
        if rows and rows[0][0] != scope.task_id:
            what = name.removesuffix("_id").replace("_", " ")
            raise OutOfScope(f"{tool}: {what} {value} belongs to another task than this session's")


# --- readable paths ------------------------------------------------------------------------------


def parse_readable(raw: str | None) -> list[str]:
    """A task's `readable_paths_json` as a list of paths (malformed: none)."""
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(p) for p in value if isinstance(p, str) and p] if isinstance(value, list) else []


async def load(reader: Reader | Tx, cap: SessionCapability) -> Scope:
    """The scope of a capability with its task's readable paths read now."""
    raw = await reader.scalar("SELECT readable_paths_json FROM tasks WHERE id = ?", (cap.task_id,))
    return Scope.of(cap, parse_readable(raw if isinstance(raw, str) else None))


def clean_path(raw: str) -> str | None:
    """Repository-relative lexical clean; None when absolute, escaping or malformed."""
    text = raw.replace("\\", "/")
    if not text or text.startswith("/") or any(ord(ch) < 32 for ch in text):
        return None
    cleaned = posixpath.normpath(text)
    if cleaned == ".":
        return ""
    if cleaned == ".." or cleaned.startswith("../"):
        return None
    return cleaned


def within(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def in_readable(path: str, readable: list[str]) -> bool:
    return bool(path) and not is_sensitive_path(path) and any(within(path, clean_path(r) or "\0") for r in readable)
