"""Results sized for the agent that reads them.

The tools keep the reference's top-level keys, but what fills them is what an agent needs to act:
a proposal without the store's bookkeeping (`workspace_id`, `deliberation_id`, `patch_path`, …),
or, where it is read for review, only what the change is for and where it stands; votes and test
runs as summaries, a test log as its tail with the way to the whole. Every tool that trims takes
`detail: true` for the full records.
"""

from __future__ import annotations

from typing import Any

# Proposal columns that are the store's bookkeeping, not something an agent acts on.
INTERNAL_PROPOSAL_FIELDS = (
    "workspace_id",
    "deliberation_id",
    "patch_path",
    "proposer_session_id",
    "expected_tests_json",
    "base_revision",
    "transaction_state",
)
REASON_CHARS = 300  # a vote's reason in a summary
LOG_TAIL_LINES = 40
LOG_TAIL_BYTES = 4096


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def proposal(record: dict[str, Any]) -> dict[str, Any]:
    """A proposal without the store's bookkeeping."""
    return {k: v for k, v in record.items() if k not in INTERNAL_PROPOSAL_FIELDS}


# What a reader of `proposal.get` acts on: what the change is for, whose it is, where it stands.
PROPOSAL_BRIEF = ("id", "task_id", "agent_id", "title", "summary_md", "status", "risk", "revision_number")
# After a revision: only what a revision can change (title and summary never do).
PROPOSAL_REVISED = ("id", "status", "revision_number")
# Shown when the author filled them in.
PROPOSAL_IF_SET = ("expected_tests", "rollback_notes")


def proposal_brief(record: dict[str, Any], fields: tuple[str, ...] = PROPOSAL_BRIEF) -> dict[str, Any]:
    """A proposal as its reader needs it: `fields`, and expected tests and rollback notes when
    set."""
    out = {key: record.get(key) for key in fields if key in record}
    out.update({key: record[key] for key in PROPOSAL_IF_SET if record.get(key)})
    return out


def resources(links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Proposal links without the proposal id every one of them repeats."""
    return [{k: v for k, v in link.items() if k != "proposal_id"} for link in links]


def proposal_result(out: dict[str, Any]) -> dict[str, Any]:
    """A `{proposal, proposal_resources, …}` result with both trimmed (other keys kept)."""
    slim = dict(out)
    if isinstance(slim.get("proposal"), dict):
        slim["proposal"] = proposal(slim["proposal"])
    if isinstance(slim.get("proposal_resources"), list):
        slim["proposal_resources"] = resources(slim["proposal_resources"])
    return slim


def revision(record: dict[str, Any], files: list[str]) -> dict[str, Any]:
    """One revision as a line: its number, hash, author, time and files."""
    return {
        "number": record.get("number"),
        "sha256": record.get("sha256"),
        "agent_id": record.get("agent_id"),
        "created_at": record.get("created_at"),
        "files": files,
    }


def vote(record: dict[str, Any], *, clip: bool = True) -> dict[str, Any]:
    """A vote as a summary: who, what, how sure, why (cut unless `clip` is false: the author
    reading its verdicts needs every word), and whether it counts."""
    reason = str(record.get("reason_md") or "")
    out = {
        "agent_id": record.get("agent_id"),
        "vote": record.get("vote"),
        "confidence": record.get("confidence"),
        "reason_md": _clip(reason, REASON_CHARS) if clip else reason,
    }
    # Whether it counts says what the revision's hash would (detail: the hash).
    if "current" in record:
        out["current"] = record["current"]
    else:
        out["revision"] = record.get("revision")
    return out


def cast_vote(record: dict[str, Any]) -> dict[str, Any]:
    """A vote just cast, as its voter needs to see it: recorded, whose, which."""
    return {key: record.get(key) for key in ("id", "agent_id", "vote") if key in record}


def test_run_summary(record: dict[str, Any]) -> dict[str, Any]:
    return {
        key: record.get(key)
        for key in ("id", "command", "status", "exit_code", "revision", "agent_id", "finished_at")
        if key in record
    }


def approval(record: dict[str, Any]) -> dict[str, Any]:
    return {
        key: record.get(key) for key in ("id", "status", "decided_by", "revision", "override_policy") if key in record
    }


def review(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record.get(key) for key in ("id", "status", "reviewer_id", "revision", "summary_md") if key in record}


def log_tail(log: str) -> tuple[str, bool]:
    """The last lines of a log (at most `LOG_TAIL_LINES` and `LOG_TAIL_BYTES`), and whether
    anything was cut."""
    lines = log.splitlines(keepends=True)
    tail = "".join(lines[-LOG_TAIL_LINES:])
    if len(tail) > LOG_TAIL_BYTES:
        tail = tail[-LOG_TAIL_BYTES:]
    return tail, tail != log


# --- what an agent reads of a result (`ToolSpec.agent_view`) ------------------------------------


def lean(record: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """`record` without empty values ('' , [], {}, None) and without `drop`."""
    return {k: v for k, v in record.items() if k not in drop and v not in ("", [], {}, None)}


def task_for_agent(result: dict[str, Any]) -> dict[str, Any]:
    """`task.get`: the task without its empty fields and timestamps."""
    out = dict(result)
    if isinstance(out.get("task"), dict):
        out["task"] = lean(out["task"], ("created_at", "updated_at"))
    return out


def proposal_made_for_agent(result: dict[str, Any]) -> dict[str, Any]:
    """`proposal.create`/`proposal.attach_patch`: the author wrote the title and summary; it
    reads where the proposal stands, the files it holds and the diff (its own block)."""
    out = dict(result)
    if isinstance(out.get("proposal"), dict):
        out["proposal"] = proposal_brief(out["proposal"], (*PROPOSAL_REVISED, "risk"))
    if isinstance(out.get("proposal_resources"), list):
        out["proposal_resources"] = [link.get("resource_id") for link in out["proposal_resources"]]
    return out


def claims_for_agent(result: dict[str, Any]) -> dict[str, Any]:
    """`resource.claim`: each claim as its id, resource, mode and expiry (`extended` when true)."""
    out = dict(result)
    if isinstance(out.get("claims"), list):
        out["claims"] = [lean(c) if c.get("extended") else lean(c, ("extended",)) for c in out["claims"]]
    if isinstance(out.get("claim"), dict):
        out["claim"] = {k: out["claim"].get(k) for k in ("id", "resource_id", "claim_type", "task_id", "expires_at")}
        out.pop("resource", None)
    return out


def matches_for_agent(result: dict[str, Any]) -> dict[str, Any]:
    """`repo.search`: each match as grep prints it (`path:line: content`)."""
    out = dict(result)
    if isinstance(out.get("matches"), list) and all(set(m) == {"path", "line", "content"} for m in out["matches"]):
        out["matches"] = [f"{m['path']}:{m['line']}: {m['content']}" for m in out["matches"]]
    if out.get("truncated") is False:
        out.pop("truncated")
    return out


TEST_RUN_FOR_AGENT = ("id", "command", "status", "exit_code", "outcome")


def test_run_for_agent(result: dict[str, Any]) -> dict[str, Any]:
    """`test.run`: the run's id, command, status, exit code and outcome, and its log
    (`test_get_result` has the record)."""
    out = dict(result)
    if isinstance(out.get("test_run"), dict):
        out["test_run"] = {k: out["test_run"].get(k) for k in TEST_RUN_FOR_AGENT}
    return out
