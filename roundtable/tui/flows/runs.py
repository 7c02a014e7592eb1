"""Runs: `g` starts a run with a goal and shows it, `u` shows the run selected in the Runs pane,
`e` ends an active run, `E` archives an ended one (hidden, nothing deleted). Runs change through
the operator operations `run.create|end|archive` (as the CLI's `runs` commands do), each after a
confirmation; the owner's Chair and autopilot take a new run up like any other."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import work

from roundtable.domain import RunStatus
from roundtable.store.records import Run
from roundtable.tui.flows.flow import Flow
from roundtable.tui.messages import RefreshRequested
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.widgets.runs_pane import RunsPane


def _endable(run: Run) -> str:
    if run.status == RunStatus.ACTIVE:
        return ""
    return f"{run.id} is {run.status}: only an active run can be ended."


def _archivable(run: Run) -> str:
    return f"{run.id} is active: end it first (e)." if run.status == RunStatus.ACTIVE else ""


class RunFlow(Flow):
    def _selected_run(self, refuse: Callable[[Run], str] | None = None) -> Run | None:
        runs = self.console.overview.runs if self.console.overview else []
        return self.console.target(
            self.console.selected(RunsPane, runs, lambda r: r.id), what="a run", pane="Runs", refuse=refuse
        )

    async def _change_run(self, run_id: str, operation: str, args: dict[str, str], done: str) -> None:
        """Run one run operation (end, archive) with the console's error handling."""
        await self.console.call_tool(operation, {"run_id": run_id, **args}, success=f"{run_id} {done}", title="run")

    def show_run(self, run_id: str) -> None:
        """Make `run_id` the run in view: the header and the turn queue follow it."""
        self.console.run_id = run_id
        self.console.header.run_id = run_id
        self.console.header.update_view()
        self.post_message(RefreshRequested())

    def action_new_run(self) -> None:
        self._new_run_flow()

    @work(group="dialog", exit_on_error=False)
    async def _new_run_flow(self) -> None:
        goal = await self.console.push_screen_wait(PromptScreen("New run", "Goal (required):", required=True))
        self.console.dialog_closed()
        if not goal:
            return
        result = await self.console.call_tool(
            "run.create", {"goal": goal}, success="run started; the console shows it now", title="run"
        )
        if result is not None:
            self.show_run(str(result["run"]["id"]))

    def action_view_run(self) -> None:
        run = self._selected_run()
        if run is not None:
            self.show_run(run.id)
            self.notify(f"showing {run.id}", title="run")

    def action_end_run(self) -> None:
        run = self._selected_run(_endable)
        if run is not None:
            self._end_run_flow(run)

    @work(group="dialog", exit_on_error=False)
    async def _end_run_flow(self, run: Run) -> None:
        body = Text.assemble(
            ("Run ", "dim"),
            (run.id, "bold"),
            "  goal: ",
            run.goal or "—",
            ("\nIts status becomes completed; the Chair stops ticking it.", "dim"),
        )
        confirmed = await self.console.push_screen_wait(ConfirmScreen(f"End {run.id}?", body, confirm_label="End run"))
        self.console.dialog_closed()
        if confirmed:
            status = RunStatus.COMPLETED.value
            await self._change_run(run.id, "run.end", {"status": status}, status)

    def action_archive_run(self) -> None:
        run = self._selected_run(_archivable)
        if run is not None:
            self._archive_run_flow(run)

    @work(group="dialog", exit_on_error=False)
    async def _archive_run_flow(self, run: Run) -> None:
        body = Text.assemble(
            ("Run ", "dim"),
            (run.id, "bold"),
            (f"  [{run.status}]", "yellow"),
            ("\nHidden from the Runs pane and from resume; nothing is deleted (runs list --all shows it).", "dim"),
        )
        confirmed = await self.console.push_screen_wait(
            ConfirmScreen(f"Archive {run.id}?", body, confirm_label="Archive")
        )
        self.console.dialog_closed()
        if confirmed:
            await self._change_run(run.id, "run.archive", {}, "archived")
