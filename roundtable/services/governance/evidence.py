"""What the evidence services (approvals, security reviews, test runs) share: who acts, loading
the proposal a record concerns, the revision that record binds to, and the run it belongs to.

Every approval, review and test run that concerns a proposal records the proposal's
`current_revision` (the sha256 of its current patch, stored at `.roundtable/patches/<sha256>.diff`) at the moment it is written, so gates can
ignore evidence gathered for an older patch. Its events go to the proposal's run
(`ProposalRef.run_id`) unless the call names another (`services.run_scope`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from roundtable.errors import ToolError
from roundtable.services.repository.patches import read_patch
from roundtable.services.run_scope import NO_HINT, RunHint
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Proposal


@dataclass(frozen=True)
class Actor:
    """Who makes a call, as the services need it: operator authority or an agent, the name to
    record, for capability sessions the role and the proposal the session is bound to, and what
    the caller says about the run (`runs`: the capability's run, the caller's own)."""

    operator: bool
    name: str
    agent_id: str = ""
    transport: str = ""
    session_id: str = ""
    role: str = ""
    bound_proposal_id: str = ""
    runs: RunHint = NO_HINT
    internal: bool = False  # an owner component (Chair, supervisor, dispatcher), never a human

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
    run_id: str = ""


async def load_proposal(q: Reader | Tx, proposal_id: str) -> Proposal:
    """The proposal `proposal_id`, or `get proposal <id>: not found`."""
    proposal = await q.get(Proposal, proposal_id)
    return proposal


async def proposal_ref(q: Reader | Tx, proposal_id: str) -> ProposalRef:
    p = await load_proposal(q, proposal_id)
    return ProposalRef(p.id, p.task_id, p.agent_id, p.status, p.risk, p.current_revision, p.run_id)


def read_revision_patch(root: Path, proposal: ProposalRef) -> str:
    """The patch text of the proposal's current revision, verified against its hash (blocking
    file I/O: call it in a worker thread)."""
    if not proposal.revision:
        raise ToolError(f"proposal {proposal.id} has no patch revision")
    return read_patch(root, proposal.revision)
