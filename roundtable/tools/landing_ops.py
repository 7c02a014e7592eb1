"""Keeping `branch` and `pull-request` landings current: `landing.sync` (the operator, for one
proposal: `roundtable land P-…`) and `landing.refresh` (the owner's own loop, for every open
proposal). The work lives in `services.applying.branch_apply`; both manage their own
transactions (mode `none`): git and the forge are called between them, never inside one."""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field

from roundtable.domain import OPEN_PROPOSAL_STATUSES
from roundtable.errors import ToolError
from roundtable.services.applying import branch_apply, landing
from roundtable.services.args import Args, Id
from roundtable.tools.context import Call
from roundtable.tools.registry import ToolSpec

log = logging.getLogger(__name__)
_OBJECT: dict[str, Any] = {"type": "object"}
SYNCED_MODES = ("branch", "pull-request")


class SyncArgs(Args):
    proposal_id: Id
    mode: Literal["", "branch", "pull-request"] = Field("", description="Landing mode (default: the config's).")


async def sync(call: Call[SyncArgs]) -> dict[str, Any]:
    out = await branch_apply.sync(call.runtime, call.args.proposal_id, mode=call.args.mode)
    async with call.runtime.db.read() as r:
        row = await landing.landing_of(r, call.args.proposal_id)
    return {**out, "landing": row.to_dict() if row else None}


class RefreshArgs(Args):
    pass


async def refresh(call: Call[RefreshArgs]) -> dict[str, Any]:
    """Sync every open proposal with a revision when the configured mode keeps a branch, and
    close the pull requests of proposals decided otherwise (rejected, withdrawn); one proposal's
    failure (the forge unreachable, a patch that no longer applies) is reported and the others
    go on."""
    if call.runtime.config.landing.mode not in SYNCED_MODES:
        return {"synced": [], "closed": [], "errors": []}
    statuses = sorted(OPEN_PROPOSAL_STATUSES)
    marks = ", ".join("?" for _ in statuses)
    async with call.runtime.db.read() as r:
        rows = await r.fetchall(
            f"SELECT id FROM proposals WHERE status IN ({marks}) AND current_revision != '' ORDER BY created_at, id",
            tuple(statuses),
        )
    synced: list[str] = []
    errors: list[dict[str, str]] = []
    for (proposal_id,) in rows:
        try:
            await branch_apply.sync(call.runtime, str(proposal_id))
            synced.append(str(proposal_id))
        except ToolError as exc:
            errors.append({"proposal_id": str(proposal_id), "error": str(exc)})
    closed: list[str] = []
    try:
        closed = await branch_apply.close_decided(call.runtime)
    except ToolError as exc:
        errors.append({"proposal_id": "", "error": f"closing pull requests: {exc}"})
    return {"synced": synced, "closed": closed, "errors": errors}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="landing.sync",
        description=(
            "Operator only: bring a proposal's landing branch (and pull request) to its current revision "
            "and read the forge's checks and review comments for that commit."
        ),
        args=SyncArgs,
        output_schema=_OBJECT,
        handler=sync,
        mode="none",
        audience="operator",
    ),
    ToolSpec(
        name="landing.refresh",
        description="Sync the landing of every open proposal (the owner's loop).",
        args=RefreshArgs,
        output_schema=_OBJECT,
        handler=refresh,
        mode="none",
        audience="internal",
    ),
]
