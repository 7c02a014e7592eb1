"""Hostile input for every tool: arguments generated from each tool's own input schema, plus
deliberately wrong shapes. Every call either succeeds or raises `ToolError` (never another
exception), and a refused call leaves the database exactly as it was."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.scaffold import init_project
from roundtable.store.schema import TABLES
from roundtable.tools.context import Caller
from roundtable.tools.registry import get_registry

# Tools that run external programs or wait on purpose are exercised by their own tests.
SKIPPED = {"test.run", "patch.apply", "patch.rollback", "table.watch"}
# Rows a refused call may still leave (DESIGN §4.18).
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
        assert await _fingerprint(runtime) == before, f"{tool} refused {args!r} but changed the database"
        assert _files(root) == files_before, f"{tool} refused {args!r} but changed files"
    else:
        assert isinstance(result, dict)
