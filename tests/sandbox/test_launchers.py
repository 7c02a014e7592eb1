"""A command whose program is a launcher script the sandbox cannot follow gets roundtable's own
explanation — the program, the path it needs, and the setting that grants it — instead of the
launcher's own error: before the run when its `#!` interpreter or the program it `exec`s is
outside the sandbox's view, after it when a run fails with 126/127 naming such a path."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from roundtable.runtime import Runtime
from roundtable.sandbox import runner
from roundtable.services.policy.engine import load_policy
from tests.helpers import make_git_project
from tests.support.evidence import AGENT

from .conftest import Place, run

pytestmark = pytest.mark.anyio


@pytest.fixture
def tools() -> Iterator[Path]:
    """Launchers under a directory no sandbox is given (/var/tmp, not the private /tmp), each in a
    directory of its own, and what they need beside them."""
    base = Path(tempfile.mkdtemp(prefix="rt-launchers-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    (base / "interp").mkdir()
    (base / "interp" / "python").symlink_to(os.path.realpath(sys.executable))
    (base / "libexec").mkdir()
    real = base / "libexec" / "real"
    real.write_text("#!/bin/sh\necho real ran\n")
    for name, text in (
        ("shebang", f"#!{base}/interp/python\nprint('hi')\n"),
        ("shim", f'#!/usr/bin/env bash\nexec "{real}" "$@"\n'),  # a pyenv shim's shape
        ("wrapper", f'#!/bin/sh\n{real} "$@"\n'),  # runs it without exec: seen only after the run
    ):
        (base / name).mkdir()
        (base / name / "tool").write_text(text)
    for path in base.rglob("*"):
        os.chmod(path, 0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _spec(kind: str, place: Place, program: str, read_paths: tuple[str, ...] = ()) -> None:
    runner.build_spec(kind, [program], place.workdir, root=place.root, read_paths=read_paths)


async def test_a_shebang_interpreter_outside_the_view_is_explained_before_the_run(
    kind: str, place: Place, tools: Path
) -> None:
    program = str(tools / "shebang" / "tool")
    with pytest.raises(runner.ProgramRefused) as info:
        _spec(kind, place, program)
    text = str(info.value)
    assert f"{program} is a launcher script the sandbox cannot follow" in text
    assert f"it needs {tools}/interp/python (its interpreter, named on its #! line)" in text
    assert f"add {tools}/interp to tests.read_paths" in text
    # The fix it names works: granted, the script runs.
    out = await run(kind, place, [program], read_paths=(str(tools / "interp"),))
    assert out.status == "passed" and out.output.strip() == "hi", (out.note, out.output)


async def test_a_shim_that_execs_a_program_outside_the_view_is_explained(kind: str, place: Place, tools: Path) -> None:
    program = str(tools / "shim" / "tool")
    with pytest.raises(runner.ProgramRefused, match=r"the program it runs \(exec\)") as info:
        _spec(kind, place, program)
    assert f"it needs {tools}/libexec/real" in str(info.value)
    with pytest.raises(runner.ProgramRefused, match=r"sessions\.read_paths"):
        runner.build_spec(kind, [program], place.workdir, root=place.root, profile="session")
    out = await run(kind, place, [program], read_paths=(str(tools / "libexec"),))
    assert out.status == "passed" and out.output.strip() == "real ran", (out.note, out.output)


async def test_a_wrapper_failing_on_a_path_outside_the_view_is_explained_after_the_run(
    kind: str, place: Place, tools: Path
) -> None:
    program = str(tools / "wrapper" / "tool")
    out = await run(kind, place, [program])
    assert out.status == "failed" and out.exit_code == 127
    assert f"{tools}/libexec/real" in out.output  # the shell's own words stay in the log
    assert out.note == (
        f"{program} could not run in the sandbox (exit 127): it needs {tools}/libexec/real, which exists on "
        f"this machine but is outside the sandbox's view (a launcher or wrapper runs it); add {tools}/libexec "
        "to tests.read_paths, or run the program it launches directly"
    )
    granted = await run(kind, place, [program], read_paths=(str(tools / "libexec"),))
    assert granted.status == "passed" and granted.note == ""


async def test_an_ordinary_failure_gets_no_explanation(kind: str, place: Place, tools: Path) -> None:
    # The path it misses exists nowhere: nothing to grant, the shell's own words are the answer.
    (tools / "plain").mkdir()
    script = tools / "plain" / "tool"
    script.write_text("#!/bin/sh\n/no/such/program\n")
    os.chmod(tools / "plain", 0o755)
    script.chmod(0o755)
    out = await run(kind, place, [str(script)])
    assert out.status == "failed" and out.exit_code == 127 and out.note == ""


async def test_a_test_run_records_the_explanation(project: Path, kind: str, tools: Path) -> None:
    make_git_project(project, {"app.py": "x = 1\n"})
    commands = {"shim": [str(tools / "shim" / "tool")], "wrapper": [str(tools / "wrapper" / "tool")]}
    block = yaml.safe_dump({"tests": {"commands": commands, "sandbox": kind}})
    (project / "POLICIES.ROUNDTABLE.md").write_text(f"```yaml\n{block}```\n", encoding="utf-8")
    runtime = await Runtime.open(project)
    runtime.policy = load_policy(project)
    try:
        refused = (await runtime.call("test.run", {"command": "shim"}, AGENT))["test_run"]
        assert refused["status"] == "error"
        assert f"needs {tools}/libexec/real (the program it runs (exec))" in refused["summary_md"]
        assert "tests.read_paths" in refused["summary_md"]
        failed = (await runtime.call("test.run", {"command": "wrapper"}, AGENT))["test_run"]
        assert failed["status"] == "failed" and failed["exit_code"] == 127
        assert f"it needs {tools}/libexec/real, which exists on this machine" in failed["summary_md"]
    finally:
        await runtime.close()
