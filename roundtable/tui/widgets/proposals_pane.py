"""Proposals: title, author, revision, status, votes and a gate summary; open ones first."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from roundtable.services.views.models import Overview
from roundtable.tui import commands
from roundtable.tui.widgets.table_pane import Row, TablePane, status_cell


def gate_cell(summary: str) -> Text:
    """The gates column: `✓ ready`, `✗ policy,tests`, `… press v` (no report for this revision)
    or the decided status — what the last `patch.validated` of the current revision said."""
    if summary == "ready":
        return Text("✓ ready", style="green")
    if summary.startswith("failing: ") or summary == "not ready":
        return Text("✗ " + summary.removeprefix("failing: "), style="red")
    if summary == "not validated":
        return Text("… press v", style="dim")
    return Text(summary, style="dim")


class ProposalsPane(TablePane):
    BINDINGS: ClassVar = commands.pane_bindings("proposals")
    kind = "proposal"
    TITLE = "Proposals"
    COLUMNS = ("title", "status", "votes", "gates", "author", "rev")
    ELASTIC = {"title": 24}
    OPTIONAL = ("rev", "author", "votes")

    def build_rows(self, overview: Overview) -> list[Row]:
        out: list[Row] = []
        for row in overview.proposals:
            p = row.proposal
            rev = f"r{p.revision_number} {p.current_revision[:8]}" if p.current_revision else "—"
            votes = Text(f"+{row.votes_for}", style="green") + Text(" ") + Text(f"-{row.votes_against}", style="red")
            gates = gate_cell(row.gate_summary)
            out.append((p.id, (p.title, status_cell(p.status), votes, gates, p.agent_id, rev)))
        return out
