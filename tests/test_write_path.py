"""One write path: only the runtime (`Runtime.call`'s transaction) and the services open write
transactions. Everything else — the Chair, the supervisor, the dispatcher, the CLI, the console,
the transports, the tool handlers — changes state through registered operations."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "roundtable"
ALLOWED = ("runtime.py", "services/")


def _opens_a_write(node: ast.AST) -> bool:
    """`<something>.db.write(...)` or `db.write(...)`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "write"):
        return False
    target = node.func.value
    return (isinstance(target, ast.Name) and target.id == "db") or (
        isinstance(target, ast.Attribute) and target.attr == "db"
    )


def writers() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        found += [f"{rel}:{node.lineno}" for node in ast.walk(tree) if _opens_a_write(node)]
    return found


def test_the_scan_finds_writers() -> None:
    assert any(w.startswith("runtime.py:") for w in writers())
    assert any(w.startswith("services/") for w in writers())


def test_only_the_runtime_and_the_services_open_write_transactions() -> None:
    outside = [w for w in writers() if not w.startswith(ALLOWED)]
    assert outside == [], f"write transactions outside the runtime and services: {outside}"
