"""`resource.claim`, from its arguments to a grant: the resource's identity from the arguments
(`_identity`), its preparation (path guard, span, base hash), and the grant in the claim's own
transactions (`grant`).

A file's path guard and content hash run on the writer's thread inside the claim's write job
(bounded: a file of at most `HASH_ON_WRITER_BYTES`); a larger file, a directory's hash and a
symbol's span are computed in a worker thread *before* the write lock is taken. The operation's
arguments are declared here (`ClaimArgs`) and received whole by `claim`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from annotated_types import Le, MaxLen
from pydantic import Field

from roundtable.errors import ValidationError
from roundtable.services.args import ITEMS_MAX, Args, Count, Flag, Id, NewId, RepoPath, ResourceId, Symbol, Text, Word
from roundtable.services.coordination.claims import grant as grant_module
from roundtable.services.coordination.claims.acquire import ClaimRequest, Granted
from roundtable.services.coordination.claims.model import (
    DEFAULT_TTL_SECONDS,
    MAX_TTL_SECONDS,
    MODES,
    parse_resource_id,
    resource_id_for,
)
from roundtable.services.repository import hashing
from roundtable.services.repository import symbols as symbol_index
from roundtable.services.repository.pathguard import clean_rel_path, resolve_repo_path
from roundtable.services.run_scope import RunHint
from roundtable.store.records import Resource

if TYPE_CHECKING:
    from roundtable.services.project import Project

TOOL = "resource.claim"
PATH_TYPES = ("file", "directory", "symbol")
MAX_TEXT = 4000  # a rationale's or a release reason's characters


class ClaimArgs(Args):
    # `resource.claim`.
    resource_type: Word = Field(description="file, directory or symbol.")
    resource_id: ResourceId = Field(default="", description="e.g. file:src/app.py (or give path).")
    claim_type: Word = Field(description="read, write, review or exclusive.")
    task_id: Id
    ttl_seconds: Annotated[Count, Le(MAX_TTL_SECONDS)] = Field(default=0, description="Default 900.")
    rationale: Annotated[Text, MaxLen(MAX_TEXT)] = ""
    agent_id: Id = Field(
        default="", description="The claimant (default: the agent your credential names; agents may not name another)."
    )
    run_id: Id = ""
    claim_id: NewId = ""
    path: RepoPath = ""
    paths: Annotated[list[RepoPath], MaxLen(ITEMS_MAX)] = Field(default=[], description="Several files, in one call.")
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
    id_type, id_path, id_symbol = parse_resource_id(supplied) if supplied else ("", "", "")
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
        resource_id = resource_id_for(resource_type, path, symbol)
    else:
        resource_id = supplied  # other types have no path semantics: the id is the identity
    return resource_type, path, symbol, resource_id


# A file up to this size is hashed on the writer's thread, inside the claim's write job (tens of
# microseconds); a larger one, a directory or a symbol goes to a worker thread first.
HASH_ON_WRITER_BYTES = 256 * 1024


def _prepare_on_writer(root: Path, request: ClaimRequest) -> ClaimRequest:
    """The bounded preparation of a file claim (path guard, base hash) as `grant`'s `prepare`:
    on the writer's thread, just before the grant; `Unprepared` for anything not bounded."""
    resource = request.resource
    if resource.type != "file" or request.base_hash or not resource.path:
        raise grant_module.Unprepared
    try:
        base_hash = hashing.file_hash(root, resource.path, max_bytes=HASH_ON_WRITER_BYTES)
    except hashing.LargerThan:
        raise grant_module.Unprepared from None
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


async def claim(project: Project, args: ClaimArgs, *, runs: RunHint, on_session: bool) -> dict[str, Any]:
    """`resource.claim`: one claim, or with `paths` one per file (the files a review or a change
    touches, in the one call an agent needs for them): each granted as its own claim, the answer
    one line per claim. `runs` resolves the claim's run; `on_session` (a capability session's
    call) allows one path per call, as its scope is checked by the argument it names."""
    if not args.paths:
        return await _claim_one(project, args, runs)
    if args.path or args.resource_id or args.symbol or args.claim_id or args.resource_type.strip() != "file":
        raise ValidationError(
            "paths claims files: give resource_type file and neither path, resource_id, symbol nor claim_id"
        )
    if on_session:
        # A session's every claim is checked against its scope by the argument it names.
        raise ValidationError("a session claims one path per call (path)")
    if len(set(args.paths)) != len(args.paths):
        raise ValidationError("paths names a file twice")
    # Every file in one transaction: a conflict on any of them claims none (nothing half done).
    requests = [
        await _request(project, args.model_copy(update={"path": path, "paths": []}), runs) for path in args.paths
    ]
    granted = await _grant(project, requests)
    claims = [
        {k: g.claim.to_dict()[k] for k in ("id", "resource_id", "claim_type", "expires_at")} | {"extended": g.extended}
        for g in granted
    ]
    return {"claims": claims}


async def _claim_one(project: Project, args: ClaimArgs, runs: RunHint) -> dict[str, Any]:
    (granted,) = await _grant(project, [await _request(project, args, runs)])
    return {
        "claim": granted.claim.to_dict(),
        "resource": granted.resource.to_dict(),
        "extended": granted.extended,
    }


async def _request(project: Project, args: ClaimArgs, runs: RunHint) -> ClaimRequest:
    """The grant `args` ask for (a symbol's span, a directory's or a given file's hash computed
    here, on a worker thread; a file's own hash is left to `_grant`)."""
    # Runtime.call has bound `agent_id` to an agent caller's own id; the operator names the claimant.
    agent_id = args.agent_id.strip()
    task_id = args.task_id.strip()
    claim_type = args.claim_type.strip()
    if not agent_id:
        raise ValidationError("agent id is required")
    resource_type, path, symbol, resource_id = _identity(args)
    if claim_type not in MODES:
        raise ValidationError(f"unsupported claim type: {claim_type}")
    claim_id = args.claim_id
    ttl = args.ttl_seconds or DEFAULT_TTL_SECONDS
    rationale = args.rationale
    resume_policy = args.resume_policy or "hold"
    base_hash = args.base_hash.strip()
    on_writer = resource_type == "file" and not base_hash
    start, end = 0, 0
    if not on_writer:
        start, end, base_hash = await asyncio.to_thread(_prepare, project.root, resource_type, path, symbol, base_hash)
    return ClaimRequest(
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
        run_hint=runs,  # the claim's events go to its task's run, resolved in the grant (run_scope)
        claim_id=claim_id,
        base_hash=base_hash,
        renewable=args.renewable,
        resume_policy=resume_policy,
        raw_path=args.path,
    )


async def _grant(project: Project, requests: list[ClaimRequest]) -> list[Granted]:
    """Grant `requests` together. A file's hash (none given) is computed on the writer's thread
    when bounded; if one is not (a large file), every such hash is computed on a worker thread
    first and the grant asked again (the first attempt wrote nothing)."""
    if not any(_hashed_on_writer(r) for r in requests):
        return await grant_module.grant_all(project.db, requests, label=TOOL)
    try:
        return await grant_module.grant_all(
            project.db, requests, label=TOOL, prepare=functools.partial(_prepare_on_writer, project.root)
        )
    except grant_module.Unprepared:
        hashed = [await _hashed_in_thread(project.root, r) if _hashed_on_writer(r) else r for r in requests]
        return await grant_module.grant_all(project.db, hashed, label=TOOL)


def _hashed_on_writer(request: ClaimRequest) -> bool:
    return request.resource.type == "file" and not request.base_hash


async def _hashed_in_thread(root: Path, request: ClaimRequest) -> ClaimRequest:
    resource = request.resource
    _, _, base_hash = await asyncio.to_thread(_prepare, root, resource.type, resource.path, resource.symbol, "")
    resource = dataclasses.replace(resource, current_hash=base_hash)
    return dataclasses.replace(request, base_hash=base_hash, resource=resource)
