"""Proposals and their patch revisions.

A proposal owns an ordered list of revisions (`patch_revisions`); each is a patch stored
content-addressed under `.roundtable/patches/<sha256>.diff`, with the touched files and the
fencing numbers of the claims that covered it. The proposal's `current_revision` is the sha256
of the newest one. Attaching a patch adds a revision (a proposal under review is put up for review again), and
so makes every vote, approval, review and test run bound to an older revision stale (they are
kept, but gates only look at the current revision).

State machine: `pending` → `in_review` (review requested) → `accepted` (applied) or `rejected`;
an applied transaction that is rolled back leaves `rolled_back`. Attach, apply and reject are
allowed only from `pending`/`in_review`.

A proposal belongs to one run (`run_id`), fixed when it is created: its task's run unless the
call names one (`services.run_scope`). Its events, and those of decisions about it, go to that run.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from annotated_types import MaxLen
from pydantic import Field

from roundtable import clock
from roundtable.domain import ClaimStatus, EventType, GateState, ProposalStatus, Risk
from roundtable.errors import NotFound, PatchDoesNotApply, PermissionDenied, ToolError, ValidationError
from roundtable.services.args import (
    ITEMS_MAX,
    Args,
    Command,
    Id,
    NewId,
    OpenProposalStatus,
    Patch,
    ResourceIds,
    RiskWord,
    Text,
    Title,
    identity,
)
from roundtable.services.coordination import quotas
from roundtable.services.coordination.claims import (
    check_resource_id,
    expired_note,
    parse_resource_id,
    unclaimed_resources,
)
from roundtable.services.coordination.session_scope import Scope
from roundtable.services.coordination.session_scope import where as scope_where
from roundtable.services.governance.approvals import close_moot
from roundtable.services.governance.gates import OPEN_STATUSES, check_claims, current_votes
from roundtable.services.paging import PageRequest, after
from roundtable.services.policy.engine import Policy
from roundtable.services.project import Project
from roundtable.services.repository.applies import check_applies
from roundtable.services.repository.edits import Edit, FileWrite, build_patch
from roundtable.services.repository.patches import (
    ParsedPatch,
    allowances,
    check_patch,
    parse_patch,
    read_patch,
    store_patch,
)
from roundtable.services.run_scope import NO_HINT, RunHint, object_run, resolve, task_run
from roundtable.store.db import Reader, Tx
from roundtable.store.records import Agent, Claim, Decision, PatchRevision, Proposal, ProposalResource

MAX_EXPECTED_TESTS = 50

_EDITS = "Instead of patch: replacements, in order; each old_string occurs once (or replace_all)."
_FILES = "Instead of patch: whole contents of new or rewritten files."
Edits = Annotated[list[Edit], MaxLen(ITEMS_MAX)]
Files = Annotated[list[FileWrite], MaxLen(ITEMS_MAX)]


class CreateArgs(Args):
    # `proposal.create`: what `create` records, and what the patch is built from.
    task_id: Id
    agent_id: Id = Field(
        default="", description="The author (default: the agent your credential names; agents may not name another)."
    )
    title: Title
    summary_md: Text = Field(description="What and why.")
    affected_resources: ResourceIds = Field(
        default=[], description="Resource ids beyond the touched files, e.g. directory:src."
    )
    risk: RiskWord = Field(
        default=Risk.NORMAL, description="Default normal; high and critical need a human's approval."
    )
    patch: Patch = Field(default="", description="Unified diff, git format (a/ b/ prefixes).")
    edits: Edits = Field(default=[], description=_EDITS)
    files: Files = Field(default=[], description=_FILES)
    expected_tests: Annotated[list[Command], MaxLen(MAX_EXPECTED_TESTS)] = []
    rollback_notes: Text = ""
    proposal_id: NewId = ""
    status: OpenProposalStatus = ProposalStatus.PENDING


class AttachArgs(Args):
    # `proposal.attach_patch`: a new revision of `proposal_id`.
    proposal_id: Id
    patch: Patch = Field(default="", description="The whole new diff against the tree.")
    edits: Edits = Field(default=[], description="Instead of patch: replacements made on top of the current revision.")
    files: Files = Field(default=[], description=_FILES)
    affected_resources: ResourceIds = []


class DecisionArgs(Args):
    # `decision.record`.
    decision: Text
    rationale_md: Text
    decided_by: Id = Field(default="", description="Who decided (default, and the only choice for agents: the caller).")
    proposal_id: Id = ""
    task_id: Id = ""
    decision_id: NewId = ""


def proposal_dict(p: Proposal) -> dict[str, Any]:
    """A proposal as results show it: the record plus `expected_tests` as a list."""
    out = p.to_dict()
    try:
        out["expected_tests"] = json.loads(p.expected_tests_json or "[]")
    except ValueError:
        out["expected_tests"] = []
    return out


async def load(q: Reader | Tx, proposal_id: str) -> Proposal:
    p = await q.get(Proposal, proposal_id)
    return p


async def links(q: Reader | Tx, proposal_id: str) -> list[ProposalResource]:
    return await q.all(
        ProposalResource, "SELECT * FROM proposal_resources WHERE proposal_id = ? ORDER BY resource_id", (proposal_id,)
    )


async def revisions(q: Reader | Tx, proposal_id: str) -> list[PatchRevision]:
    return await q.all(
        PatchRevision, "SELECT * FROM patch_revisions WHERE proposal_id = ? ORDER BY number", (proposal_id,)
    )


def merge_resources(explicit: list[str], touched: tuple[str, ...]) -> list[str]:
    """Explicit ids (deduplicated, blanks dropped), then `file:<path>` for every touched
    path not already covered by an explicit file/symbol id on it or a directory containing it."""
    ids = list(dict.fromkeys(i.strip() for i in explicit if i.strip()))
    covered: set[str] = set()
    dirs: list[str] = []
    for rid in ids:
        kind, path, _symbol = parse_resource_id(rid)
        if kind in ("file", "symbol"):
            covered.add(path)
        elif kind == "directory":
            dirs.append(path.strip("/"))
    for path in touched:
        if path in covered or any(d == "" or path == d or path.startswith(d + "/") for d in dirs):
            continue
        rid = f"file:{path}"
        if rid not in ids:
            ids.append(rid)
    return ids


async def _link_resources(tx: Tx, proposal_id: str, ids: list[str]) -> None:
    for rid in ids:
        kind, path, symbol = parse_resource_id(rid)
        await tx.execute(
            "INSERT OR IGNORE INTO resources (id, type, path, symbol) VALUES (?, ?, ?, ?)",
            (rid, kind, path, symbol or None),
        )
    await tx.execute("DELETE FROM proposal_resources WHERE proposal_id = ?", (proposal_id,))
    for rid in ids:
        await tx.insert("proposal_resources", {"proposal_id": proposal_id, "resource_id": rid})


def check_author(caller_agent: str, is_operator: bool, agent_id: str, what: str) -> None:
    """An agent caller acts only as itself."""
    if not is_operator and caller_agent and caller_agent != agent_id:
        raise PermissionDenied(f"{what}: you are {caller_agent}, not {agent_id}")


async def prepare_revision(project: Project, patch: str) -> ParsedPatch:
    """A new revision's patch, checked before any database work: bounded (the project's
    `repo.max_patch_files`, the byte limit), parsed and hashed on a worker thread (never on the
    event loop), and checked against git's own reading and the tree. A caller runs it before its
    write transaction and hands the result to `create`/`attach`."""
    root, policy = project.root, project.policy
    allow = allowances(policy)
    parsed = await asyncio.to_thread(parse_patch, patch, root, allow, max_files=project.config.repo.max_patch_files)
    await check_patch(root, parsed, allow)
    # git's dry run too, outside the write lock (a child process every other writer would wait
    # on); its refusal is kept and raised in the transaction after the claim checks, so the
    # errors come in the same order. A patch.apply runs its own dry run on the tree it applies to.
    try:
        await check_applies(root, parsed)
    except PatchDoesNotApply as refusal:
        return replace(parsed, tree_refusal=str(refusal))
    return replace(parsed, tree_refusal="")


async def patch_text(project: Project, args: CreateArgs | AttachArgs, current: Proposal | None = None) -> str:
    """The patch a create or attach call gives: `patch` as sent, or the diff the server builds
    from `edits`/`files` — against the tree, on top of `current`'s revision for a revision."""
    if args.patch and (args.edits or args.files):
        raise ValidationError("give either patch or edits/files, not both")
    if args.patch:
        return args.patch
    if not args.edits and not args.files:
        raise ValidationError("argument patch must not be empty: give a patch, or edits and/or files to build one from")
    root = project.root
    prior: str = ""
    prior_paths: tuple[str, ...] = ()
    if current is not None and current.current_revision:
        prior = read_patch(root, current.current_revision)
        prior_paths = parse_patch(prior, root, allowances(project.policy)).touched
    return await build_patch(
        root,
        list(args.edits),
        list(args.files),
        max_bytes=project.config.repo.max_read_bytes,
        on_top_of=prior,
        on_top_of_paths=prior_paths,
    )


async def _check_affected(tx: Tx, author: str, explicit: list[str], now: str) -> None:
    """Every resource the author lists must be one they hold a live write claim on."""
    ids = [i.strip() for i in explicit if i.strip()]
    for rid in ids:
        check_resource_id(rid)
    missing = await unclaimed_resources(tx, author, ids, now)
    if missing:
        note = await expired_note(tx, author, missing[0], now)
        raise ToolError(f"unclaimed affected resource: {missing[0]}{note}")


async def _new_revision(
    tx: Tx, root: Path, proposal_id: str, number: int, author: str, parsed: ParsedPatch, now: str
) -> dict[str, int]:
    check = await check_claims(tx, author, parsed, now)
    if check.error:
        raise ToolError(check.error)
    # Then it must apply to the tree (`git apply --check`): a patch that does not is refused with
    # the failing hunk and the file's lines, and nothing is recorded.
    if parsed.tree_refusal is None:
        await check_applies(root, parsed)
    elif parsed.tree_refusal:
        raise PatchDoesNotApply(parsed.tree_refusal)
    # The file first, then the row that names it (committed by the caller's transaction).
    rel = await asyncio.to_thread(store_patch, root, parsed)
    await tx.insert(
        "patch_revisions",
        {
            "proposal_id": proposal_id,
            "number": number,
            "sha256": parsed.sha256,
            "patch_path": rel,
            "touched_files_json": json.dumps(list(parsed.touched)),
            "claim_fences_json": json.dumps(check.fences, sort_keys=True),
            "agent_id": author,
            "created_at": now,
        },
    )
    return check.fences


async def create(
    tx: Tx,
    project: Project,
    args: CreateArgs,
    revision: ParsedPatch,
    *,
    session_id: str = "",
    runs: RunHint = NO_HINT,
    counted_agent: str = "",
) -> dict[str, Any]:
    """A new proposal with `revision` (`args`' patch, from `prepare_revision` before the caller's
    transaction, so the write lock is not held for it) as its first revision. `session_id`: the
    proposing session's, if any. `counted_agent` is the agent whose proposal quotas (the
    project's `limits`, `coordination.quotas`) the new proposal counts against: the acting agent,
    "" for the operator and the owner's components."""
    agent_id = identity(args.agent_id, "agent_id", "proposal.create")
    proposal_id = args.proposal_id or clock.new_id("P")
    task_id = args.task_id.strip()
    title, summary_md, risk = args.title, args.summary_md, args.risk
    affected_resources = args.affected_resources
    tests = [t.strip() for t in args.expected_tests if t.strip()]
    task = await tx.scalar("SELECT id FROM tasks WHERE id = ?", (task_id,))
    if task is None:
        raise NotFound("task", task_id)
    if await tx.scalar("SELECT 1 FROM proposals WHERE id = ?", (proposal_id,)):
        raise ToolError(f"proposal {proposal_id} already exists; use proposal.attach_patch to revise it")
    now = clock.now()
    await _check_affected(tx, agent_id, affected_resources, now)
    fences = await _new_revision(tx, project.root, proposal_id, 1, agent_id, revision, now)
    run = await resolve(tx, runs, owner=await task_run(tx, task_id))
    await tx.insert(
        "proposals",
        {
            "id": proposal_id,
            "run_id": run,
            "task_id": task_id,
            "agent_id": agent_id,
            "title": title,
            "summary_md": summary_md,
            "patch_path": f".roundtable/patches/{revision.sha256}.diff",
            "status": args.status,
            "risk": risk,
            "current_revision": revision.sha256,
            "revision_number": 1,
            "expected_tests_json": json.dumps(tests),
            "rollback_notes": args.rollback_notes,
            "proposer_session_id": session_id or None,
            "created_at": now,
            "updated_at": now,
        },
    )
    ids = merge_resources(affected_resources, revision.touched)
    await _link_resources(tx, proposal_id, ids)
    await tx.append_event(
        run,
        EventType.PROPOSAL_CREATED,
        {
            "proposal_id": proposal_id,
            "title": title,
            "revision": revision.sha256,
            "revision_number": 1,
            "files": list(revision.touched),
            "claim_fences": fences,
            "risk": risk,
        },
        actor_id=agent_id,
        task_id=task_id,
    )
    await quotas.check(tx, project.config.limits, "proposal", run_id=run, agent_id=counted_agent)
    return await view(tx, proposal_id)


async def attach(
    tx: Tx, project: Project, args: AttachArgs, revision: ParsedPatch, *, actor: str, runs: RunHint = NO_HINT
) -> dict[str, Any]:
    """A new revision of an open proposal (`revision` prepared as for `create`)."""
    proposal_id, affected_resources = args.proposal_id, args.affected_resources
    p = await load(tx, proposal_id)
    if p.status not in OPEN_STATUSES:
        raise ToolError(
            f"proposal {proposal_id} is {p.status}; patches can be attached only while pending or in_review"
        )
    now = clock.now()
    await _check_affected(tx, p.agent_id, affected_resources, now)
    if revision.sha256 == p.current_revision:
        return await view(tx, proposal_id)  # the same bytes: nothing to revise
    number = p.revision_number + 1
    fences = await _new_revision(tx, project.root, proposal_id, number, p.agent_id, revision, now)
    stale = {}
    for table in ("votes", "human_approvals", "security_reviews", "test_runs"):
        stale[table] = int(
            await tx.scalar(
                f"SELECT COUNT(*) FROM {table} WHERE proposal_id = ? AND revision IS NOT ?",
                (proposal_id, revision.sha256),
            )
        )
    await tx.update(
        "proposals",
        {"id": proposal_id},
        {
            "current_revision": revision.sha256,
            "revision_number": number,
            "patch_path": f".roundtable/patches/{revision.sha256}.diff",
            "status": ProposalStatus.PENDING,
            "vote_state": GateState.PENDING,
            "policy_state": GateState.PENDING,
            "approval_state": GateState.PENDING,
            "updated_at": now,
        },
    )
    existing = [link.resource_id for link in await links(tx, proposal_id)]
    ids = merge_resources([*existing, *affected_resources], revision.touched)
    await _link_resources(tx, proposal_id, ids)
    run = await resolve(tx, runs, owner=p.run_id)
    await close_moot(tx, proposal_id, f"superseded by revision {number}", run_id=run, keep_revision=revision.sha256)
    await tx.append_event(
        run,
        EventType.PROPOSAL_REVISED,
        {
            "proposal_id": proposal_id,
            "previous_revision": p.current_revision,
            "revision": revision.sha256,
            "revision_number": number,
            "files": list(revision.touched),
            "claim_fences": fences,
            "stale": stale,
        },
        actor_id=actor,
        task_id=p.task_id,
    )
    if p.status == ProposalStatus.IN_REVIEW:
        # A revision answers its review: a proposal that was under review is put up for review
        # again at once (a `proposal.review_requested` for the new revision), so the author need
        # not ask again.
        await request_review(tx, project.root, project.policy, proposal_id, actor, runs)
    return await view(tx, proposal_id)


async def view(q: Reader | Tx, proposal_id: str) -> dict[str, Any]:
    p = await load(q, proposal_id)
    return {
        "proposal": proposal_dict(p),
        "proposal_resources": [link.to_dict() for link in await links(q, proposal_id)],
    }


async def detail(q: Reader | Tx, root: Path, policy: Policy, proposal_id: str) -> dict[str, Any]:
    """`proposal.get`: the record, links, revisions, the current patch text and the gates
    (without the dry run, which needs git)."""
    from roundtable.services.governance.gates import evaluate

    out = await view(q, proposal_id)
    p = await load(q, proposal_id)
    out["revisions"] = [r.to_dict() for r in await revisions(q, proposal_id)]
    patch_text = ""
    patch_error = ""
    if p.current_revision:
        try:
            patch_text = read_patch(root, p.current_revision)
        except ToolError as exc:
            patch_error = str(exc)
    out["patch"] = patch_text
    out["patch_error"] = patch_error
    report = await evaluate(q, root, policy, p, clock.now())
    out["gates"] = report.summary()
    out["policy"] = report.policy.to_dict() if report.policy else None
    return out


PROPOSAL_ORDER = ("created_at", "id")


async def listing(
    q: Reader | Tx, task_id: str, status: str, scope: Scope | None = None, page: PageRequest | None = None
) -> list[dict[str, Any]]:
    """Proposals in creation order, filtered by task and status; only those `scope` may read
    when one is given (a session's). With `page`: at most one more than its limit, after its key."""
    sql = "SELECT * FROM proposals"
    where: list[str] = []
    params: list[Any] = []
    scoped, scoped_params = scope_where(scope, "proposals")
    if scoped:
        where.append(scoped)
        params.extend(scoped_params)
    if task_id:
        where.append("task_id = ?")
        params.append(task_id)
    if status:
        where.append("status = ?")
        params.append(status)
    limit = ""
    if page is not None:
        if page.key is not None:
            after_sql, after_params = after(PROPOSAL_ORDER, page.key)
            where.append(after_sql)
            params.extend(after_params)
        limit = f" LIMIT {page.limit + 1}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    rows = await q.all(Proposal, sql + f" ORDER BY {', '.join(PROPOSAL_ORDER)}{limit}", params)
    return [proposal_dict(p) for p in rows]


def _read_parsed(root: Path, sha256: str, policy: Policy) -> ParsedPatch:
    """A stored revision, read and parsed (blocking: call from a worker thread)."""
    return parse_patch(read_patch(root, sha256), root, allowances(policy))


async def request_review(
    tx: Tx, root: Path, policy: Policy, proposal_id: str, actor: str, runs: RunHint = NO_HINT
) -> dict[str, Any]:
    """Who should review (by policy role) and move `pending` → `in_review`."""
    p = await load(tx, proposal_id)
    if not p.current_revision:
        raise ToolError(f"proposal {proposal_id} has no patch revision")
    parsed = await asyncio.to_thread(_read_parsed, root, p.current_revision, policy)
    result = policy.evaluate(
        p.risk, list(parsed.touched), await current_votes(tx, p), extra_high_paths=list(parsed.special)
    )
    roles = list(result.required_roles)
    agents = await tx.all(Agent, "SELECT * FROM agents WHERE is_enabled = 1 ORDER BY created_at, id")
    reviewers: list[dict[str, Any]] = []
    for role in roles:
        matched = [a for a in agents if a.id != p.agent_id and a.role.lower() == role.lower()]
        if not matched:
            reviewers.append({"role": role})
        for a in matched:
            reviewers.append({"role": role, "agent_id": a.id, "adapter": a.adapter, "status": a.status})
    if p.status in ("", ProposalStatus.PENDING):
        now = clock.now()
        await tx.update("proposals", {"id": proposal_id}, {"status": ProposalStatus.IN_REVIEW, "updated_at": now})
        await tx.append_event(
            await resolve(tx, runs, owner=p.run_id),
            EventType.PROPOSAL_REVIEW_REQUESTED,
            # `reviewers` (agent ids) and `roles` are the spec's keys; the
            # revision says which patch the reviews are for.
            {
                "proposal_id": proposal_id,
                "reviewers": [r["agent_id"] for r in reviewers if "agent_id" in r],
                "roles": roles,
                "revision": p.current_revision,
            },
            actor_id=actor,
            task_id=p.task_id,
        )
    out = await view(tx, proposal_id)
    out.update(
        {
            "review_roles": roles,
            "reviewers": reviewers,
            "policy": result.to_dict(),
            "human_approval_required": result.needs_human,
            "security_review_required": result.security_review_required,
        }
    )
    return out


async def record_decision(tx: Tx, args: DecisionArgs, *, runs: RunHint = NO_HINT) -> Decision:
    """`decision.record`: the decision, about `args.proposal_id` and/or `args.task_id` if named."""
    decided_by = identity(args.decided_by, "decided_by", "decision.record")
    decision_id = args.decision_id or clock.new_id("D")
    decision, proposal_id, task_id = args.decision, args.proposal_id, args.task_id
    if await tx.scalar("SELECT 1 FROM decisions WHERE id = ?", (decision_id,)):
        raise ToolError(f"decision {decision_id} already exists")
    if proposal_id:
        p = await load(tx, proposal_id)
        task_id = task_id or p.task_id
    if task_id and await tx.scalar("SELECT 1 FROM tasks WHERE id = ?", (task_id,)) is None:
        raise NotFound("task", task_id)
    now = clock.now()
    await tx.insert(
        "decisions",
        {
            "id": decision_id,
            "proposal_id": proposal_id or None,
            "task_id": task_id or None,
            "decision": decision,
            "rationale_md": args.rationale_md,
            "decided_by": decided_by,
            "created_at": now,
        },
    )
    await tx.append_event(
        await resolve(tx, runs, owner=await object_run(tx, proposal_id=proposal_id, task_id=task_id)),
        EventType.DECISION_RECORDED,
        {"decision_id": decision_id, "proposal_id": proposal_id, "decision": decision},
        actor_id=decided_by,
        task_id=task_id,
    )
    row = await tx.one(Decision, "SELECT * FROM decisions WHERE id = ?", (decision_id,))
    assert row is not None
    return row


async def release_review_claims(tx: Tx, proposal: Proposal, reason: str, *, actor: str) -> int:
    """Once a proposal is decided (applied or rejected), the review claims its reviewers took on
    its resources for its task are released: the review is over. Returns how many."""
    from roundtable.services.coordination import claims

    now = clock.now()
    rows = await tx.all(
        Claim,
        "SELECT c.* FROM claims c JOIN proposal_resources r ON r.resource_id = c.resource_id"
        " WHERE r.proposal_id = ? AND c.task_id = ? AND c.claim_type = ? AND c.status = ?",
        (proposal.id, proposal.task_id, "review", ClaimStatus.ACTIVE),
    )
    for claim in rows:
        await claims.transition(
            tx,
            claim.id,
            ClaimStatus.RELEASED,
            now,
            actor_id=actor,
            reason=reason,
            run_id=proposal.run_id,
            operator=True,
        )
    return len(rows)


class RejectArgs(Args):
    # `patch.reject`.
    proposal_id: Id
    reason_md: Text
    decision_id: NewId = ""
    decided_by: Id = Field(default="", description="Who decides.")


async def reject(tx: Tx, args: RejectArgs, *, actor: str, runs: RunHint = NO_HINT) -> dict[str, Any]:
    """`patch.reject`: the open proposal rejected, with the decision recorded (by `actor` unless
    the arguments name who decided)."""
    proposal_id = args.proposal_id
    decided_by = args.decided_by or actor
    p = await load(tx, proposal_id)
    if p.status not in OPEN_STATUSES:
        raise ToolError(f"proposal {proposal_id} is {p.status}; only pending or in_review proposals can be rejected")
    now = clock.now()
    await tx.update("proposals", {"id": proposal_id}, {"status": ProposalStatus.REJECTED, "updated_at": now})
    decision = await record_decision(
        tx,
        DecisionArgs(
            decision=ProposalStatus.REJECTED.value,
            rationale_md=args.reason_md,
            decided_by=decided_by,
            proposal_id=proposal_id,
            task_id=p.task_id,
            decision_id=args.decision_id,
        ),
        runs=runs,
    )
    run = await resolve(tx, runs, owner=p.run_id)
    await tx.append_event(
        run,
        EventType.PATCH_REJECTED,
        {"proposal_id": proposal_id, "decision_id": decision.id, "revision": p.current_revision},
        actor_id=decided_by,
        task_id=p.task_id,
    )
    await close_moot(tx, proposal_id, f"proposal rejected ({decision.id})", run_id=run)
    await release_review_claims(tx, p, f"proposal rejected ({decision.id})", actor=decided_by)
    out = await view(tx, proposal_id)
    out["decision"] = decision.to_dict()
    return out
