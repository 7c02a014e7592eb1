"""One write path: only the runtime (`Runtime.call`'s transaction) and the services open write
transactions. Everything else — the Chair, the supervisor, the dispatcher, the CLI, the console,
the transports, the tool handlers — changes state through registered operations."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.source import parse

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
        tree = parse(path, rel)
        found += [f"{rel}:{node.lineno}" for node in ast.walk(tree) if _opens_a_write(node)]
    return found


def test_the_scan_finds_writers() -> None:
    assert any(w.startswith("runtime.py:") for w in writers())
    assert any(w.startswith("services/") for w in writers())


def test_only_the_runtime_and_the_services_open_write_transactions() -> None:
    outside = [w for w in writers() if not w.startswith(ALLOWED)]
    assert outside == [], f"write transactions outside the runtime and services: {outside}"


# --- the call graph: nothing above the tools layer calls a service function that writes ---------

SERVICES = PACKAGE / "services"
# Modules above the tools layer: they change state only through `Runtime.call`.
UPPER = ("cli/", "tui/", "demo/", "server/", "supervisor.py", "owner.py", "autopilot/", "chair/", "notify/")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _functions(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level functions of a module, and methods as `Class.method`."""
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{node.name}.{item.name}"] = item
    return out


def _imports(tree: ast.Module, module: str) -> dict[str, str]:
    """Local name → what it names (`roundtable.services.coordination.runs` or `roundtable.services.coordination.runs.end_run`),
    from every import in the module, including those inside functions."""
    names: dict[str, str] = {}
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _references(node: ast.AST, imports: dict[str, str]) -> list[tuple[int, str]]:
    """(line, qualified name) of every imported name used in `node`: `runs.end_run` →
    `roundtable.services.coordination.runs.end_run`, `end_run` (imported from it) → the same."""
    found: list[tuple[int, str]] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id in imports:
            found.append((sub.lineno, f"{imports[sub.value.id]}.{sub.attr}"))
        elif isinstance(sub, ast.Name) and sub.id in imports:
            found.append((sub.lineno, imports[sub.id]))
    return found


def service_writers() -> dict[str, str]:
    """Every service function that opens a write transaction itself, or calls one that does
    (qualified name → why), found by a fixed point over the services' own call graph."""
    bodies: dict[str, tuple[ast.AST, dict[str, str]]] = {}
    for path in sorted(SERVICES.rglob("*.py")):
        module = _module_name(path)
        tree = parse(path)
        imports = _imports(tree, module)
        for name, fn in _functions(tree).items():
            local = {**imports, **{n: f"{module}.{n}" for n in _functions(tree) if "." not in n}}
            bodies[f"{module}.{name}"] = (fn, local)
    writers: dict[str, str] = {
        name: "opens db.write" for name, (fn, _) in bodies.items() if any(_opens_a_write(n) for n in ast.walk(fn))
    }
    changed = True
    while changed:
        changed = False
        for name, (fn, local) in bodies.items():
            if name in writers:
                continue
            for _line, ref in _references(fn, local):
                if ref in writers and ref != name:
                    writers[name] = f"calls {ref}"
                    changed = True
                    break
    return writers


def upper_layer_calls() -> list[str]:
    writers = service_writers()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(UPPER):
            continue
        tree = parse(path, rel)
        imports = _imports(tree, _module_name(path))
        for line, ref in _references(tree, imports):
            if ref in writers:
                found.append(f"{rel}:{line} uses {ref.removeprefix('roundtable.')} ({writers[ref]})")
    return sorted(set(found))


def test_the_call_graph_scan_finds_service_writers() -> None:
    writers = service_writers()
    assert writers["roundtable.services.coordination.runs.end_run"] == "opens db.write"
    # found through the services' own calls, not only by the direct `db.write`
    assert any(why.startswith("calls ") for why in writers.values())


def test_nothing_above_the_tools_layer_calls_a_service_that_writes() -> None:
    found = upper_layer_calls()
    assert found == [], "call these through Runtime.call (a registered operation):\n" + "\n".join(found)
