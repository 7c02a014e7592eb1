"""Resources and claims: `resource.claim`, `resource.release`, `resource.claim_status`,
`resource.get`, `resource.search`.

`resource.claim` manages its own transactions (mode `none`), in
`services.coordination.claims.claiming`, which receives its arguments whole: the conflict check
and the grant run in one write transaction; a refusal rolls that transaction back and the
contention rows are committed in a second one.
"""

from __future__ import annotations

import sqlite3
from typing import Annotated, Any

from annotated_types import MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.domain import ClaimStatus
from roundtable.errors import NotFound
from roundtable.services import paging
from roundtable.services.args import (
    Args,
    Id,
    PageArgs,
    Query,
    ResourceId,
    Text,
    Word,
)
from roundtable.services.coordination import claims as claims_service
from roundtable.services.coordination import session_scope
from roundtable.services.coordination.claims import claiming
from roundtable.services.coordination.claims.claiming import ClaimArgs
from roundtable.services.run_scope import resolve, task_run
from roundtable.store import rows
from roundtable.store.records import Resource
from roundtable.tools import views
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec, point_handler
from roundtable.tools.schema import PAGE_RESULT, RECORD, RECORDS, boolean, result


async def claim(call: Call[ClaimArgs]) -> dict[str, Any]:
    return await claiming.claim(
        call.runtime, call.args, runs=call.run_hint, on_session=call.caller.capability is not None
    )


class ReleaseArgs(Args):
    claim_id: Id
    run_id: Id = ""
    actor_id: Id = Field("", description="Who releases (default and only choice for agents: your own agent id).")
    reason: Annotated[Text, MaxLen(claiming.MAX_TEXT)] = ""


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
        reason=args.reason,
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
            "Claim files (path or paths), a directory or a symbol; before changing or reviewing them; claiming again extends."
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
        description="Release your claim; the operator may release any.",
        args=ReleaseArgs,
        output_schema=result({"claim": RECORD, "changed": boolean()}, required=["claim"]),
        handler=release,
        rare_args=frozenset({"run_id", "reason"}),
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
