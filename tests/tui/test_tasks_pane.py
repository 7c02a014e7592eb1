"""The Tasks pane: create a task from the console, see status and assignee, block or cancel one —
each through `task.update_status`/`task.create` as the operator, with their events."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from roundtable.runtime import Runtime
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.screens.prompt import PromptScreen
from roundtable.tui.screens.task_form import TaskForm
from roundtable.tui.widgets.tasks_pane import TasksPane
from tests.tui.conftest import make_app, notifications, settle, wait_for
from tests.tui.flows import scalar

pytestmark = pytest.mark.anyio


async def _select_task(app, task_id: str) -> TasksPane:  # type: ignore[no-untyped-def]
    pane = app.query_one(TasksPane)
    pane.focus()
    await wait_for(lambda: task_id in [r.value for r in pane.rows], what=f"{task_id} listed")
    for index, row_key in enumerate(pane.rows):
        if row_key.value == task_id:
            pane.move_cursor(row=index)
    return pane


async def test_create_block_and_cancel_tasks(runtime: Runtime) -> None:
    app = make_app(runtime)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        await pilot.press("n")
        await wait_for(lambda: isinstance(app.screen, TaskForm), what="task form")
        await pilot.press("enter")  # enter moves field by field
        assert app.screen.query_one("#task-body", Input).has_focus
        app.screen.submit()  # type: ignore[attr-defined]  # no title: refused, the cursor goes back to it
        await pilot.pause()
        assert "title is required" in str(app.screen.query_one("#task-error").render())
        assert app.screen.query_one("#task-title", Input).has_focus
        for name, value in (("title", "Add div()"), ("body", "Divide, refusing zero"), ("paths", "calc, tests")):
            app.screen.query_one(f"#task-{name}", Input).value = value
        app.screen.query_one("#task-priority", Input).value = "5"
        # Readable paths must exist in the project (files or directories) before the form submits.
        app.screen.submit()  # type: ignore[attr-defined]
        await pilot.pause()
        assert "calc: no such file or directory in the project" in str(app.screen.query_one("#task-error").render())
        assert app.screen.query_one("#task-paths", Input).has_focus
        app.screen.query_one("#task-paths", Input).value = "../etc"
        app.screen.submit()  # type: ignore[attr-defined]
        await pilot.pause()
        assert "relative to the project, inside it" in str(app.screen.query_one("#task-error").render())
        (runtime.root / "calc").mkdir()
        (runtime.root / "tests").mkdir(exist_ok=True)
        app.screen.query_one("#task-paths", Input).value = "calc, tests"
        app.screen.submit()  # type: ignore[attr-defined]
        await wait_for(lambda: any("task created" in n for n in notifications(app)), what="created")
        task_id = await scalar(runtime, "SELECT id FROM tasks WHERE title = 'Add div()'")
        await wait_for(lambda: app.query_one(TasksPane).selected_key() == task_id, what="new task selected")
        assert (
            await scalar(runtime, "SELECT readable_paths_json FROM tasks WHERE id = ?", (task_id,))
            == '["calc", "tests"]'
        )
        assert await scalar(runtime, "SELECT priority FROM tasks WHERE id = ?", (task_id,)) == 5
        assert await scalar(runtime, "SELECT COUNT(*) FROM events WHERE type = 'task.created'") == 1

        await _select_task(app, task_id)
        await pilot.press("b")
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="block reason")
        await pilot.press(*"waiting on a decision", "enter")
        await wait_for(lambda: any("blocked" in n for n in notifications(app)), what="blocked")
        assert await scalar(runtime, "SELECT status FROM tasks WHERE id = ?", (task_id,)) == "blocked"
        assert "⚑ 1 need you" in app.header.compose_text().plain  # a blocked task needs the operator

        await settle(app)
        await _select_task(app, task_id)
        await pilot.press("c")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="cancel confirmation")
        await pilot.press("y")
        await wait_for(lambda: any("cancelled" in n for n in notifications(app)), what="cancelled")
        assert await scalar(runtime, "SELECT status FROM tasks WHERE id = ?", (task_id,)) == "cancelled"
        await settle(app)
        await _select_task(app, task_id)
        await pilot.press("c")
        await wait_for(lambda: any("cancelled already" in n for n in notifications(app)), what="refusal")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_runs_from_the_console(runtime: Runtime) -> None:
    from roundtable.services.coordination import runs
    from roundtable.tui.widgets.runs_pane import RunsPane

    first = await runs.create_run(runtime, "first goal")
    app = make_app(runtime, run_id=first.id)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app)
        await pilot.press("g")
        await wait_for(lambda: isinstance(app.screen, PromptScreen), what="goal prompt")
        await pilot.press(*"ship div", "enter")
        await wait_for(lambda: app.run_id != first.id, what="the new run in view")
        new_id = app.run_id
        assert await scalar(runtime, "SELECT goal FROM runs WHERE id = ?", (new_id,)) == "ship div"
        await settle(app)
        assert new_id in app.header.compose_text().plain

        pane = app.query_one(RunsPane)
        pane.focus()
        await wait_for(lambda: first.id in [r.value for r in pane.rows], what="runs listed")
        pane.move_cursor(row=[r.value for r in pane.rows].index(first.id))
        await pilot.press("u")
        await wait_for(lambda: app.run_id == first.id, what="switched back")

        await pilot.press("e")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="end confirmation")
        await pilot.press("y")
        await wait_for(lambda: any(f"{first.id} completed" in n for n in notifications(app)), what="ended")
        assert await scalar(runtime, "SELECT status FROM runs WHERE id = ?", (first.id,)) == "completed"
        await settle(app)
        pane.move_cursor(row=[r.value for r in pane.rows].index(first.id))
        await pilot.press("e")
        await wait_for(lambda: any("only an active run can be ended" in n for n in notifications(app)), what="refusal")

        # An ended run can be archived: it leaves the Runs pane (the run in view stays shown).
        await pilot.press("E")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="archive confirmation")
        await pilot.press("y")
        await wait_for(lambda: any(f"{first.id} archived" in n for n in notifications(app)), what="archived")
        assert await scalar(runtime, "SELECT status FROM runs WHERE id = ?", (first.id,)) == "archived"
        await pilot.press("u")  # leave the archived run
