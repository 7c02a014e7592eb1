"""The vocabulary lives in `roundtable/domain.py`: no status or event type is spelled as a string
literal in roundtable's Python code anywhere else.

An AST walk, not a grep, so docstrings, log text and unrelated words pass:
- an event type (a dotted value such as `patch.applied`) is flagged wherever it appears as a
  string constant that is not a docstring;
- a status value (a plain word such as `active`) is flagged only where it stands for a status:
  compared with, assigned to, passed as or keyed by a name that says status, state, vote, risk,
  outcome or decision (`run.status == "active"`, `status="failed"`, `{"status": "pending"}`,
  `TERMINAL = frozenset({...})` under such a name, `case "open":` on such a subject), or passed to
  a function whose name says so, or given a constant's name of its own (`PASSED = "passed"`).
- SQL text may spell a status beside its column (`WHERE status = 'active'`): bound parameters would
  hide the query's shape and defeat partial indexes. Every such literal must name a value defined
  in `domain.py`, so a renamed or misspelled status still fails here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

from bench.source import parse
from roundtable import domain
from roundtable.tools.registry import get_registry

ROOT = Path(__file__).resolve().parents[1] / "roundtable"
DOMAIN = ROOT / "domain.py"
# Migration steps are SQL history: they are never edited, so they keep the values they were written with.
EXEMPT = {ROOT / "store" / "schema.py"}

CONTEXT = re.compile(r"(status|state|vote|risk|outcome|decision|ending|transition)", re.IGNORECASE)
SQL = re.compile(r"\b(SELECT|UPDATE|INSERT|DELETE|WHERE)\b")
SQL_LITERAL = re.compile(
    r"(?<![a-z_])(?P<col>[a-z_.]*(?:status|state|outcome)|(?:[a-z]+\.)?type)\s*(?:=|!=|<>|\bIN\b|\bNOT IN\b)\s*\(?(?P<vals>'[^']*'(?:\s*,\s*'[^']*')*)",
    re.IGNORECASE,
)


def _enums() -> list[type[StrEnum]]:
    return [v for v in vars(domain).values() if isinstance(v, type) and issubclass(v, StrEnum) and v is not StrEnum]


EVENT_TYPES: frozenset[str] = frozenset(str(m) for e in _enums() for m in e if "." in str(m))
# An operation may share its name with the event it records (`vote.cast`): such a value is an
# event type only where it is used as one (appended, or compared with an event's type).
SHARED_WITH_TOOLS: frozenset[str] = EVENT_TYPES & frozenset(get_registry().names())
EVENT_CONTEXT = re.compile(r"(^|_)(type|kind|event)s?$", re.IGNORECASE)
# Vocabularies of domain.py that are not statuses: event types, and what a transcript entry is.
NOT_STATUSES = {"EventType", "TurnEvent", "TranscriptKind"}
STATUSES: frozenset[str] = (
    frozenset(str(m) for e in _enums() if e.__name__ not in NOT_STATUSES for m in e)
    | frozenset(domain.TERMINAL_TASK_STATUSES)
    | {domain.NARROWED}
)


def _name(node: ast.AST) -> str:
    """The name an expression is known by: `x.status` → status, `row["state"]` → state."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
        return _name(node.value)
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _says_status(node: ast.AST) -> bool:
    return bool(CONTEXT.search(_name(node)))


def _constants(node: ast.AST) -> Iterator[ast.Constant]:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub


def _all_statuses(node: ast.AST | None) -> bool:
    """A constant, or a collection of constants, that are all status values."""
    if node is None:
        return False
    values = [c.value for c in _constants(node)]
    others = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and not isinstance(n.value, str)]
    return bool(values) and not others and all(v in STATUSES for v in values)


def _docstrings(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    ids.add(id(stmt.value))
    return ids


def findings(path: Path) -> list[str]:
    """Every status or event-type literal in `path`, as `file:line: 'value'`."""
    tree = parse(path)
    docs = _docstrings(tree)
    rel = path.relative_to(ROOT.parent)
    hits: dict[tuple[int, int], str] = {}

    def flag(const: ast.Constant, kind: str) -> None:
        hits[(const.lineno, const.col_offset)] = f"{rel}:{const.lineno}: {kind} {const.value!r}"

    def statuses_in(node: ast.AST | None) -> None:
        if node is None:
            return
        for const in _constants(node):
            if const.value in STATUSES and id(const) not in docs:
                flag(const, "status")

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if node.value in EVENT_TYPES and node.value not in SHARED_WITH_TOOLS:
                flag(node, "event type")
            elif SQL.search(node.value):
                for match in SQL_LITERAL.finditer(node.value):
                    for value in re.findall(r"'([^']*)'", match["vals"]):
                        if value not in STATUSES and value not in EVENT_TYPES and value != "":
                            hits[(node.lineno, node.col_offset)] = (
                                f"{rel}:{node.lineno}: SQL compares {match['col']} with {value!r}, "
                                "which roundtable/domain.py does not define"
                            )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            position = {"append_event": 1, "emit": 2}.get(node.func.attr)
            if position is not None and len(node.args) > position:
                for const in _constants(node.args[position]):
                    if const.value in EVENT_TYPES:
                        flag(const, "event type")
        if isinstance(node, ast.Compare) and any(
            EVENT_CONTEXT.search(_name(o)) for o in [node.left, *node.comparators]
        ):
            for const in _constants(node):
                if const.value in EVENT_TYPES:
                    flag(const, "event type")
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_says_status(o) for o in operands):
                for o in operands:
                    if not _says_status(o):
                        statuses_in(o)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_says_status(t) for t in targets):
                statuses_in(node.value)
            elif any(isinstance(t, ast.Name) and t.id.isupper() for t in targets) and _all_statuses(node.value):
                statuses_in(node.value)  # `PASSED = "passed"`, `DONE = frozenset({...})`: a second spelling
        elif isinstance(node, ast.keyword):
            if node.arg and CONTEXT.search(node.arg):
                statuses_in(node.value)
        elif isinstance(node, ast.Call):
            if _says_status(node.func):
                for arg in node.args:
                    statuses_in(arg)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and CONTEXT.search(key.value):
                    statuses_in(value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True):
                if CONTEXT.search(arg.arg):
                    statuses_in(default)
            for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
                if kw_default is not None and CONTEXT.search(arg.arg):
                    statuses_in(kw_default)
        elif isinstance(node, ast.Match) and _says_status(node.subject):
            for case in node.cases:
                statuses_in(case.pattern)
    return [hits[k] for k in sorted(hits)]


def _sources() -> list[Path]:
    return [p for p in sorted(ROOT.rglob("*.py")) if p != DOMAIN and p not in EXEMPT]


def test_no_status_or_event_type_literal_outside_domain() -> None:
    found = [hit for path in _sources() for hit in findings(path)]
    assert not found, "use the names in roundtable/domain.py:\n" + "\n".join(found)


def test_the_scan_catches_each_kind_of_literal(tmp_path: Path) -> None:
    planted = ROOT / "_planted_vocabulary_check.py"
    planted.write_text(
        '"""A docstring may say patch.applied and active freely."""\n'
        "def f(run, tx, status: str = 'blocked'):\n"
        "    if run.status == 'active':\n"
        "        tx.append_event('', 'patch.applied', {'status': 'failed'})\n"
        "    tx.update('runs', {'id': 1}, {'status': 'archived'})\n"
        "    done = run.state in ('removed', 'proposed')\n"
        "    q = \"SELECT * FROM runs WHERE status = 'actve'\"\n"
        "    classes = 'active'  # not a status: a CSS class\n"
        "    return done, q, classes\n"
    )
    try:
        found = findings(planted)
    finally:
        planted.unlink()
    text = "\n".join(found)
    for line, value in [(2, "blocked"), (3, "active"), (4, "patch.applied"), (4, "failed"), (5, "archived")]:
        assert f":{line}: " in text and repr(value) in text, (line, value, text)
    assert "'removed'" in text and "'proposed'" in text
    assert "'actve'" in text
    assert ":8:" not in text and ":1:" not in text


def test_every_status_enum_keeps_its_wire_values() -> None:
    assert domain.EventType.PATCH_APPLIED == "patch.applied"
    assert domain.TaskStatus.CANCELLED == "cancelled"
    assert domain.TransactionStatus.ROLLING_BACK == "rolling_back"
    assert domain.ProposalTransactionState.NOT_STARTED == "not_started"
    assert {"done", "closed", "canceled", "failed"} <= domain.TERMINAL_TASK_STATUSES
