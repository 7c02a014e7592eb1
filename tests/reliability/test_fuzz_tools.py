"""Hostile input for every tool: arguments generated from each tool's own input schema, plus
deliberately wrong shapes. Every call either succeeds or raises `ToolError` (never another
exception, never "internal error"), and a refused call leaves the database exactly as it was.

Out-of-range values: integers past SQLite's 64-bit range (up to 5,000
digits), strings one character over their `maxLength` (5,000-character paths), arrays one item
over `maxItems`, deep nesting, NaN and ±Infinity — each is a `ValidationError` naming the
argument, raised before any handler runs; values exactly at a bound never cause an internal
error. The socket and HTTP framings of the same inputs are in tests/transports/."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable.errors import PermissionDenied, ToolError, ValidationError
from roundtable.runtime import Runtime
from roundtable.scaffold import init_project
from roundtable.store.schema import TABLES
from roundtable.tools.context import CHAIR, Caller
from roundtable.tools.registry import get_registry

# Tools that run external programs or wait on purpose are exercised by their own tests.
SKIPPED = {"test.run", "patch.apply", "patch.rollback", "table.watch"}
# Rows a refused call may still leave.
ALLOWED_ON_REFUSAL = {"claim_contentions"}
AGENT = Caller("agent", "http", agent_id="implementer-1")

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False), TEXT, st.lists(TEXT, max_size=3)
)


def _value_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    if kind == "string":
        return st.one_of(TEXT, st.sampled_from(["../../etc/passwd", "/etc/passwd", "file:../x", "a" * 300, " ", ""]))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(TEXT, max_size=4)
    return JUNK


def _args_for(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {})
    required = schema.get("required", [])
    optional = [k for k in props if k not in required]
    valid = st.fixed_dictionaries(
        {k: _value_for(props[k]) for k in required},
        optional={k: _value_for(props[k]) for k in optional},
    )
    wrong = st.dictionaries(
        st.sampled_from([*props, "unknown_key"]) if props else st.just("unknown_key"), JUNK, max_size=4
    )
    return st.one_of(valid, wrong)


TOOLS = [spec for spec in get_registry() if spec.name not in SKIPPED]


async def _fingerprint(runtime: Runtime) -> dict[str, str]:
    out = {}
    async with runtime.db.read() as r:
        for table in TABLES:
            if table in ALLOWED_ON_REFUSAL:
                continue
            rows = await r.fetchall(f"SELECT * FROM {table} ORDER BY 1")
            out[table] = hashlib.sha256(repr([tuple(row) for row in rows]).encode()).hexdigest()
    return out


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if ".roundtable" not in p.parts or p.suffix == ".diff"}


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "project"
    root.mkdir()
    init_project(root)
    (root / "app.py").write_text("def main():\n    return 1\n")
    return root


@pytest.mark.parametrize("spec", TOOLS, ids=[s.name for s in TOOLS])
def test_tool_survives_generated_arguments(spec: Any, fuzz_root: Path) -> None:
    loop = asyncio.new_event_loop()
    runtime = loop.run_until_complete(Runtime.open(fuzz_root))

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(args=_args_for(spec.input_schema), as_operator=st.booleans())
    def check(args: dict[str, Any], as_operator: bool) -> None:
        loop.run_until_complete(_one(runtime, fuzz_root, spec.name, args, as_operator))

    try:
        check()
    finally:
        loop.run_until_complete(runtime.close())
        loop.close()


async def _one(runtime: Runtime, root: Path, tool: str, args: dict[str, Any], as_operator: bool) -> None:
    before = await _fingerprint(runtime)
    files_before = _files(root)
    caller = Caller("operator", "cli") if as_operator else AGENT
    try:
        result = await runtime.call(tool, args, caller)
    except ToolError as exc:
        assert str(exc), "errors must say something"
        assert "Traceback" not in str(exc)
        assert "internal error" not in str(exc), f"{tool} {args!r}: {exc}"
        assert await _fingerprint(runtime) == before, f"{tool} refused {args!r} but changed the database"
        assert _files(root) == files_before, f"{tool} refused {args!r} but changed files"
    else:
        assert isinstance(result, dict)


# --- out-of-range values ----------------------------------------------------------------------

# The longest integer any transport delivers: every JSON decoder in use refuses more than 4,300
# digits (Python's conversion limit; the socket and `mcp call` say so, HTTP's parser too). A
# longer one exists only in-process.
HUGE = 10**4299


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _over(schema: dict[str, Any]) -> list[Any]:
    """Values every schema of this shape must refuse."""
    kind = schema.get("type")
    common = [math.nan, math.inf, -math.inf, _deep(900), {"nested": _deep(50)}]
    if kind == "integer":
        return [schema["minimum"] - 1, schema["maximum"] + 1, 10**30, -(10**30), HUGE, -HUGE, 2.5, *common]
    if kind == "number":
        return [math.inf, -math.inf, 10**400, -(10**400), HUGE, "1", _deep(900)]
    if kind == "string":
        limit = schema.get("maxLength", 0)
        over = ["a" * (limit + 1)] if limit else []
        if limit and limit <= 8192:
            over.append("a/" * (limit // 2 + 1))  # path-shaped
        return [*over, 10**30, HUGE, *common]
    if kind == "array":
        item = schema.get("items", {})
        over = [["x"] * (schema["maxItems"] + 1)]
        if item.get("maxLength", 0) <= 8192 and "maxLength" in item:
            over.append(["a" * (item["maxLength"] + 1)])
        return [*over, [HUGE], [math.nan], [_deep(900)], 10**30, *common[:3]]
    if kind == "boolean":
        return [10**30, HUGE, "true", *common]
    return []


def _at_bounds(schema: dict[str, Any]) -> list[Any]:
    """Values exactly at the bounds: allowed by the schema, so handlers must cope."""
    kind = schema.get("type")
    if kind == "integer":
        return [schema["minimum"], schema["maximum"]]
    if kind == "number":
        return [schema["minimum"], schema["maximum"], math.nan]  # NaN: no JSON Schema bound excludes it
    if kind == "string" and "enum" not in schema and schema.get("maxLength", 0) <= 8192:
        return ["a" * schema["maxLength"], "a/" * (schema["maxLength"] // 2)]
    return []


def _cases(spec: Any, pick: Callable[[dict[str, Any]], list[Any]]) -> list[tuple[str, Any]]:
    return [(key, value) for key, prop in spec.input_schema.get("properties", {}).items() for value in pick(prop)]


# Arguments naming who acts: an agent's call is bound to its own identity before validation.
IDENTITY = frozenset({"agent_id", "actor_id", "reviewer_id", "decided_by", "requested_by", "applied_by"})


def _base(spec: Any) -> dict[str, Any]:
    """Plausible values for the required arguments, so the hostile one is what gets checked."""
    out: dict[str, Any] = {}
    for key in spec.input_schema.get("required", []):
        prop = spec.input_schema["properties"][key]
        plain = AGENT.agent_id if key in IDENTITY else (prop.get("enum") or ["x"])[0]
        out[key] = {"integer": 1, "number": 0.5, "boolean": True, "array": [], "object": {}}.get(
            prop.get("type", ""), plain
        )
    return out


def _short(value: Any) -> str:
    if isinstance(value, int) and abs(value) > 10**100:  # repr() refuses more than 4,300 digits
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    text = repr(value)
    return text if len(text) < 80 else f"{text[:60]}… ({len(text)} chars)"


# Validation comes before any handler, so even the tools that run programs are safe to include.
ALL_TOOLS = [spec for spec in get_registry() if spec.handler is not None]


def _assert_bounded(prop: dict[str, Any], label: str) -> None:
    kind = prop.get("type")
    if kind in ("integer", "number"):
        assert "minimum" in prop and "maximum" in prop, label
    if kind == "integer":
        assert -(2**63) <= prop["minimum"] and prop["maximum"] <= 2**63 - 1, label
    if kind == "string":
        assert "maxLength" in prop or "enum" in prop, label
    if kind == "array":
        items = prop["items"]
        assert "maxItems" in prop, label
        if items.get("type") == "object":  # a list of records (edits, files): each field bounded
            for key, inner in items.get("properties", {}).items():
                _assert_bounded(inner, f"{label}[].{key}")
        else:
            assert "maxLength" in items or "enum" in items, label


def test_every_bound_is_declared() -> None:
    """The registry pass bounded every integer, number, string and array of every tool."""
    for spec in get_registry():
        for key, prop in spec.input_schema["properties"].items():
            _assert_bounded(prop, f"{spec.name}.{key}")


@pytest.mark.parametrize("spec", ALL_TOOLS, ids=[s.name for s in ALL_TOOLS])
def test_out_of_range_arguments_are_validation_errors(spec: Any, fuzz_root: Path) -> None:
    cases = _cases(spec, _over)
    if not cases:
        pytest.skip("no arguments")
    loop = asyncio.new_event_loop()
    runtime = loop.run_until_complete(Runtime.open(fuzz_root))

    async def run(key: str, value: Any, as_operator: bool) -> None:
        args = {**_base(spec), key: value}
        before = await _fingerprint(runtime)
        label = f"{spec.name} {key}={_short(value)} as {'operator' if as_operator else 'agent'}"
        # An internal operation exists only for the owner's components: validate it as one.
        caller = CHAIR if spec.audience == "internal" else Caller("operator", "cli") if as_operator else AGENT
        try:
            await runtime.call(spec.name, args, caller)
        except ToolError as exc:
            error = exc
        else:
            raise AssertionError(f"{label}: accepted")
        text = str(error)
        assert "internal error" not in text, f"{label}: {text[:300]}"
        if isinstance(error, PermissionDenied) and (not as_operator or spec.audience == "session"):
            # Authority (operator-only tools, identity bound from the credential, a session
            # operation without a capability) is checked before the arguments; that refusal is
            # as good — but never for the operator on a tool the operator may call.
            assert key in IDENTITY or f"argument {key}" not in text, f"{label}: {text[:300]}"
        else:
            assert isinstance(error, ValidationError), f"{label}: {type(error).__name__}: {text[:300]}"
            assert text.startswith(f"{spec.name}: argument {key}"), f"{label}: {text[:300]}"
            assert len(text) < 600, f"{label}: the message echoes the value ({len(text)} chars)"
        assert await _fingerprint(runtime) == before, f"{label}: refused but changed the database"

    # Cases are drawn by index, so a failure report stays short (some values are megabytes).
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(index=st.integers(0, len(cases) - 1), as_operator=st.booleans())
    def check(index: int, as_operator: bool) -> None:
        loop.run_until_complete(run(*cases[index], as_operator))

    try:
        check()
    finally:
        loop.run_until_complete(runtime.close())
        loop.close()


BOUNDED_TOOLS = [spec for spec in TOOLS if _cases(spec, _at_bounds)]


@pytest.mark.parametrize("spec", BOUNDED_TOOLS, ids=[s.name for s in BOUNDED_TOOLS])
def test_values_at_the_bounds_never_cause_internal_errors(spec: Any, fuzz_root: Path) -> None:
    loop = asyncio.new_event_loop()
    runtime = loop.run_until_complete(Runtime.open(fuzz_root))
    try:
        for key, value in _cases(spec, _at_bounds):
            for as_operator in (True, False):
                args = {**_base(spec), key: value}
                loop.run_until_complete(_one(runtime, fuzz_root, spec.name, args, as_operator))
    finally:
        loop.run_until_complete(runtime.close())
        loop.close()
