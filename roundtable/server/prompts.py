"""MCP prompts and the `initialize` instructions: the roles' briefings and the workflow.

One prompt per role (implementer, reviewer, tester, security, architect) carries the role's duty,
the project's mandatory rules and start-up checklist (the text of the generated manifest,
`assets.manifest_md`) and the turn protocol; `resume` is the resume briefing
(`services/sessions/briefing.py`) as a prompt with arguments. Tool names are spelled as the client sees
them (`mcp.tool_names`). Nothing here writes: the resume prompt does not suspend stale claims
(`roundtable resume` does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundtable.errors import NotFound, PermissionDenied, ValidationError
from roundtable.server import resources
from roundtable.services.coordination.agents import get_agent
from roundtable.services.sessions import briefing
from roundtable.services.sessions import records as session_service
from roundtable.store.records import AgentSession
from roundtable.tools.registry import get_registry

if TYPE_CHECKING:
    from roundtable.runtime import Runtime


@dataclass(frozen=True)
class Argument:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class PromptSpec:
    name: str
    title: str
    description: str
    arguments: tuple[Argument, ...]


_TASK = Argument("task_id", "The task to work on (default: the session's task).")
_PROPOSAL = Argument("proposal_id", "The proposal to review (default: the session's proposal).")
_RUN = Argument("run_id", "The run whose turn queue to follow (default: the session's run).")

PROMPTS: tuple[PromptSpec, ...] = (
    PromptSpec(
        "implementer",
        "Implementer briefing",
        "Work on a task as an implementer: claim, read, propose a patch, ask for review.",
        (_TASK, _RUN),
    ),
    PromptSpec(
        "reviewer",
        "Reviewer briefing",
        "Review a proposal: read the change and the files it touches, vote on the current revision.",
        (_PROPOSAL, _RUN),
    ),
    PromptSpec(
        "tester",
        "Tester briefing",
        "Test a proposal's current revision, report evidence, vote.",
        (_PROPOSAL, _RUN),
    ),
    PromptSpec(
        "security",
        "Security reviewer briefing",
        "Run the security review of a proposal's current revision and vote on its findings.",
        (_PROPOSAL, _RUN),
    ),
    PromptSpec(
        "architect",
        "Architect briefing",
        "Judge a proposal's design against the project's direction; vote and record decisions.",
        (_PROPOSAL, _RUN),
    ),
    PromptSpec(
        "resume",
        "Resume briefing",
        "Where an agent stands when it comes back: its task, active claims, open proposals, latest "
        "decisions and the next action.",
        (
            Argument("agent_id", "The returning agent (default: yours, when your credential names one)."),
            Argument("session_id", "A specific session of that agent (default: its current one)."),
        ),
    ),
)
BY_NAME = {p.name: p for p in PROMPTS}

ROLE_DUTIES: dict[str, str] = {
    "implementer": (
        "You are an implementer. Read your task ({task_get}, or the resource {task_uri}); claim every file "
        "you will change with {resource_claim} (claim_type write) before you propose; read through "
        "{repo_read_file} (a line range), {repo_search} and {repo_symbols}; submit the change with "
        "{proposal_create} as edits (old_string → new_string) or a unified diff, run the tests on it with "
        "{test_run}, then ask for review with {proposal_request_review}. Answer review feedback (votes, and the line "
        "comments {proposal_get} lists) with a new revision ({proposal_attach_patch}, edits on top of the current one); votes and evidence on older "
        "revisions go stale. You never write repository files and never apply your own patch. In a workspace "
        "(your own git worktree, your working directory) edit with your own tools instead and submit each "
        "revision with {workspace_propose}, which also asks for review."
    ),
    "reviewer": (
        "You are a reviewer. Read the proposal and its current revision ({proposal_get}, or the resource "
        "{proposal_uri} with the gate report; after a revision, since_revision shows only what changed); claim the files it touches in review mode ({resource_claim}, "
        "claim_type review) and read them in context. Vote on the current revision with {vote_cast} "
        "(approve, approve_with_notes, revise, reject, veto or abstain) and give reasons a colleague can act on; "
        "a remark about one line goes on that line with {proposal_comment}."
    ),
    "tester": (
        "You are the tester. Read the proposal's current revision ({proposal_get}, or {proposal_uri}); "
        "claim the touched files for reading; run the project's tests on that revision with {test_run} "
        "(in a supervised session, report what you ran with {test_evidence_submit}); then vote with "
        "{vote_cast}. Evidence is bound to the revision it saw: a new revision needs new evidence."
    ),
    "security": (
        "You are the security reviewer. Run {security_review} on the proposal's current revision, read "
        "its findings and the touched files, then vote with {vote_cast}: reject or veto what leaks "
        "credentials, widens access or runs untrusted input; approve what is safe, with notes where needed."
    ),
    "architect": (
        "You are the architect. Read the proposal ({proposal_get}, or {proposal_uri}) against the project "
        "description (roundtable://doc/PROJECT.ROUNDTABLE.md) and the policies; vote with {vote_cast} on "
        "changes that shape the design, and record lasting decisions and context with {memory_record}."
    ),
}

TURNS = (
    "Turns: when you have something time-sensitive to do, call {agent_turn_request}. Subscribe to the "
    "turn queue {turns_uri} (resources/subscribe) and wait for its update; read it, and when the "
    "in_flight turn is your request, call {agent_turn_start}, do the work, then {agent_turn_complete}. "
    "A client without subscriptions follows {table_watch} with wait_ms instead. Keep one request "
    "outstanding at a time; a turn not started or finished in time expires."
)


def tool_name(name: str, style: str) -> str:
    spec = get_registry().lookup(name)
    return spec.advertised_name(style) if spec is not None else name


def _names(style: str) -> dict[str, str]:
    return {spec.mcp_name: spec.advertised_name(style) for spec in get_registry()}


_DOTTED = re.compile(r"`([a-z_]+(?:\.[a-z_]+)+)`")


def restyle(text: str, style: str) -> str:
    """`text` with every backquoted tool name spelled as the client sees it."""
    registry = get_registry()

    def sub(match: re.Match[str]) -> str:
        spec = registry.lookup(match.group(1))
        return f"`{spec.advertised_name(style)}`" if spec is not None else match.group(0)

    return _DOTTED.sub(sub, text)


def instructions(style: str, bound: resources.Bound | None = None) -> str:
    """The `initialize` instructions: the workflow in a few lines, tool names as listed."""
    n = _names(style)
    who = (
        f"This session is {bound.agent_id} on task {bound.task_id} of run {bound.run_id}"
        + (f", reviewing proposal {bound.proposal_id}" if bound.proposal_id else "")
        + "; identity arguments are filled in for you."
        if bound is not None
        else "Your credential says who you are (an unbound one may only read)."
    )
    run = bound.run_id if bound is not None else "{run_id}"
    # Read into every agent's context at every connection: what it needs to start, no more (the
    # role prompts and the rulebook say the rest).
    return (
        "Roundtable's table is the authority here, not your memory. You never write the project's files: "
        f"a change is a reviewed proposal ({n['workspace_propose']} from your own workspace, or "
        f"{n['proposal_create']}). {who}\n"
        f"Start with {n['table_watch']} (what concerns you). Claim before you change ({n['resource_claim']}; "
        f"reviewers in review mode). Evidence: {n['test_run']} on the revision. Reviewers {n['vote_cast']} on "
        f"the current revision. In an active run: {n['agent_turn_request']}, then {n['agent_turn_start']} once "
        f"roundtable://turns/{run} (or {n['table_watch']} wait_ms) shows it scheduled, "
        f"{n['agent_turn_complete']} when done. Finish: release claims, {n['memory_record']} what others "
        "should know. Rulebook: roundtable://doc/AGENTS.ROUNDTABLE.md."
    )


def _manifest_sections(runtime: Runtime, style: str) -> str:
    """The manifest's mandatory rules and start-up checklist, restyled."""
    from roundtable.assets import manifest_md

    text = manifest_md(runtime.config)
    keep: list[str] = []
    for section in re.split(r"(?m)^## ", text)[1:]:
        title, _, body = section.partition("\n")
        if title.strip() in ("Mandatory Rules", "Startup / Resume Checklist"):
            keep.append(f"## {title.strip()}\n{body.strip()}\n")
    return restyle("\n".join(keep), style)


async def render(
    runtime: Runtime, access: resources.Access, name: str, args: dict[str, str], style: str
) -> tuple[str, str]:
    """(description, text) of prompt `name` for `access`; raises `NotFound` for an unknown prompt
    and `RoundtableError` when an argument names something the caller may not read."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise NotFound("prompt", name[:100])
    known = {a.name for a in spec.arguments}
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValidationError(
            f"prompt {name}: unknown argument {unknown[0][:64]} (allowed: {', '.join(sorted(known))})"
        )
    if name == "resume":
        return spec.description, await _resume(runtime, access, args)
    return spec.description, await _role(runtime, access, spec, args, style)


async def _role(runtime: Runtime, access: resources.Access, spec: PromptSpec, args: dict[str, str], style: str) -> str:
    bound = access.bound
    n = _names(style)
    task_id = args.get("task_id") or (bound.task_id if bound is not None else "")
    proposal_id = args.get("proposal_id") or (bound.proposal_id if bound is not None else "")
    run_id = args.get("run_id") or (bound.run_id if bound is not None else "")
    facts: list[str] = []
    if task_id:
        task = (await access.call("task.get", {"task_id": task_id})).get("task") or {}
        facts.append(f"Task {task_id}: {task.get('title', '')} (status {task.get('status', '?')}).")
        if task.get("body_md"):
            facts.append(str(task["body_md"]).strip()[:4000])
    if proposal_id:
        got = await access.call("proposal.get", {"proposal_id": proposal_id})  # refused out of a session's scope
        proposal = got.get("proposal") or {}
        facts.append(
            f"Proposal {proposal_id}: {proposal.get('title', '')} (status {proposal.get('status', '?')}, "
            f"revision {proposal.get('revision_number', proposal.get('current_revision', '?'))}, task "
            f"{proposal.get('task_id', '?')})."
        )
    if run_id:
        await access.check("table.watch", {"run_id": run_id})
    fill = dict(n)
    fill["task_uri"] = resources.uri("task", task_id) if task_id else "roundtable://task/{task_id}"
    fill["proposal_uri"] = (
        resources.uri("proposal", proposal_id) if proposal_id else "roundtable://proposal/{proposal_id}"
    )
    fill["turns_uri"] = resources.uri("turns", run_id) if run_id else "roundtable://turns/{run_id}"
    parts = [f"# Roundtable: {spec.title}", "", ROLE_DUTIES[spec.name].format(**fill), ""]
    if facts:
        parts += ["## Your assignment", *facts, ""]
    parts += ["## Turn protocol", TURNS.format(**fill), "", _manifest_sections(runtime, style)]
    return "\n".join(parts).rstrip() + "\n"


async def _resume(runtime: Runtime, access: resources.Access, args: dict[str, str]) -> str:
    bound = access.bound
    caller = access.caller
    own = bound.agent_id if bound is not None else ("" if caller.is_operator else caller.agent_id)
    agent_id = args.get("agent_id") or own
    if not agent_id:
        raise ValidationError("prompt resume: argument agent_id is required (this connection names no agent)")
    # The same authority as reading that agent's claims.
    await access.check("resource.claim_status", {"agent_id": agent_id})
    session_id = args.get("session_id") or (bound.session_id if bound is not None else "")
    async with runtime.db.read() as reader:
        await get_agent(reader, agent_id)
        if session_id:
            session = await session_service.get(reader, session_id)
            if session.agent_id != agent_id:
                raise PermissionDenied(f"session {session_id} is not a session of {agent_id}")
        else:
            found = await session_service.for_agent(reader, agent_id)
            if found is None:
                run = await reader.fetchone(
                    "SELECT id FROM runs WHERE status = 'active' ORDER BY started_at DESC, id DESC LIMIT 1"
                )
                found = AgentSession.from_row({"id": "", "agent_id": agent_id, "run_id": run[0] if run else ""})
            session = found
        text = (await briefing.build(reader, session)).markdown()
    return text


__all__ = ["BY_NAME", "PROMPTS", "Argument", "PromptSpec", "instructions", "render", "restyle", "tool_name"]
