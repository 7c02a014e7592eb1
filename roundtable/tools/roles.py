"""What each role is shown: the tools an agent of that role usefully calls.

`tools/list` is read into the model's context at the start of every agent session, so its size
is paid again per agent: a reviewer is shown the tools a review needs, not the implementer's
patch tools, and so on. This is a listing, not an authority: on the shared endpoint every agent
may still call any advertised tool (`Runtime.authorise` decides), and a capability session's
role set (`services/sessions/capabilities.ALLOWED`) decides what it may call; its listing is
that set cut down to this one. An agent with no role known here, and the operator, are shown
everything they may call. Names are canonical (dotted).

A listing also depends on the session's **kind**: a harness working in its own workspace with
its native editor, shell and search (`WORKSPACE`, asked for with `?tools=workspace` on the shared
endpoint) reads and edits files itself, so it is not shown the tools that do that through
roundtable (`NATIVE`): about half an implementer's list. A capability session in a workspace is
listed the same way (cut to what its capability allows); it may still call the rest of its set.
"""

from __future__ import annotations

import functools
import re

# What every role reads and the turn protocol it follows. `table.watch` is the start-up read (what
# concerns the caller: its tasks, claims, proposals, reviews asked of it, memory headlines), so
# `table.get_state` and `resource.claim_status` are not listed (still callable).
_COMMON = frozenset(
    {
        "table.watch",
        "task.get",
        "memory.query",
        "proposal.get",
        "vote.list",
        "agent.turn_request",
        "agent.turn_start",
        "agent.turn_complete",
    }
)
# A reviewer reads the proposal and the files in context, claims them for review (a decision
# releases those claims), comments and votes; memory's headlines come with its start-up read.
_REVIEW = (_COMMON - {"vote.list", "memory.query"}) | {
    "resource.claim",
    "repo.read_file",
    "vote.cast",
    "proposal.comment",
}
LISTED: dict[str, frozenset[str]] = {
    "implementer": _COMMON
    | {
        "resource.claim",
        "resource.release",
        "repo.read_file",
        "repo.search",
        "proposal.create",
        "proposal.attach_patch",
        "proposal.request_review",
        "test.run",
        "patch.validate",
        "human.request_approval",
    },
    "reviewer": _REVIEW,
    "tester": _REVIEW | {"test.run", "test.get_result", "test.suggest", "test.evidence.submit"},
    "security": _REVIEW | {"security.review"},
    # On the shared endpoint an architect reviews what shapes the design and records what lasts
    # (its briefing); it plans in a session of its own, as the planner.
    "architect": _REVIEW | {"memory.query", "memory.record"},
    # A capability session's role where it differs from the listing's: the architect's planning
    # session turns the run's goal into tasks and closes its own planning task.
    "planner": _COMMON
    | {"resource.claim", "repo.read_file", "task.create", "task.list", "task.update_status", "memory.record"},
}

WORKSPACE = "workspace"
KINDS = frozenset({"", WORKSPACE})
# What a workspace session does with its own tools: read and search files, edit them (its diff is
# proposed with `workspace.propose`, which claims what it touched and asks for review).
NATIVE = frozenset(
    {
        "repo.read_file",
        "repo.search",
        "repo.symbols",
        "proposal.create",
        "proposal.attach_patch",
        "proposal.request_review",
        "patch.validate",
    }
)
# The implementer's claims are taken by `workspace.propose`; a reviewer still claims in review mode.
_NATIVE_FOR: dict[str, frozenset[str]] = {"implementer": NATIVE | {"resource.claim"}}
# What only a session with its own editor does: get its workspace, propose its diff, bring the
# project's tree in.
_WORKSPACE_ONLY: dict[str, frozenset[str]] = {
    "implementer": frozenset({"workspace.create", "workspace.propose", "workspace.sync"})
}

# The turn protocol: used only inside an active run ("without one, work directly"), so an agent on
# the shared endpoint is shown it only while a run is active (a session is always in its run).
TURNS = frozenset({"agent.turn_request", "agent.turn_start", "agent.turn_complete"})

_FAMILY = re.compile(r"^(implementer|reviewer|tester|security|architect)-[1-9][0-9]*$")


def role_of(agent_id: str) -> str:
    """The listing role of a configured agent id (`reviewer-2` → reviewer); '' when unknown."""
    match = _FAMILY.match(agent_id)
    return match.group(1) if match else ""


def listed_for(role: str, kind: str = "") -> frozenset[str] | None:
    """The tools a role is shown in a session of `kind`, or None: everything it may call."""
    listed = LISTED.get(role)
    if listed is None or kind != WORKSPACE:
        return listed
    return (listed - _NATIVE_FOR.get(role, NATIVE)) | _WORKSPACE_ONLY.get(role, frozenset())


@functools.cache
def _shipped() -> frozenset[str]:
    from roundtable.tools.registry import get_registry

    return frozenset(get_registry().names())


def workspace_only(role: str) -> frozenset[str]:
    """The tools only a session with its own editor in a workspace is shown (its role's)."""
    return _WORKSPACE_ONLY.get(role, frozenset())


def shows(role: str, name: str, kind: str = "", in_run: bool = True) -> bool:
    """Whether an agent of `role` in a session of `kind` is shown tool `name`: what its role
    usefully calls there, or everything when the role is unknown; the turn tools only `in_run`
    (a run is active). A tool roundtable does not ship (an embedder's, a test's) is in no role's
    listing, so every role is shown it."""
    if not in_run and name in TURNS:
        return False
    listed = listed_for(role, kind)
    return listed is None or name in listed or name not in _shipped()
