"""How many times an argument is written: long signatures and keyword spreads in the package.

Static figures read from the source with `ast` (nothing is imported or run):

- functions with at least `LONG` parameters (every kind: positional, keyword-only, `*args`,
  `**kwargs`, `self` included) anywhere in `roundtable/`, and the longest of them;
- keyword spreads in the tool handlers (`roundtable/tools/`): calls that pass the validated
  arguments on field by field (`name=a.name`, `name=call.args.name`), and how many keywords
  they pass that way.

`python -m bench signatures` prints them as bench rows; `python -m bench.signatures` also lists
the long functions, longest first.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.rows import row
from bench.source import parse

PACKAGE = Path(__file__).resolve().parent.parent / "roundtable"
LONG = 8  # "a long signature": at least this many parameters


@dataclass(frozen=True)
class Signature:
    """One function definition and its parameter count."""

    where: str  # path:line
    name: str
    params: int


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    return len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def signatures(root: Path = PACKAGE) -> list[Signature]:
    """Every function and method under `root`, longest signature first."""
    out: list[Signature] = []
    for path in _files(root):
        tree = parse(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where = f"{path.relative_to(root.parent)}:{node.lineno}"
                out.append(Signature(where, node.name, _params(node)))
    return sorted(out, key=lambda s: (-s.params, s.where))


def _is_args_field(value: ast.expr, names: frozenset[str]) -> bool:
    """`a.x`, `args.x` or `call.args.x`: one field of the validated arguments."""
    if not isinstance(value, ast.Attribute):
        return False
    base = value.value
    if isinstance(base, ast.Name):
        return base.id in names
    return isinstance(base, ast.Attribute) and base.attr == "args"


@dataclass(frozen=True)
class Spread:
    """A call that hands the validated arguments on one keyword per field."""

    where: str
    keywords: int


def spreads(root: Path = PACKAGE / "tools", names: frozenset[str] = frozenset({"a", "args"})) -> list[Spread]:
    """Calls under `root` passing at least two keywords of the form `x=a.x` / `x=call.args.x`."""
    out: list[Spread] = []
    for path in _files(root):
        tree = parse(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            spread = sum(1 for k in node.keywords if k.arg is not None and _is_args_field(k.value, names))
            if spread >= 2:
                out.append(Spread(f"{path.relative_to(root.parent.parent)}:{node.lineno}", spread))
    return out


def run() -> list[dict[str, Any]]:
    sigs = signatures()
    long = [s for s in sigs if s.params >= LONG]
    found = spreads()
    top = sigs[0] if sigs else Signature("", "", 0)
    return [
        row("signatures", f"functions with >= {LONG} parameters", len(long), "functions", "roundtable/"),
        row("signatures", "largest signature", top.params, "parameters", f"{top.name} ({top.where})"),
        row("signatures", "keyword spreads in handlers", len(found), "calls", "roundtable/tools/"),
        row("signatures", "keywords spread", sum(s.keywords for s in found), "keywords", "roundtable/tools/"),
    ]


def main() -> None:
    for r in run():
        print(f"{r['metric']}: {r['value']} {r['unit']} ({r['note']})")
    print()
    for s in signatures():
        if s.params < LONG:
            break
        print(f"{s.params:3d}  {s.name}  {s.where}")
    print()
    for sp in sorted(spreads(), key=lambda s: -s.keywords):
        print(f"spread {sp.keywords:3d}  {sp.where}")


if __name__ == "__main__":
    main()
