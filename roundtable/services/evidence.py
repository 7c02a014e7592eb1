"""What the evidence services (approvals, security reviews, test runs) share: loading the
proposal a record concerns, the revision that record binds to, and the run its events go to.

Every approval, review and test run that concerns a proposal records the proposal's
`current_revision` (the sha256 of its current patch, stored at `.roundtable/patches/<sha256>.diff`) at the moment it is written, so gates can
ignore evidence gathered for an older patch (DESIGN §4.7).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from roundtable.errors import ToolError
from roundtable.services.patches import read_patch
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Proposal


@dataclass(frozen=True)
class Actor:
    """Who makes a call, as the services need it: operator authority or an agent, the name to
    record, and for capability sessions the role and the proposal the session is bound to."""

    operator: bool
    name: str
    agent_id: str = ""
    transport: str = ""
    session_id: str = ""
    role: str = ""
    bound_proposal_id: str = ""

    @property
    def on_session(self) -> bool:
        return bool(self.role)


@dataclass(frozen=True)
class ProposalRef:
    """The proposal a record concerns, as it was when the record was written."""

    id: str
    task_id: str
    agent_id: str
    status: str
    risk: str
    revision: str


async def load_proposal(q: Reader | Tx, proposal_id: str) -> Proposal:
    """The proposal `proposal_id`, or `get proposal <id>: not found`."""
    proposal = await q.get(Proposal, proposal_id)
    return proposal


async def proposal_ref(q: Reader | Tx, proposal_id: str) -> ProposalRef:
    p = await load_proposal(q, proposal_id)
    return ProposalRef(p.id, p.task_id, p.agent_id, p.status, p.risk, p.current_revision)


def read_revision_patch(root: Path, proposal: ProposalRef) -> str:
    """The patch text of the proposal's current revision, verified against its hash (blocking
    file I/O: call it in a worker thread)."""
    if not proposal.revision:
        raise ToolError(f"proposal {proposal.id} has no patch revision")
    return read_patch(root, proposal.revision)


async def event_run_id(q: Reader | Tx) -> str:
    """The run events are attached to: the most recently started active run, else `""`."""
    value = await q.scalar("SELECT id FROM runs WHERE status = 'active' ORDER BY started_at DESC, id DESC LIMIT 1")
    return str(value) if value else ""
