"""Results sized for the agent that reads them.

The tools keep the reference's top-level keys, but what fills them is what an agent needs to act:
a proposal without the store's bookkeeping (`workspace_id`, `deliberation_id`, `patch_path`, …),
or, where it is read for review, only what the change is for and where it stands; votes and test
runs as summaries, a test log as its tail with the way to the whole. Every tool that trims takes
`detail: true` for the full records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roundtable.domain import TestRunStatus

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


# Each takes the result and the arguments of the call (what the agent said: a view may leave out
# what only repeats them).


def task_for_agent(result: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """`task.get`: the task without its empty fields and timestamps."""
    out = dict(result)
    if isinstance(out.get("task"), dict):
        out["task"] = lean(out["task"], ("created_at", "updated_at"))
    return out


def _diffed(patch: Any) -> set[str]:
    """The files a unified diff shows (`diff --git a/X b/X`, `+++ b/X`), as resource ids."""
    if not isinstance(patch, str):
        return set()
    files = set()
    for line in patch.splitlines():
        if line.startswith("+++ b/"):
            files.add(f"file:{line[6:]}")
        elif line.startswith("diff --git ") and " b/" in line:
            files.add(f"file:{line.rsplit(' b/', 1)[1]}")
    return files


def proposal_made_for_agent(result: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """`proposal.create`/`proposal.attach_patch`: the author wrote the title and summary; it
    reads where the proposal stands, the resources it holds that the diff (its own block) does
    not show, and the diff."""
    out = dict(result)
    if isinstance(out.get("proposal"), dict):
        out["proposal"] = proposal_brief(out["proposal"], (*PROPOSAL_REVISED, "risk"))
    if isinstance(out.get("proposal_resources"), list):
        shown = _diffed(out.get("patch"))
        ids = [link.get("resource_id") for link in out["proposal_resources"]]
        out["proposal_resources"] = [rid for rid in ids if rid not in shown]
    return out


def proposed_for_agent(result: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """`workspace.propose`: the proposal, its files and reviewers, and the test it ran on the new
    revision as `test.run` reads (`test_run_for_agent`); not the ids of the write claims it took (the
    apply releases them; `table_watch` lists the claims an agent holds)."""
    out = {k: v for k, v in result.items() if k != "claimed"}
    if "test_run" in out:
        out = test_run_for_agent(out, {"command": args.get("test", ""), "paths": args.get("test_paths", [])})
    return out


def _named(claims: list[dict[str, Any]], args: Mapping[str, Any]) -> bool:
    """Whether `claims` are, one for one and in order, the `paths` the caller sent (their
    `resource_id` says nothing it did not)."""
    paths = args.get("paths")
    if not isinstance(paths, list) or len(paths) != len(claims):
        return False
    return all(str(c.get("resource_id", "")).partition(":")[2] == p for c, p in zip(claims, paths, strict=True))


def claims_for_agent(result: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """`resource.claim`: each claim as its id, resource, mode and expiry (`extended` when true).
    Claims of the `paths` the caller sent, in its order, are their ids alone; an expiry they all
    share is said once (`expires_at` beside them)."""
    out = dict(result)
    if isinstance(out.get("claims"), list):
        claims = [lean(c) if c.get("extended") else lean(c, ("extended",)) for c in out["claims"]]
        expiries = {c.get("expires_at") for c in claims}
        if len(claims) > 1 and len(expiries) == 1 and "expires_at" not in out:
            out["expires_at"] = expiries.pop()
            claims = [{k: v for k, v in c.items() if k != "expires_at"} for c in claims]
        if _named(claims, args):
            claims = [{k: v for k, v in c.items() if k != "resource_id"} for c in claims]
        out["claims"] = [c["id"] if set(c) == {"id"} else c for c in claims]
        if "expires_at" in out:  # after the claims, as they read
            out["expires_at"] = out.pop("expires_at")
    if isinstance(out.get("claim"), dict):
        out["claim"] = {k: out["claim"].get(k) for k in ("id", "resource_id", "claim_type", "task_id", "expires_at")}
        out.pop("resource", None)
    return out


def matches_for_agent(result: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """`repo.search`: each match as grep prints it (`path:line: content`)."""
    out = dict(result)
    if isinstance(out.get("matches"), list) and all(set(m) == {"path", "line", "content"} for m in out["matches"]):
        out["matches"] = [f"{m['path']}:{m['line']}: {m['content']}" for m in out["matches"]]
    return out


TEST_RUN_FOR_AGENT = ("id", "command", "status", "exit_code", "outcome")


def _label(args: Mapping[str, Any]) -> str:
    """The command of a run as `test.run` labels it from the call's arguments (`unit a.py -k x`)."""
    sent = args.get("paths")
    paths = [str(p) for p in sent] if isinstance(sent, list) else []
    k = args.get("k") or ""
    return " ".join([str(args.get("command", "")), *paths, *([f"-k {k}"] if k else [])])


def test_run_for_agent(result: dict[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """`test.run`: the run's id, status and outcome, and its log (`test_get_result` has the
    record); its command only when it is not the one the caller asked for, its exit code only
    when it says more than the status (a pass exits 0)."""
    out = dict(result)
    if isinstance(out.get("test_run"), dict):
        run = {k: out["test_run"].get(k) for k in TEST_RUN_FOR_AGENT}
        if run["command"] == _label(args):
            del run["command"]
        if run["status"] == TestRunStatus.PASSED and run["exit_code"] == 0:
            del run["exit_code"]
        out["test_run"] = run
    return out
