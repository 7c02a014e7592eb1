"""New task: the form behind `n` — title, body, readable paths and priority. `None` means
cancelled; the app creates the task through `task.create` as the operator."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


@dataclass(frozen=True)
class TaskDraft:
    title: str
    body_md: str
    readable_paths: list[str]
    priority: int


FIELDS: tuple[tuple[str, str, str], ...] = (
    ("title", "Title", "what to do, in a line"),
    ("body", "Body (Markdown)", "details, acceptance criteria"),
    ("paths", "Readable paths: files or directories, comma-separated (empty: the whole repository)", "src, tests"),
    ("priority", "Priority (lower runs first)", "100"),
)


def path_problem(root: Path | None, path: str) -> str:
    """Why a readable path cannot be used ("" when it can): it must be relative, stay inside the
    project and exist there (a file or a directory)."""
    if path.startswith("/") or any(part == ".." for part in Path(path).parts):
        return f"{path}: give a path relative to the project, inside it"
    if root is not None and not (root / path).exists():
        return f"{path}: no such file or directory in the project"
    return ""


class TaskForm(ModalScreen[TaskDraft | None]):
    """`root` is the project: readable paths are checked against it before the form submits."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, root: Path | None = None) -> None:
        super().__init__()
        self.root = root

    def compose(self) -> ComposeResult:
        with Vertical(id="launch-box") as box:
            box.border_title = "New task"
            box.border_subtitle = "enter next field · esc cancel"
            for name, label, placeholder in FIELDS:
                yield Label(label)
                yield Input(placeholder=placeholder, id=f"task-{name}")
            yield Static("", id="task-error")

    def on_mount(self) -> None:
        self.query_one("#task-title", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        names = [n for n, _l, _p in FIELDS]
        current = (event.input.id or "").removeprefix("task-")
        if current in names and names.index(current) < len(names) - 1:
            self.query_one(f"#task-{names[names.index(current) + 1]}", Input).focus()
            return
        self.submit()

    def submit(self) -> None:
        values = {n: self.query_one(f"#task-{n}", Input).value.strip() for n, _l, _p in FIELDS}
        error = ""
        if not values["title"]:
            error, field = "a title is required", "title"
        elif not values["body"]:
            error, field = "a body is required", "body"
        elif values["priority"] and not values["priority"].lstrip("-").isdigit():
            error, field = "the priority is a whole number", "priority"
        paths = [p.strip().rstrip("/") or "." for p in values["paths"].split(",") if p.strip()]
        if not error:
            error = next((problem for path in paths if (problem := path_problem(self.root, path))), "")
            field = "paths"
        if error:
            self.query_one("#task-error", Static).update(Text(error, style="red"))
            self.query_one(f"#task-{field}", Input).focus()
            return
        self.dismiss(TaskDraft(values["title"], values["body"], paths, int(values["priority"] or 100)))

    def action_cancel(self) -> None:
        self.dismiss(None)
