"""Bench rows, their floors and targets, and the comparison of two saved runs.

A row is a dict: `benchmark`, `metric`, `value`, `unit`, `note`, and optionally
- `floor`: the `metric` of another row of the same benchmark that this value is measured against;
  `python -m bench` adds `ratio` = value ÷ that row's value;
- `target`: what the row must reach, as text: `<= 2x` or `>= 50%` compare the ratio to its floor,
  `<= 20 ms` (any unit, or none) compares the value itself. `python -m bench` adds `status`:
  `met` or `missed` (empty without a target, `no floor` when the floor row is absent).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from typing import Any

_TARGET = re.compile(r"^\s*(<=|>=|<|>)\s*([0-9][0-9_,]*(?:\.[0-9]+)?)\s*(x|%)?")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
}


def row(
    benchmark: str,
    metric: str,
    value: float | int | str,
    unit: str,
    note: str = "",
    *,
    floor: str = "",
    target: str = "",
) -> dict[str, Any]:
    """One row; floats are rounded to three decimals."""
    out: dict[str, Any] = {
        "benchmark": benchmark,
        "metric": metric,
        "value": round(value, 3) if isinstance(value, float) else value,
        "unit": unit,
        "note": note,
    }
    if floor:
        out["floor"] = floor
    if target:
        out["target"] = target
    return out


def parse_target(text: str) -> tuple[str, float, bool] | None:
    """(`op`, threshold, against the ratio?) of a target text, or None when it does not parse."""
    m = _TARGET.match(text)
    if m is None:
        return None
    threshold = float(m.group(2).replace(",", "").replace("_", ""))
    suffix = m.group(3)
    if suffix == "%":
        return m.group(1), threshold / 100, True
    return m.group(1), threshold, suffix == "x"


def evaluate(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with `ratio` (and `floor_value`) and `status` filled in where they apply."""
    rows = list(rows)
    by_key = {(r.get("benchmark"), r.get("metric")): r for r in rows}
    for r in rows:
        value = r.get("value")
        ratio: float | None = None
        floor_name = r.get("floor")
        if floor_name:
            floor = by_key.get((r.get("benchmark"), floor_name))
            floor_value = floor.get("value") if floor else None
            if isinstance(value, int | float) and isinstance(floor_value, int | float) and floor_value:
                ratio = float(value) / float(floor_value)
                r["ratio"] = round(ratio, 3)
                r["floor_value"] = floor_value
        target = r.get("target")
        if not target:
            continue
        parsed = parse_target(str(target))
        if parsed is None or not isinstance(value, int | float):
            r["status"] = "?"
            continue
        op, threshold, of_ratio = parsed
        if of_ratio and ratio is None:
            r["status"] = "no floor"
            continue
        measured = ratio if of_ratio and ratio is not None else float(value)
        r["status"] = "met" if _OPS[op](measured, threshold) else "missed"
    return rows


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def table(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The markdown table `make bench` prints: value, unit, ratio to the named floor, target."""
    lines = ["| benchmark | metric | value | unit | ratio (÷ floor) | target | note |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}× {r['floor']}" if "ratio" in r else ""
        target = f"{r['target']}: **{r.get('status', '')}**" if r.get("target") else ""
        lines.append(
            f"| {r.get('benchmark', '')} | {r.get('metric', '')} | {fmt(r.get('value', ''))} | {r.get('unit', '')} "
            f"| {ratio} | {target} | {r.get('note', '')} |"
        )
    return lines


def compare(old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]]) -> list[str]:
    """Per row (matched on benchmark and metric): old value, new value, change in percent, and
    the target's status before and after. Rows only in one run are listed as added or gone."""
    old_rows = {(r.get("benchmark"), r.get("metric")): r for r in old}
    new_rows = {(r.get("benchmark"), r.get("metric")): r for r in new}
    lines = ["| benchmark | metric | old | new | unit | change | target |", "|---|---|---|---|---|---|---|"]
    for key, r in new_rows.items():
        before = old_rows.get(key)
        value = r.get("value")
        status = r.get("status", "")
        if before is None:
            lines.append(f"| {key[0]} | {key[1]} | — | {fmt(value)} | {r.get('unit', '')} | added | {status} |")
            continue
        was = before.get("value")
        change = ""
        if isinstance(was, int | float) and isinstance(value, int | float) and not isinstance(was, bool):
            change = f"{(value - was) / was:+.1%}" if was else ("0" if value == was else "new from 0")
        elif was != value:
            change = "changed"
        old_status = before.get("status", "")
        shown = f"{old_status} → {status}" if old_status != status else status
        lines.append(f"| {key[0]} | {key[1]} | {fmt(was)} | {fmt(value)} | {r.get('unit', '')} | {change} | {shown} |")
    for key, r in old_rows.items():
        if key not in new_rows:
            lines.append(f"| {key[0]} | {key[1]} | {fmt(r.get('value'))} | — | {r.get('unit', '')} | gone | |")
    return lines
