"""What one Chair tick did for one run (`TickReport`): the console, `run --headless` and the
logs read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TickReport:
    """What one tick did for one run."""

    run_id: str
    at: str = ""
    assigned: list[dict[str, str]] = field(default_factory=list)
    reviews_requested: list[dict[str, Any]] = field(default_factory=list)
    claims_expired: list[str] = field(default_factory=list)
    turns_expired: list[dict[str, Any]] = field(default_factory=list)
    scheduled: dict[str, Any] | None = None
    errors: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One human-readable line per action (for `run --headless` and logs)."""
        out = [f"assigned {a['task_id']} to {a['agent_id']}" for a in self.assigned]
        out += [
            f"review requested for {r['proposal_id']} (roles: {', '.join(r['roles']) or 'none'})"
            for r in self.reviews_requested
        ]
        out += [f"claim expired {c}" for c in self.claims_expired]
        out += [f"turn {t['request_event_id']} of {t['agent_id']} expired ({t['timeout']})" for t in self.turns_expired]
        if self.scheduled:
            out.append(f"scheduled turn {self.scheduled['request_event_id']} for {self.scheduled['agent_id']}")
        out += [f"error: {e}" for e in self.errors]
        return out or ["nothing to do"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "at": self.at,
            "assigned": self.assigned,
            "reviews_requested": self.reviews_requested,
            "claims_expired": self.claims_expired,
            "turns_expired": self.turns_expired,
            "scheduled": self.scheduled,
            "errors": self.errors,
        }
