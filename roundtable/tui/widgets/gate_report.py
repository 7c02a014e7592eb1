"""Renders a `patch.validate` report as a list of gates: passed, failed (with why) or unknown.

Failing gates are always shown, never hidden; the apply confirmation and the inspector both
use this.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text


def gates(report: dict[str, Any]) -> list[tuple[str, bool | None, str]]:
    """(gate, passed or None when not reported, detail) in pipeline order."""
    out: list[tuple[str, bool | None, str]] = []
    listed = report.get("gates")
    if isinstance(listed, list) and listed:
        # Ours: the validator lists every gate it checks, with its reason; show exactly those.
        for item in listed:
            if isinstance(item, dict):
                ok = item.get("passed", item.get("ok"))
                out.append(
                    (str(item.get("name") or "gate"), None if ok is None else bool(ok), str(item.get("reason") or ""))
                )
        return out

    def add(name: str, ok: Any, detail: Any = "") -> None:
        out.append((name, None if ok is None else bool(ok), str(detail or "")))

    if "claims_valid" in report:
        add("claims", report.get("claims_valid"), report.get("claim_error"))
    if "patch_exists" in report:
        add("patch stored", report.get("patch_exists"))
    if "patch_parse_error" in report:
        add("patch parses", not report.get("patch_parse_error"), report.get("patch_parse_error"))
    if "resource_coverage" in report:
        add("resource coverage", report.get("resource_coverage"), report.get("resource_error"))
    if "temp_apply_error" in report:
        add("dry-run apply", not report.get("temp_apply_error"), report.get("temp_apply_error"))
    policy = report.get("policy")
    if isinstance(policy, dict):
        ok = policy.get("allowed", policy.get("passed", policy.get("ok")))
        detail = policy.get("reason") or policy.get("reasons") or policy.get("decision") or ""
        if isinstance(detail, list):
            detail = "; ".join(map(str, detail))
        add("policy", ok, detail)
    if "human_approval_applied" in report or "human_approval_required" in report:
        required = report.get("human_approval_required", True)
        ok = report.get("human_approval_applied") or not required
        add("human approval", ok, "" if ok else "no approval for this revision")
    if "security_review_required" in report:
        required = bool(report.get("security_review_required"))
        ok = report.get("security_review_satisfied") or not required
        add("security review", ok, "" if ok else "required and not satisfied")
    for key in ("tests_satisfied", "tests_passed"):
        if key in report:
            add("tests", report.get(key), report.get("tests_error", ""))
            break
    for item in report.get("gates", []) if isinstance(report.get("gates"), list) else []:
        if isinstance(item, dict):
            add(
                str(item.get("name") or item.get("gate") or "gate"),
                item.get("passed", item.get("ok")),
                item.get("detail") or item.get("reason"),
            )
    return out


def render_gate_report(report: dict[str, Any] | None, error: str = "") -> RenderableType:
    if report is None:
        if error:
            return Text(f"gate report unavailable: {error}", style="yellow")
        return Text("no gate report yet — press v to validate", style="dim")
    table = Table.grid(padding=(0, 1))
    table.add_column(width=1)
    table.add_column()
    table.add_column(style="dim")
    rows = gates(report)
    for name, ok, detail in rows:
        mark = (
            Text("?", style="yellow") if ok is None else Text("✓", style="green") if ok else Text("✗", style="bold red")
        )
        table.add_row(mark, Text(name, style="" if ok is not False else "bold red"), detail)
    failing = sum(1 for _n, ok, _d in rows if ok is False)
    ready = report.get("applicable", report.get("valid"))
    verdict = Text()
    if ready is not None or failing:
        good = bool(ready) and not failing
        verdict = Text(
            ("ready to apply" if good else "not applicable") + (f" · {failing} gate(s) failing" if failing else ""),
            style="bold green" if good else "bold red",
        )
    spent = cost_line(report)
    parts = [table, verdict] if rows else [Text(str(report)[:2000]), verdict]
    return Group(*parts, spent) if spent.plain else Group(*parts)


def cost_line(report: dict[str, Any]) -> Text:
    """`cost: r1 7.2k tokens · $0.03 · r2 …`: what the sessions that made and reviewed each
    revision spent (empty when none reported usage)."""
    from roundtable.services.sessions.usage import describe

    cost = report.get("cost")
    revisions = cost.get("by_revision") if isinstance(cost, dict) else None
    if not isinstance(revisions, list) or not revisions:
        return Text("")
    shown = " · ".join(f"r{r.get('revision', '?')} {describe(r)}" for r in revisions if isinstance(r, dict))
    return Text(f"cost: {shown}", style="dim")
