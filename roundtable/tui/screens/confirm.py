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
    body = Group(
        Text.assemble(("Proposal ", "dim"), (proposal.id, "bold"), "  ", proposal.title),
        Text.assemble(("Revision ", "dim"), (revision, "bold yellow"), f"  (r{number})"),
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
        Text.assemble(("Applied ", "dim"), f"{tx.applied_at or '—'} by {tx.applied_by}"),
        Text(""),
        Text("Roll back restores the files as they were before this apply, if nobody changed them since.", style="dim"),
    )
    return ConfirmScreen(f"Roll back {tx.id}?", body, confirm_label="Roll back")


def decision_dialog(approval: HumanApproval, status: str) -> ConfirmScreen:
    """Approve or deny: what is decided, and — when it was decided before — that this changes it."""
    verb = "Approve" if status == ApprovalStatus.APPROVED else "Deny"
    lines = [
        Text.assemble(("Approval ", "dim"), (approval.id, "bold"), (f"  [{approval.status}]", "yellow")),
        Text.assemble(("Subject ", "dim"), approval.subject),
        Text.assemble(
            ("Proposal ", "dim"), approval.proposal_id or "—", ("  revision ", "dim"), approval.revision or "—"
        ),
        Text.assemble(("Requested by ", "dim"), approval.requested_by or "—"),
    ]
    if approval.status != ApprovalStatus.REQUESTED:
        lines += [
            Text(""),
            Text(
                f"This approval was already {approval.status} by {approval.decided_by or 'someone'}; "
                f"confirming changes the decision to {status}.",
                style="bold yellow",
            ),
        ]
    return ConfirmScreen(f"{verb} {approval.id}?", Group(*lines), confirm_label=verb)
