"""Proposals and their transactions: `v` validates (every gate), `T` runs the tests as evidence
for the current revision, `A` applies after confirming the revision and gates, `r` rejects with
a reason, `R` rolls an applied transaction back. A and r and R refuse at once what is certain to
fail (a decided proposal, failing gates, a transaction that is not applied)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rich.console import Group
from rich.text import Text
from textual import work

from roundtable import domain
from roundtable.domain import TransactionStatus
from roundtable.errors import ToolError
from roundtable.services.governance import comments as comments_service
from roundtable.services.repository.patches import read_patch
from roundtable.services.testing.test_runs import sandbox_for
from roundtable.services.views import entity as views
from roundtable.store.records import Proposal, ProposalComment, Transaction
from roundtable.tui.base import OPERATOR_NAME, describe
from roundtable.tui.flows.flow import Flow
from roundtable.tui.messages import GateReport, GatesStale, InspectRequested
from roundtable.tui.screens.confirm import ConfirmScreen, apply_dialog, rollback_dialog
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.screens.review import Commenting, ReviewScreen, Revision
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from roundtable.tui.widgets.transactions_pane import TransactionsPane


def _only_open(verb: str) -> Callable[[Proposal], str]:
    def refuse(proposal: Proposal) -> str:
        if domain.is_open(proposal.status):
            return ""
        return f"{proposal.id} is {proposal.status}: only an open proposal can be {verb}."

    return refuse


def _only_applied(tx: Transaction) -> str:
    if tx.status == TransactionStatus.APPLIED:
        return ""
    return f"{tx.id} is {tx.status}: only an applied transaction can be rolled back."


def failing_gates(report: dict[str, Any]) -> list[str]:
    """The names of the gates a report marks failing."""
    return [str(g.get("name")) for g in report.get("gates") or [] if isinstance(g, dict) and not g.get("passed")]


class ProposalFlow(Flow):
    def _selected_transaction(self) -> Transaction | None:
        """On the Proposals pane: the selected proposal's applied transaction; else the
        Transactions pane's selection."""
        transactions = self.console.overview.transactions if self.console.overview else []
        if isinstance(self.console.focused, ProposalsPane):
            proposal = self.console.proposal_in_view()
            if proposal is not None:
                return next(
                    (t for t in transactions if t.proposal_id == proposal.id and t.status == TransactionStatus.APPLIED),
                    None,
                )
        return self.console.selected(TransactionsPane, transactions, lambda t: t.id)

    def _proposal_target(self, refuse: Callable[[Proposal], str] | None = None) -> Proposal | None:
        return self.console.target(
            self.console.proposal_in_view(),
            what="a proposal",
            pane="Proposals (or the Inspector on one)",
            refuse=refuse,
        )

    # --- review -----------------------------------------------------------------------------

    def action_review(self) -> None:
        proposal = self._proposal_target()
        if proposal is not None:
            self._review_flow(proposal)

    @work(group="dialog", exit_on_error=False)
    async def _review_flow(self, proposal: Proposal) -> None:
        """Open the review view on the current revision, with the previous one for `v`."""
        async with self.console.runtime.db.read() as r:
            rows = await views.newest_revisions(r, proposal.id)
        try:
            texts = [await asyncio.to_thread(read_patch, self.console.runtime.root, row.sha256) for row in rows]
        except ToolError as exc:
            self.notify(describe(exc), severity="error", title="review", timeout=8)
            return
        if not rows:
            self.notify(f"{proposal.title} has no patch revision.", severity="warning", title="review")
            return
        revisions = [Revision(row.number, row.sha256, text) for row, text in zip(rows, texts, strict=True)]
        previous = revisions[1] if len(revisions) > 1 else None
        shown = revisions[0].number

        async def load() -> list[ProposalComment]:
            async with self.console.runtime.db.read() as r:
                return await comments_service.for_revision(r, proposal.id, shown)

        async def leave(path: str, line: int, side: str, body: str) -> bool:
            args: dict[str, Any] = {"proposal_id": proposal.id, "revision": shown, "body_md": body}
            if path:
                args["path"] = path
            if line:
                args["line"] = line
                args["side"] = side
            where = comments_service.place(path, line, side)
            done = await self.console.call_tool(
                "proposal.comment", args, success=f"Comment left on {where}", title="comment"
            )
            return done is not None

        commenting = Commenting(load, None if self.console.read_only else leave)
        await self.console.push_screen_wait(
            ReviewScreen(proposal.title, proposal.id, revisions[0], previous, commenting)
        )
        self.console.dialog_closed()

    # --- gates ------------------------------------------------------------------------------

    def action_validate(self) -> None:
        proposal = self._proposal_target()
        if proposal is not None:
            self._validate(proposal.id)

    @work(group="actions", exit_on_error=False)
    async def _validate(self, proposal_id: str) -> None:
        report = await self.gate_report(proposal_id)
        if report is None:
            return
        failing = failing_gates(report)
        if report.get("applicable") and not failing:
            self.notify(f"{proposal_id}: every gate passes — ready to apply", title="validate")
        else:
            self.notify(
                f"{proposal_id}: not ready — {len(failing)} gate(s) failing: {', '.join(failing) or 'see the report'}",
                severity="warning",
                title="validate",
            )

    async def gate_report(self, proposal_id: str) -> dict[str, Any] | None:
        try:
            report = await self.console.runtime.call(
                "patch.validate", {"proposal_id": proposal_id}, self.console.caller
            )
        except Exception as exc:
            self.post_message(GateReport(proposal_id, None, describe(exc)))
            self.notify(describe(exc), severity="error", title="patch.validate", timeout=8)
            return None
        self.post_message(GateReport(proposal_id, report))
        self.post_message(InspectRequested("proposal", proposal_id))
        return report

    # --- tests ------------------------------------------------------------------------------

    def action_run_tests(self) -> None:
        proposal = self._proposal_target()
        if proposal is not None:
            self._run_tests(proposal.id)

    @work(group="tests", exclusive=True, exit_on_error=False)
    async def _run_tests(self, proposal_id: str) -> None:
        """`tests_required` is met only by a passing run the host executed on the current revision:
        run the proposal's expected tests that are among the allowed commands (else every allowed
        command) on a scratch worktree of the revision, in the sandbox. Agent-written expected
        tests that are not allowed are skipped, never run. Where no sandbox works here, the tests
        run only after the operator confirms that unreviewed code will run unsandboxed."""
        try:
            proposal = (
                await self.console.runtime.call("proposal.get", {"proposal_id": proposal_id}, self.console.caller)
            )["proposal"]
            suggested = await self.console.runtime.call(
                "test.suggest", {"proposal_id": proposal_id}, self.console.caller
            )
            sandbox = await sandbox_for(self.console.runtime)
        except Exception as exc:
            self.notify(describe(exc), severity="error", title="test.suggest", timeout=8)
            return
        allowed = [str(c) for c in suggested.get("commands") or []]
        expected = [str(c) for c in proposal.get("expected_tests") or []]
        skipped = [c for c in expected if c not in allowed]
        if skipped:
            self.notify(
                f"Skipped expected tests that are not configured commands: {', '.join(skipped)}",
                severity="warning",
                title="test.run",
                timeout=8,
            )
        commands = [c for c in expected if c in allowed] or allowed
        if not commands:
            self.notify("No test command found for this proposal.", severity="warning", title="test.run")
            return
        unsandboxed = False
        if not sandbox.usable:
            confirmed = await self.console.push_screen_wait(unsandboxed_dialog(proposal_id, commands, sandbox.reason))
            self.console.dialog_closed()
            if not confirmed:
                self.notify("Tests not run.", title="test.run")
                return
            unsandboxed = True
        try:
            for command in commands:
                # The header shows what runs and for how long until it ends (the progress indicator).
                self.console.header.activity = (f"testing {proposal_id}: {command}", self.console.clock_ns())
                self.console.header.update_view()
                args: dict[str, Any] = {"command": command, "proposal_id": proposal_id}
                if unsandboxed:
                    args["unsandboxed"] = True
                result = await self.console.call_tool("test.run", args, success=None)  # one toast: its status
                if result is not None:
                    run = result.get("test_run", result)
                    self.notify(f"{command}: {run.get('status', '?')}", title="test.run")
        finally:
            self.console.header.activity = None
            self.console.header.update_view()
        await self.gate_report(proposal_id)

    # --- decisions --------------------------------------------------------------------------

    def action_apply(self) -> None:
        proposal = self._proposal_target(_only_open("applied"))
        if proposal is not None:
            self._apply_flow(proposal)

    @work(group="dialog", exit_on_error=False)
    async def _apply_flow(self, proposal: Proposal) -> None:
        report = await self.gate_report(proposal.id)
        if report is None:
            return  # gate_report said why
        failing = failing_gates(report)
        if failing or not report.get("applicable"):
            # patch.apply re-checks every gate and would refuse: offer nothing certain to fail.
            self.notify(
                f"{proposal.id} cannot be applied yet — failing: {', '.join(failing) or 'see the report'} "
                "(the Inspector shows why).",
                severity="warning",
                title="apply",
                timeout=8,
            )
            return
        confirmed = await self.console.push_screen_wait(apply_dialog(proposal, report))
        self.console.dialog_closed()
        if not confirmed:
            self.notify("Apply cancelled.")
            return
        # Bind the apply to the revision the operator just saw: it is refused if it changed since.
        revision = str(report.get("revision") or proposal.current_revision or "")
        args = {"proposal_id": proposal.id, "applied_by": OPERATOR_NAME}
        if revision:
            args["revision"] = revision
        if self.console.run_id:
            args["run_id"] = self.console.run_id
        if await self.console.call_tool("patch.apply", args, success=f"{proposal.id} applied") is not None:
            self.post_message(GatesStale(proposal.id))

    def action_reject(self) -> None:
        proposal = self._proposal_target(_only_open("rejected"))
        if proposal is not None:
            self._reject_flow(proposal)

    @work(group="dialog", exit_on_error=False)
    async def _reject_flow(self, proposal: Proposal) -> None:
        reason = await self.console.push_screen_wait(
            PromptScreen(f"Reject {proposal.id}", f"{proposal.title}\nReason (required):", required=True)
        )
        self.console.dialog_closed()
        if reason:
            args = {"proposal_id": proposal.id, "reason_md": reason, "decided_by": OPERATOR_NAME}
            if await self.console.call_tool("patch.reject", args, success=f"{proposal.id} rejected") is not None:
                self.post_message(GatesStale(proposal.id))

    def action_rollback(self) -> None:
        tx = self.console.target(
            self._selected_transaction(), what="a transaction", pane="Transactions", refuse=_only_applied
        )
        if tx is not None:
            self._rollback_flow(tx)

    @work(group="dialog", exit_on_error=False)
    async def _rollback_flow(self, tx: Transaction) -> None:
        confirmed = await self.console.push_screen_wait(rollback_dialog(tx))
        self.console.dialog_closed()
        if confirmed:
            args = {"transaction_id": tx.id, "reason_md": "rolled back from the console"}
            if await self.console.call_tool("patch.rollback", args, success=f"{tx.id} rolled back") is not None:
                self.post_message(GatesStale(tx.proposal_id))


def unsandboxed_dialog(proposal_id: str, commands: list[str], reason: str) -> ConfirmScreen:
    """The `T` key's confirmation where no sandbox works: the revision's code is unreviewed and
    would run with the operator's full rights."""
    body = Group(
        Text.assemble(("Proposal ", "dim"), (proposal_id, "bold")),
        Text.assemble(("Commands ", "dim"), ", ".join(commands)),
        Text(""),
        Text("No sandbox works on this machine:", style="bold red"),
        Text(reason or "(no reason given)"),
        Text(""),
        Text(
            "The proposal's code is unreviewed. Its tests would run UNSANDBOXED, as you: with your "
            "network, your home directory and this project's .roundtable/ (database, credentials) "
            "within reach. Install bubblewrap to run them in a sandbox instead.",
            style="yellow",
        ),
    )
    return ConfirmScreen(f"Run unreviewed tests of {proposal_id} unsandboxed?", body, confirm_label="Run unsandboxed")
