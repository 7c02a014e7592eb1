"""Resources and claims: `resource.claim`, `resource.release`, `resource.claim_status`,
`resource.get`, `resource.search`.

`resource.claim` manages its own transactions (mode `none`): a file's path guard and content
hash run on the writer's thread inside the claim's write job (bounded: a file of at most
`HASH_ON_WRITER_BYTES`); a larger file, a directory's hash and a symbol's span are computed in a
worker thread *before* the write lock is taken. The conflict check and the grant run in one write
transaction; a refusal rolls that transaction back and the contention rows are committed in a
second one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import sqlite3
from pathlib import Path
from typing import Annotated, Any

from annotated_types import Le, MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.domain import ClaimStatus
from roundtable.errors import NotFound, ValidationError
from roundtable.services import paging
from roundtable.services.args import (
    ITEMS_MAX,
    Args,
    Count,
    Flag,
    Id,
    NewId,
    PageArgs,
    Query,
    RepoPath,
    ResourceId,
    Symbol,
    Text,
    Word,
)
from roundtable.services.coordination import claims as claims_service
from roundtable.services.coordination import session_scope
from roundtable.services.coordination.claims import grant as claim_grant
from roundtable.services.repository import hashing
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.pathguard import clean_rel_path, resolve_repo_path
from roundtable.services.run_scope import resolve, task_run
from roundtable.store import rows
from roundtable.store.records import Resource
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_RESULT, RECORD, RECORDS, boolean, result

PATH_TYPES = ("file", "directory", "symbol")
MAX_TEXT = 4000


def _short(value: str, key: str) -> str:
    if len(value) > MAX_TEXT:
        raise ValidationError(f"{key} is too long ({len(value)} characters; at most {MAX_TEXT})")
    return value


class ClaimArgs(Args):
    resource_type: Word = Field(description="file, directory or symbol.")
    resource_id: ResourceId = Field("", description="e.g. file:src/app.py (or give path).")
    claim_type: Word = Field(description="read, write, review or exclusive.")
    task_id: Id
    ttl_seconds: Annotated[Count, Le(claims_service.MAX_TTL_SECONDS)] = Field(0, description="Default 900.")
    rationale: Text = ""
    agent_id: Id = Field(
        "", description="The claimant (default: the agent your credential names; agents may not name another)."
    )
    run_id: Id = ""
    claim_id: NewId = ""
    path: RepoPath = ""
    paths: Annotated[list[RepoPath], MaxLen(ITEMS_MAX)] = Field([], description="Several files, in one call.")
    symbol: Symbol = ""
    base_hash: Id = ""
    renewable: Flag = True
    resume_policy: Word = ""


def _identity(args: ClaimArgs) -> tuple[str, str, str, str]:
    """(type, clean path, symbol, canonical id) from the arguments; a supplied `resource_id`
    must name the same resource as `resource_type`/`path`/`symbol` (it may fill them in)."""
    resource_type = args.resource_type.strip()
    supplied = args.resource_id.strip()
    raw_path = args.path
    symbol = args.symbol.strip()
    if not supplied and not raw_path.strip():
        if resource_type != "directory":
            raise ValidationError("resource id or resource path is required")
    id_type, id_path, id_symbol = claims_service.parse_resource_id(supplied) if supplied else ("", "", "")
    if supplied and ":" not in supplied:
        id_type = resource_type  # a bare path: the id names a resource of the declared type
    if supplied and id_type != resource_type:
        raise ValidationError(f"resource_id {supplied} does not name a {resource_type} resource")
    path = clean_rel_path(raw_path if raw_path.strip() else id_path)
    if supplied and raw_path.strip() and clean_rel_path(id_path) != path:
        raise ValidationError(f"resource_id {supplied} does not match path {raw_path}")
    if supplied and id_symbol and symbol and id_symbol != symbol:
        raise ValidationError(f"resource_id {supplied} does not match symbol {symbol}")
    symbol = symbol or id_symbol
    if resource_type in ("file", "symbol") and not path:
        raise ValidationError(f"a {resource_type} resource needs a path")
    if resource_type == "symbol" and not symbol:
        raise ValidationError("a symbol resource needs a symbol name (symbol or resource_id symbol:<path>#<name>)")
    if resource_type in PATH_TYPES or not supplied:
        resource_id = claims_service.resource_id_for(resource_type, path, symbol)
    else:
        resource_id = supplied  # other types have no path semantics: the id is the identity
    return resource_type, path, symbol, resource_id


# A file up to this size is hashed on the writer's thread, inside the claim's write job (tens of
# microseconds); a larger one, a directory or a symbol goes to a worker thread first.
HASH_ON_WRITER_BYTES = 256 * 1024


def _prepare_on_writer(root: Path, request: claims_service.ClaimRequest) -> claims_service.ClaimRequest:
    """The bounded preparation of a file claim (path guard, base hash) as `grant`'s `prepare`:
    on the writer's thread, just before the grant; `Unprepared` for anything not bounded."""
    resource = request.resource
    if resource.type != "file" or request.base_hash or not resource.path:
        raise claim_grant.Unprepared
    try:
        base_hash = hashing.file_hash(root, resource.path, max_bytes=HASH_ON_WRITER_BYTES)
    except hashing.LargerThan:
        raise claim_grant.Unprepared from None
    return dataclasses.replace(request, base_hash=base_hash)  # the grant records it as the resource's hash too


def _prepare(root: Path, resource_type: str, path: str, symbol: str, base_hash: str) -> tuple[int, int, str]:
    """Guard the path, find a symbol's span and compute the base hash (blocking; a thread).
    A file's or directory's hash guards the path itself: it is not resolved twice."""
    hashed_here = resource_type in ("file", "directory") and not base_hash
    if resource_type in PATH_TYPES and path and not hashed_here:
        resolve_repo_path(root, path)
    span = (0, 0)
    if resource_type == "symbol":
        span = hashing.symbol_span(root, path, symbol)
    if not base_hash:
        base_hash = hashing.resource_hash(root, resource_type, path, symbol, span)
    return span[0], span[1], base_hash


async def claim(call: Call[ClaimArgs]) -> dict[str, Any]:
    """One claim, or with `paths` one per file (the files a review or a change touches, in the one
    call an agent needs for them): each granted as its own claim, the answer one line per claim."""
    if not call.args.paths:
        return await _claim_one(call, call.args)
    args = call.args
    if args.path or args.resource_id or args.symbol or args.claim_id or args.resource_type.strip() != "file":
        raise ValidationError(
            "paths claims files: give resource_type file and neither path, resource_id, symbol nor claim_id"
        )
    if call.caller.capability is not None:
        # A session's every claim is checked against its scope by the argument it names.
        raise ValidationError("a session claims one path per call (path)")
    if len(set(args.paths)) != len(args.paths):
        raise ValidationError("paths names a file twice")
    claims = []
    for path in args.paths:
        one = await _claim_one(call, args.model_copy(update={"path": path, "paths": []}))
        c = one["claim"]
        claims.append(
            {k: c[k] for k in ("id", "resource_id", "claim_type", "expires_at")} | {"extended": one["extended"]}
        )
    return {"claims": claims}


async def _claim_one(call: Call[ClaimArgs], args: ClaimArgs) -> dict[str, Any]:
    runtime = call.runtime
    # Runtime.call has bound `agent_id` to an agent caller's own id; the operator names the claimant.
    agent_id = args.agent_id.strip()
    task_id = args.task_id.strip()
    claim_type = args.claim_type.strip()
    if not agent_id:
        raise ValidationError("agent id is required")
    resource_type, path, symbol, resource_id = _identity(args)
    if claim_type not in claims_service.MODES:
        raise ValidationError(f"unsupported claim type: {claim_type}")
    claim_id = args.claim_id
    ttl = args.ttl_seconds or claims_service.DEFAULT_TTL_SECONDS
    rationale = _short(args.rationale, "rationale")
    resume_policy = args.resume_policy or "hold"
    base_hash = args.base_hash.strip()
    on_writer = resource_type == "file" and not base_hash
    start, end = 0, 0
    if not on_writer:
        start, end, base_hash = await asyncio.to_thread(_prepare, runtime.root, resource_type, path, symbol, base_hash)
    request = claims_service.ClaimRequest(
        agent_id=agent_id,
        task_id=task_id,
        claim_type=claim_type,
        resource=Resource(
            id=resource_id,
            type=resource_type,
            path=path,
            symbol=symbol,
            language=symbol_index.detect_language(path),
            start_line=start,
            end_line=end,
            current_hash=base_hash,
            metadata_json="{}",
        ),
        ttl_seconds=ttl,
        rationale=rationale,
        run_hint=call.run_hint,  # the claim's events go to its task's run, resolved in the grant (run_scope)
        claim_id=claim_id,
        base_hash=base_hash,
        renewable=args.renewable,
        resume_policy=resume_policy,
        raw_path=args.path,
    )
    if on_writer:
        try:
            granted = await claim_grant.grant(
                runtime.db, request, label=call.tool, prepare=functools.partial(_prepare_on_writer, runtime.root)
            )
        except claim_grant.Unprepared:  # a large file: hashed on a worker thread, then granted
            _, _, base_hash = await asyncio.to_thread(_prepare, runtime.root, resource_type, path, symbol, "")
            request = dataclasses.replace(
                request, base_hash=base_hash, resource=dataclasses.replace(request.resource, current_hash=base_hash)
            )
            granted = await claim_grant.grant(runtime.db, request, label=call.tool)
    else:
        granted = await claim_grant.grant(runtime.db, request, label=call.tool)
    return {
        "claim": granted.claim.to_dict(),
        "resource": granted.resource.to_dict(),
        "extended": granted.extended,
    }


class ReleaseArgs(Args):
    claim_id: Id
    run_id: Id = ""
    actor_id: Id = Field("", description="Who releases (default and only choice for agents: your own agent id).")
    reason: Text = ""


async def release(call: Call[ReleaseArgs]) -> dict[str, Any]:
    args = call.args
    caller = call.caller
    # For an agent caller Runtime.call has bound `actor_id` to its own id (another agent's claim
    # is then refused by the transition); the operator may release any claim.
    actor = args.actor_id.strip() or call.actor
    run_id = args.run_id.strip()
    if run_id and await call.w.scalar("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is None:
        raise NotFound("run", run_id)
    claimed_for = await call.w.scalar("SELECT task_id FROM claims WHERE id = ?", (args.claim_id.strip(),))
    run_id = await resolve(call.w, call.run_hint, owner=await task_run(call.w, str(claimed_for or "")))
    updated, changed = await claims_service.transition(
        call.w,
        args.claim_id.strip(),
        ClaimStatus.RELEASED,
        clock.now(),
        actor_id=actor,
        reason=_short(args.reason, "reason"),
        run_id=run_id,
        operator=caller.is_operator,
    )
    return {"claim": updated.to_dict(), "changed": changed}


class ClaimStatusArgs(PageArgs):
    resource_id: ResourceId = ""
    agent_id: Id = ""
    status: Word = Field("", description="active, released, revoked, suspended or expired.")


async def claim_status(call: Call[ClaimStatusArgs]) -> dict[str, Any]:
    args = call.args
    resource_id, agent_id, status = args.resource_id, args.agent_id, args.status
    page = paging.request("resource.claim_status", [resource_id, agent_id, status], 2, args)
    found, more = paging.finish(
        page,
        await claims_service.list_claims(
            call.r, clock.now(), resource_id=resource_id, agent_id=agent_id, status=status, page=page
        ),
        lambda c: (c.created_at, c.id),
    )
    return {"claims": [c.to_dict() for c in found], **more}


class GetArgs(Args):
    resource_id: ResourceId


def get(conn: sqlite3.Connection, args: GetArgs) -> dict[str, Any]:
    return {"resource": rows.get(conn, Resource, args.resource_id).to_dict()}


class SearchArgs(PageArgs):
    allow_blank = frozenset({"query"})

    query: Query
    resource_type: Word = ""


async def search(call: Call[SearchArgs]) -> dict[str, Any]:
    a = call.args
    query, resource_type = a.query, a.resource_type
    page = paging.request("resource.search", [query, resource_type], 1, a)
    found, more = paging.finish(
        page, await claims_service.search_resources(call.r, query, resource_type, page), lambda r: (r.id,)
    )
    cap = call.caller.capability
    if cap is not None and not call.caller.is_operator:  # a session sees its readable paths only
        scope = await session_scope.load(call.r, cap)
        found = [r for r in found if scope.sees_path(session_scope.clean_path(r.path) or "")]
    return {"resources": [r.to_dict() for r in found], **more}


TOOLS = [
    ToolSpec(
        name="resource.claim",
        description=(
            "Claim files (path or paths), a directory or a symbol before changing or reviewing them; claiming again extends."
        ),
        args=ClaimArgs,
        agent_view=views.claims_for_agent,
        output_schema=result({"claim": RECORD, "resource": RECORD, "extended": boolean(), "claims": RECORDS}),
        handler=claim,
        rare_args=frozenset(
            {"base_hash", "claim_id", "rationale", "renewable", "resource_id", "resume_policy", "run_id", "ttl_seconds"}
        ),
        mode="none",
    ),
    ToolSpec(
        name="resource.claim_status",
        description=("List claims by resource_id, agent_id and/or status (expiry evaluated now), one page at a time."),
        args=ClaimStatusArgs,
        output_schema=result({"claims": RECORDS, **PAGE_RESULT}),
        handler=claim_status,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="resource.get",
        description="Fetch one resource record by id (e.g. file:src/app.py).",
        args=GetArgs,
        output_schema=result({"resource": RECORD}),
        handler=point_handler(get),
        point_read=get,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="resource.release",
        description=("Release a claim of yours (the operator may release any)."),
        args=ReleaseArgs,
        output_schema=result({"claim": RECORD, "changed": boolean()}, required=["claim"]),
        handler=release,
        rare_args=frozenset({"run_id"}),
        idempotent=True,
    ),
    ToolSpec(
        name="resource.search",
        description=(
            "Search known resources by text (id, type, path, symbol), optionally of one resource_type, one page at a time."
        ),
        args=SearchArgs,
        output_schema=result({"resources": RECORDS, **PAGE_RESULT}),
        handler=search,
        mode="read",
        read_only=True,
        idempotent=True,
    ),
]
