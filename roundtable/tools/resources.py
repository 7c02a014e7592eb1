"""Resources and claims: `resource.claim`, `resource.release`, `resource.claim_status`,
`resource.get`, `resource.search`."""

from __future__ import annotations

from roundtable.tools.registry import ToolSpec, not_implemented
from roundtable.tools.schema import RECORD, RECORDS, boolean, integer, obj, result, string

TOOLS = [
    ToolSpec(
        name="resource.claim",
        description=(
            "Claim a file, directory or symbol before working on it. claim_type is read, write, "
            "review or exclusive; conflicting claims are refused with the holder named. Claims "
            "expire after ttl_seconds (default 900); claiming again extends your own claim."
        ),
        input_schema=obj(
            {
                "resource_type": string("file, directory or symbol."),
                "resource_id": string("e.g. file:src/app.py (derived from path when omitted)."),
                "claim_type": string("read, write, review or exclusive."),
                "task_id": string("The task you work on."),
                "ttl_seconds": integer("Lifetime in seconds (default 900)."),
                "rationale": string("Why you need it."),
                "agent_id": string("The claimant (your agent id)."),
                "run_id": string("Run to record the event in."),
                "claim_id": string("Explicit claim id (default: generated)."),
                "path": string("Repository-relative path of the resource."),
                "symbol": string("Symbol name, for symbol resources."),
                "base_hash": string("Content hash your work is based on."),
                "renewable": boolean("Whether the claim may be extended (default true)."),
                "resume_policy": string("What happens on resume (default hold)."),
            },
            ["resource_type", "resource_id", "claim_type", "task_id"],
        ),
        output_schema=result({"claim": RECORD, "resource": RECORD}, required=["claim"]),
        handler=not_implemented("resource.claim"),
    ),
    ToolSpec(
        name="resource.claim_status",
        description="List claims, filtered by resource_id, agent_id and/or status; expiry is evaluated now.",
        input_schema=obj(
            {
                "resource_id": string("Exact resource id."),
                "agent_id": string("Exact agent id."),
                "status": string("Exact status."),
            }
        ),
        output_schema=result({"claims": RECORDS}),
        handler=not_implemented("resource.claim_status"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="resource.get",
        description="Fetch one resource record by id.",
        input_schema=obj({"resource_id": string("e.g. file:src/app.py")}, ["resource_id"]),
        output_schema=result({"resource": RECORD}),
        handler=not_implemented("resource.get"),
        mode="read",
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="resource.release",
        description="Release one of your claims (the operator may release any).",
        input_schema=obj(
            {
                "claim_id": string("The claim to release."),
                "run_id": string("Run to record the event in."),
                "actor_id": string("Who releases (your agent id)."),
                "reason": string("Why."),
            },
            ["claim_id"],
        ),
        output_schema=result({"claim": RECORD}),
        handler=not_implemented("resource.release"),
        idempotent=True,
    ),
    ToolSpec(
        name="resource.search",
        description="Search known resources by id, type, path, symbol or language (empty query lists all).",
        input_schema=obj(
            {"query": string("Case-insensitive text."), "resource_type": string("Exact type filter.")}, ["query"]
        ),
        output_schema=result({"resources": RECORDS}),
        handler=not_implemented("resource.search"),
        mode="read",
        read_only=True,
        idempotent=True,
        allow_blank=frozenset({"query"}),
    ),
]
