"""Which committed events need the operator, as notifications: their kind, title and message.

One place maps the event log to what the operator is told (`notify.events` picks the kinds):

| kind | event |
|---|---|
| `approval_requested` | `approval.requested` |
| `task_blocked` | `task.blocked` |
| `autopilot_stopped` | `autopilot.stopped` |
| `apply_failed` | `patch.apply_failed` |
| `transaction_attention` | `patch.rollback_failed`; `transaction.recovered` whose outcome is `needs_attention` |
| `budget_exceeded` | `budget.exceeded` |
| `session_needs_you` | `session.attention` into a state that needs the operator (waiting for a permission or an answer, idle, failed) |
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from roundtable.domain import EventType

EVENT_KINDS: dict[str, str] = {
    EventType.APPROVAL_REQUESTED: "approval_requested",
    EventType.TASK_BLOCKED: "task_blocked",
    EventType.AUTOPILOT_STOPPED: "autopilot_stopped",
    EventType.PATCH_APPLY_FAILED: "apply_failed",
    EventType.PATCH_ROLLBACK_FAILED: "transaction_attention",
    EventType.TRANSACTION_RECOVERED: "transaction_attention",
    EventType.BUDGET_EXCEEDED: "budget_exceeded",
    EventType.SESSION_ATTENTION: "session_needs_you",
}
# `session.attention` states that need the operator (transcript.NEEDS_HUMAN); leaving one is no news.
_SESSION_NEEDS = {
    "waiting_permission": "waits for a permission",
    "waiting_answer": "waits for your answer",
    "idle": "is idle",
    "failed": "failed",
}
TITLES = {
    "approval_requested": "Approval requested",
    "task_blocked": "Task blocked",
    "autopilot_stopped": "Autopilot stopped",
    "apply_failed": "Apply failed",
    "transaction_attention": "Transaction needs attention",
    "budget_exceeded": "Budget reached",
    "session_needs_you": "Session needs you",
}
MAX_MESSAGE = 500


@dataclass(frozen=True)
class Notification:
    """One thing the operator is told about, from one event."""

    kind: str
    title: str
    message: str
    run_id: str
    event_id: int
    created_at: str
    project: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "message": self.message,
            "run_id": self.run_id,
            "event_id": self.event_id,
            "created_at": self.created_at,
            "project": self.project,
        }


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _message(kind: str, p: dict[str, Any], task_id: str) -> str:
    if kind == "approval_requested":
        what = p.get("proposal_id") or task_id or "a decision"
        text = f"{what} waits for your approval" + (
            f" (revision {str(p['revision'])[:12]})" if p.get("revision") else ""
        )
        return f"{text}: {p['subject']}" if p.get("subject") else text
    if kind == "task_blocked":
        return f"task {p.get('task_id') or task_id} is blocked: {p.get('reason', '')}"
    if kind == "autopilot_stopped":
        return f"the autopilot stopped: {p.get('reason', '')}"
    if kind == "apply_failed":
        return f"applying {p.get('proposal_id', '?')} failed ({p.get('transaction_id', '?')}): {p.get('error', '')}"
    if kind == "transaction_attention":
        left = p.get("needs_attention")
        detail = p.get("detail") or (f"could not restore {', '.join(str(x) for x in left)}" if left else "")
        return f"transaction {p.get('transaction_id', '?')} needs attention: {detail}".rstrip(": ")
    if kind == "session_needs_you":
        what = _SESSION_NEEDS.get(str(p.get("state")), str(p.get("state")))
        detail = f": {p['detail']}" if p.get("detail") else ""
        return f"session {p.get('session_id', '?')} of {p.get('agent_id', '?')} {what}{detail}"
    if kind == "budget_exceeded":
        return str(p.get("reason") or f"{p.get('scope')} {p.get('key')} reached its budget")
    return ""


def from_event(
    event_id: int,
    run_id: str,
    event_type: str,
    task_id: str,
    payload_json: str,
    created_at: str,
    project: str = "",
    extra: dict[str, Any] | None = None,
) -> Notification | None:
    """The notification an event stands for, or None when it needs no one. `extra` adds what the
    event does not carry itself (an approval's subject)."""
    kind = EVENT_KINDS.get(event_type)
    if kind is None:
        return None
    try:
        payload = json.loads(payload_json or "{}")
    except ValueError:
        payload = {}
    if not isinstance(payload, dict):
        payload = {}
    payload = {**payload, **(extra or {})}
    if event_type == EventType.TRANSACTION_RECOVERED and payload.get("outcome") != "needs_attention":
        return None
    if event_type == EventType.SESSION_ATTENTION and payload.get("state") not in _SESSION_NEEDS:
        return None
    return Notification(
        kind, TITLES[kind], _clip(_message(kind, payload, task_id or "")), run_id or "", event_id, created_at, project
    )
