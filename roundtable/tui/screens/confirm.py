"""Confirm: a destructive action shown in full (revision hash, gate report) before it runs."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from roundtable.domain import ApprovalStatus
from roundtable.store.records import HumanApproval, Proposal, Transaction
from roundtable.tui.timefmt import seconds_stamp
from roundtable.tui.widgets.gate_report import render_gate_report


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("escape,n", "cancel", "Cancel"),
        Binding("y", "confirm", "Confirm"),
    ]

    def __init__(self, title: str, body: RenderableType, *, confirm_label: str = "Confirm") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="confirm-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "y confirm · n/esc cancel"
            yield Static(self.body, id="confirm-body")
            with Horizontal(id="confirm-buttons"):
                yield Button(self.confirm_label, variant="error", id="confirm-yes")
                yield Button("Cancel", variant="primary", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


def apply_dialog(proposal: Proposal, report: dict[str, Any] | None, error: str = "") -> ConfirmScreen:
    """The apply confirmation: the exact revision that will be applied and every gate, failing
    ones included (the apply re-checks them and refuses if one fails)."""
    revision = str((report or {}).get("revision") or proposal.current_revision or "(none)")
    number = (report or {}).get("revision_number") or proposal.revision_number
    approval = next(
        (g for g in (report or {}).get("gates") or [] if isinstance(g, dict) and g.get("name") == "approval"), None
    )
    body = Group(
        Text.assemble(("Proposal ", "dim"), (proposal.title, "bold"), ("  ", ""), (proposal.id, "dim")),
        Text.assemble(("Revision ", "dim"), (revision, "bold yellow"), f"  (r{number})"),
        Text.assemble(("Your approval ", "dim"), (str(approval.get("reason") if approval else "not checked"), "bold")),
        Text(""),
        Text("Gate report", style="bold"),
        render_gate_report(report, error),
        Text(""),
        Text("Apply changes the working tree (git apply) and records a transaction you can roll back.", style="dim"),
    )
    return ConfirmScreen(f"Apply {proposal.id}?", body, confirm_label="Apply")


def rollback_dialog(tx: Transaction) -> ConfirmScreen:
    body = Group(
        Text.assemble(("Transaction ", "dim"), (tx.id, "bold"), (f"  [{tx.status}]", "yellow")),
        Text.assemble(("Proposal ", "dim"), tx.proposal_id),
        Text.assemble(("Revision ", "dim"), (tx.revision or "(unknown)", "bold yellow")),
        Text.assemble(("Applied ", "dim"), f"{seconds_stamp(tx.applied_at)} by {tx.applied_by}"),
        Text(""),
        Text("Roll back restores the files as they were before this apply, if nobody changed them since.", style="dim"),
    )
    return ConfirmScreen(f"Roll back {tx.id}?", body, confirm_label="Roll back")


def decision_dialog(approval: HumanApproval | None, status: str, proposal: Proposal | None = None) -> ConfirmScreen:
    """Approve or deny: the proposal by title and revision, the request (if any) and — when it
    was decided before — what this changes."""
    verb = "Approve" if status == ApprovalStatus.APPROVED else "Deny"
    lines: list[RenderableType] = []
    if proposal is not None:
        lines += [
            Text.assemble(("Proposal ", "dim"), (proposal.title, "bold"), ("  by ", "dim"), proposal.agent_id),
            Text.assemble(
                ("Revision ", "dim"),
                (f"r{proposal.revision_number} ", "bold yellow"),
                (proposal.current_revision[:12], "dim"),
                ("  ", ""),
                (proposal.id, "dim"),
            ),
        ]
    if approval is not None:
        lines += [
            Text.assemble(("Request ", "dim"), approval.subject),
            Text.assemble(
                ("Asked by ", "dim"),
                approval.requested_by or "—",
                ("  ", ""),
                (approval.id, "dim"),
                (f"  [{approval.status}]", "yellow"),
            ),
        ]
        if approval.status not in (ApprovalStatus.REQUESTED, status):
            lines += [
                Text(""),
                Text(
                    f"You {approval.status.replace('_', ' ')} this before; confirming makes it {status}.",
                    style="bold yellow",
                ),
            ]
    else:
        lines.append(
            Text("No request is open for this revision: your decision is recorded on it directly.", style="dim")
        )
    if status == ApprovalStatus.APPROVED:
        lines += [Text(""), Text("Approving lets A apply this revision once every other gate passes.", style="dim")]
    name = proposal.title if proposal is not None else approval.id if approval is not None else ""
    return ConfirmScreen(f"{verb} {name}?", Group(*lines), confirm_label=verb)
