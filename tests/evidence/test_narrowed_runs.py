"""Parameterised test commands: `{paths}` and `{k}` in the policy's argv let an agent run one
file or one test through `test.run` (validated values, never a shell); a narrowed run is not a
pass of the whole command. `test.suggest` proposes lint and type-check commands for the operator."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services.testing import test_exec

from .conftest import AGENT, make_proposal
from .test_testing import PY, configure

pytestmark = pytest.mark.anyio

# A command that prints its arguments: what the slots were filled with is in the log.
ECHO = [PY, "-c", "import sys; print(repr(sys.argv[1:]))"]


@pytest.fixture(autouse=True)
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))


async def test_paths_and_k_fill_the_slots(rt: Runtime) -> None:
    configure(rt, {"unit": [*ECHO, "-q", "{paths}", "-k", "{k}"]})
    out = await rt.call(
        "test.run", {"command": "unit", "paths": ["app.py", "app.py::test_add"], "k": "add and not slow"}, AGENT
    )
    run = out["test_run"]
    assert run["status"] == "passed", out["log"]
    assert out["log"].strip() == repr(["-q", "app.py", "app.py::test_add", "-k", "add and not slow"])
    assert run["command"] == "unit app.py app.py::test_add -k add and not slow" and run["outcome"] == "narrowed"
    whole = await rt.call("test.run", {"command": "unit"}, AGENT)
    assert whole["log"].strip() == repr(["-q"]) and whole["test_run"]["outcome"] == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"paths": ["../outside.py"]}, "paths[0]: path is outside the repository root"),
        ({"paths": ["-rf"]}, "paths[0] must be a repository path"),
        ({"paths": [".git/config"]}, "paths[0]: "),
        ({"paths": ["app.py::x;rm"]}, "the test name after :: may hold"),
        ({"k": "x; rm -rf /"}, "k may hold only letters, digits"),
        ({"k": "$(id)"}, "k may hold only letters, digits"),
    ],
)
async def test_hostile_values_are_refused(rt: Runtime, args: dict[str, object], message: str) -> None:
    configure(rt, {"unit": [*ECHO, "{paths}", "-k", "{k}"]})
    with pytest.raises(ToolError, match=re.escape(message)):
        await rt.call("test.run", {"command": "unit", **args}, AGENT)
    async with rt.db.read() as r:
        assert await r.scalar("SELECT COUNT(*) FROM test_runs") == 0


async def test_a_command_without_a_slot_takes_no_paths(rt: Runtime) -> None:
    configure(rt, {"hello": ["printf", "hi"]})
    with pytest.raises(
        ToolError, match=r"test command hello takes no paths \(its argv in the policy has no \{paths\}\)"
    ):
        await rt.call("test.run", {"command": "hello", "paths": ["app.py"]}, AGENT)


async def test_a_narrowed_pass_does_not_satisfy_the_tests_gate(rt: Runtime) -> None:
    configure(rt, {"unit": [*ECHO, "{paths}"]})
    pid = await make_proposal(
        rt,
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n     return a + b\n+# x\n",
    )
    await rt.call("test.run", {"command": "unit", "proposal_id": pid, "paths": ["app.py"]}, AGENT)
    report = await rt.call("patch.validate", {"proposal_id": pid})
    gate = next(g for g in report["gates"] if g["name"] == "tests")
    assert not gate["passed"] and "no test run of the current revision" in gate["reason"]
    await rt.call("test.run", {"command": "unit", "proposal_id": pid}, AGENT)
    report = await rt.call("patch.validate", {"proposal_id": pid})
    assert next(g for g in report["gates"] if g["name"] == "tests")["passed"]


async def test_suggest_lists_the_slots_and_commands_for_the_operator(rt: Runtime) -> None:
    configure(rt, {"unit": [*ECHO, "{paths}", "-k", "{k}"]})
    (rt.root / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n\n[tool.mypy]\nfiles = ['app.py']\n")
    (rt.root / "tox.ini").write_text("[tox]\nenvlist = py\n\n[testenv:lint]\ncommands = ruff check .\n")
    (rt.root / "package.json").write_text(json.dumps({"scripts": {"lint": "eslint .", "typecheck": "tsc"}}))
    assert "for_operator" not in await rt.call("test.suggest", {}, AGENT)  # agents cannot enable them
    out = await rt.call("test.suggest", {})
    assert out["commands"] == ["unit"] and out["suggestions"][0]["takes"] == ["paths", "k"]
    offered = {c["name"]: (c["argv"], c["source"]) for c in out["for_operator"]}
    assert offered["lint"] == (["ruff", "check", "{paths}"], "pyproject.toml [tool.ruff]")
    assert offered["typecheck"] == (["python", "-m", "mypy", "{paths}"], "pyproject.toml [tool.mypy]")
    assert offered["tox-lint"] == (["tox", "-e", "lint"], "tox.ini [testenv:lint]")
    assert offered["npm-typecheck"] == (["npm", "run", "typecheck"], "package.json scripts.typecheck")
    assert "unit" not in offered and "POLICIES.ROUNDTABLE.md" in out["for_operator_note"]


def test_fill_drops_an_empty_k_with_its_option() -> None:
    argv = ("pytest", "-q", "{paths}", "-k", "{k}")
    assert test_exec.fill("unit", argv, test_exec.Narrowing()) == ["pytest", "-q"]
    assert test_exec.fill("unit", argv, test_exec.Narrowing(("a.py",), "b")) == ["pytest", "-q", "a.py", "-k", "b"]


async def test_a_long_log_comes_back_as_its_tail(rt: Runtime) -> None:
    configure(rt, {"many": [PY, "-c", "print('\\n'.join(f'row {n}' for n in range(500)))"]})
    out = await rt.call("test.run", {"command": "many"}, AGENT)
    run_id = out["test_run"]["id"]
    assert out["log"].splitlines()[-1] == "row 499" and len(out["log"].splitlines()) == 40
    assert (
        out["log_truncated"] is True
        and out["log_bytes"] == len("".join(f"row {n}\n" for n in range(500)))
        and run_id in out["log_note"]
    )
    whole = await rt.call("test.get_result", {"test_run_id": run_id}, AGENT)
    assert whole["log"].splitlines()[0] == "row 0" and len(whole["log"].splitlines()) == 500
    detailed = await rt.call("test.run", {"command": "many", "detail": True}, AGENT)
    assert len(detailed["log"].splitlines()) == 500 and "log_truncated" not in detailed
