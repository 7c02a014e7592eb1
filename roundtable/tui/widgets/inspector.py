"""Inspector: the selected record in full; for a proposal, its current revision's diff
(syntax-highlighted) and the gate report."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from roundtable import clock, domain
from roundtable.services.views.entity import Entity
from roundtable.tui import commands
from roundtable.tui.timefmt import human_delta, short_time
from roundtable.tui.widgets.gate_report import render_gate_report


class Inspector(VerticalScroll, can_focus=True):
    BINDINGS = [
        Binding("j", "scroll_down", "Down", show=False),
        Binding("k", "scroll_up", "Up", show=False),
        *commands.pane_bindings("inspector"),
    ]

    def __init__(self, *, id: str | None = "inspector") -> None:
        super().__init__(id=id)
        self.entity: Entity | None = None
        self.gate: tuple[dict[str, Any] | None, str] | None = None
        self.border_title = "Inspector"

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(Text("Select a row and press enter.", style="dim"), id="inspector-body")

    def show_entity(self, entity: Entity | None, kind: str = "", entity_id: str = "") -> None:
        self.entity = entity
        self.border_title = f"Inspector · {kind} {entity_id}" if kind else "Inspector"
        self._redraw()

    def show_gates(self, report: dict[str, Any] | None, error: str) -> None:
        self.gate = (report, error)
        self._redraw()

    def _redraw(self) -> None:
        body = self.query_one("#inspector-body", Static)
        entity = self.entity
        if entity is None:
            body.update(Text("Not found (deleted, or not loaded yet).", style="dim"))
            return
        parts: list[RenderableType] = []
        if entity.kind == "proposal":
            parts.extend(self._proposal_parts(entity))
        now = getattr(self.app, "clock_ns", clock.now_ns)()
        parts.append(_record_table(entity.record, now))
        for name, rows in entity.related.items():
            parts.append(Text(f"\n{name} ({len(rows)})", style="bold"))
            for row in rows:
                parts.append(Text("  " + "  ".join(f"{k}={_short(v)}" for k, v in row.items())))
        body.update(Group(*parts))

    def _proposal_parts(self, entity: Entity) -> list[RenderableType]:
        record = entity.record
        revision = str(record.get("current_revision") or "")
        parts: list[RenderableType] = [
            Text.assemble((str(record.get("title") or ""), "bold"), "  ", (f"[{record.get('status')}]", "yellow")),
            Text.assemble(
                ("by ", "dim"),
                str(record.get("agent_id") or ""),
                ("  revision ", "dim"),
                (revision or "(none)", "bold"),
            ),
        ]
        number = record.get("revision_number") or 0
        open_comments = [c for c in entity.related.get("comments", []) if c.get("revision") == number]
        if open_comments:
            many = "" if len(open_comments) == 1 else "s"
            parts.append(Text(f"{len(open_comments)} comment{many} on r{number} (d: review view)", style="yellow"))
        parts.extend(_landing_parts(entity.landing))
        parts.append(Text("\ngates", style="bold underline"))
        report, error = self.gate if self.gate else (None, "")
        status = str(record.get("status") or "")
        if report is None and not error and not domain.is_open(status):
            parts.append(Text(f"{status}: no longer gated (an apply re-checks every gate at that moment)", style="dim"))
        else:
            parts.append(render_gate_report(report, error))
        parts.append(Text(f"\ndiff r{record.get('revision_number') or 0} {revision[:12]}", style="bold underline"))
        if entity.diff_note:
            parts.append(Text(entity.diff_note, style="dim"))
        if entity.diff_text:
            parts.append(
                Syntax(entity.diff_text, "diff", theme="ansi_dark", word_wrap=False, background_color="default")
            )
        parts.append(Text("\nrecord", style="bold underline"))
        return parts


def _landing_parts(landing: Any) -> list[RenderableType]:
    """Where the proposal lands: its branch and commit, the pull request (a terminal link the
    operator can open) and each forge check of that commit with its conclusion."""
    if not isinstance(landing, dict):
        return []
    branch = str(landing.get("ref") or "").removeprefix("refs/heads/")
    parts: list[RenderableType] = [
        Text("\nlanding", style="bold underline"),
        Text.assemble(
            (f"{landing.get('mode')}  ", "dim"), branch, ("  @ ", "dim"), str(landing.get("commit_sha"))[:12]
        ),
    ]
    url = str(landing.get("pr_url") or "")
    if url:
        parts.append(
            Text.assemble(
                (f"pull request #{landing.get('pr_number')} ({landing.get('pr_state') or 'open'})  ", "dim"),
                (url, f"link {url}"),
            )
        )
    styles = {"success": "green", "pending": "yellow"}
    for check in json.loads(str(landing.get("checks_json") or "[]")):
        conclusion = str(check.get("conclusion"))
        parts.append(
            Text.assemble(
                (f"  {conclusion:<9}", styles.get(conclusion, "red")),
                f" {check.get('name')}  ",
                (str(check.get("sha"))[:12], "dim"),
                "  ",
                (str(check.get("url")), f"link {check.get('url')}"),
            )
        )
    return parts


def _record_table(record: dict[str, Any], now_ns: int | None = None) -> Table:
    """A record as labelled fields: `created_at` reads "created at", JSON is pretty-printed,
    timestamps say how long ago, and empty values are a dim dash instead of `{}` or blank."""
    now = clock.now_ns() if now_ns is None else now_ns
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in record.items():
        table.add_row(_label(key), _value(key, value, now))
    return table


def _label(key: str) -> str:
    for suffix in ("_json", "_md"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key.replace("_", " ")


def _value(key: str, value: Any, now_ns: int) -> RenderableType:
    if value is None or value == "":
        return Text("—", style="dim")
    if key.endswith("_json") and isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return Text(value)
        if parsed in ({}, [], None, ""):
            return Text("—", style="dim")
        return Text(json.dumps(parsed, indent=2, ensure_ascii=False, sort_keys=True))
    if key.endswith("_at") and isinstance(value, str):
        try:
            ago = (now_ns - clock.parse(value)) / 1e9
        except ValueError:
            return Text(value)
        when = human_delta(abs(ago))
        return Text.assemble(short_time(value), (f"  ({when} ago)" if ago >= 0 else f"  (in {when})", "dim"))
    if isinstance(value, bool):
        return Text("yes" if value else "no")
    return Text(str(value))


def _short(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= 40 else text[:39] + "…"
