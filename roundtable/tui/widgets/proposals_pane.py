"""Proposals: title, author, revision, status, votes and a gate summary; open ones first."""

from __future__ import annotations

from rich.text import Text

from roundtable.tui.data import Overview
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell

STATE_MARKS = {
    "passed": "✓",
    "approved": "✓",
    "satisfied": "✓",
    "ok": "✓",
    "applied": "✓",
    "failed": "✗",
    "denied": "✗",
    "rejected": "✗",
    "blocked": "✗",
}


def _mark(state: str) -> Text:
    mark = STATE_MARKS.get(state, "…" if state in ("pending", "not_started", "") else state[:1])
    style = "green" if mark == "✓" else "red" if mark == "✗" else "yellow"
    return Text(mark, style=style)


class ProposalsPane(TablePane):
    kind = "proposal"
    TITLE = "Proposals"
    COLUMNS = ("title", "status", "votes", "gates V P H T", "author", "rev")

    def build_rows(self, overview: Overview) -> list[Row]:
        out: list[Row] = []
        for row in overview.proposals:
            p = row.proposal
            rev = f"r{p.revision_number} {p.current_revision[:8]}" if p.current_revision else "—"
            votes = Text(f"+{row.votes_for}", style="green") + Text(" ") + Text(f"-{row.votes_against}", style="red")
            gates = Text(" ").join(
                [Text("     ")]
                + [_mark(s) for s in (p.vote_state, p.policy_state, p.approval_state, p.transaction_state)]
            )
            out.append((p.id, (p.title, status_cell(p.status), votes, gates, p.agent_id, rev)))
        return out
