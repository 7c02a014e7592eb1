"""test.run / test.get_result / test.evidence.submit on a real git repository: commands chosen
among the configured ones (hostile command lines refused), runs on a scratch worktree of the
revision inside the sandbox, the timeout, the output cap, stored logs (0600), revision binding,
reported evidence."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.sandbox import runner
from roundtable.services.policy.engine import load_policy
from roundtable.services.testing import test_exec
from roundtable.services.testing.test_runs import passing_runs
from roundtable.store.records import TestRun
from roundtable.tools.context import OPERATOR
from tests.support.processes import processes_with

from .conftest import AGENT, add_lines_patch, count, events, make_proposal, session_caller

pytestmark = pytest.mark.anyio

T = TypeVar("T")

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
COMMANDS: dict[str, list[str]] = {
    "hello": ["printf", "one\\ntwo\\n"],
    "unit": [PY, "-m", "unittest", "discover", "-s", ".", "-p", "test_*.py"],
    "fails": [PY, "-c", "raise SystemExit(3)"],
    "secret": ["printf", "password=hunter2hunter2\\n"],
    "big": ["printf", "%s%020000dEND", "start", "0"],
    "missing": ["./node_modules/.bin/vitest", "run"],
}


def configure(rt: Runtime, commands: dict[str, list[str]] | None = None, **options: Any) -> None:
    """Write the project's policy with a `tests:` block and load it, as a reload would."""
    block = yaml.safe_dump({"tests": {"commands": COMMANDS if commands is None else commands, **options}})
    (rt.root / "POLICIES.ROUNDTABLE.md").write_text(f"# policy\n\n```yaml\n{block}```\n", encoding="utf-8")
    rt.policy = load_policy(rt.root)


@pytest.fixture(autouse=True)
def private_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scratch worktrees go to this test's own temp dir (other runs on the machine use theirs)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))


def scratch_dirs() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("roundtable-test-")}


def worktrees(root: Path) -> list[str]:
    out = subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=root, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line.startswith("worktree ")]


async def test_passing_command_stores_log_and_events(rt: Runtime) -> None:
    configure(rt)
    out = await rt.call("test.run", {"command": "hello"}, AGENT)
    run = out["test_run"]
    assert run["status"] == "passed" and run["exit_code"] == 0
    assert run["id"].startswith("TR-")
    assert run["command"] == "hello" and json.loads(run["argv_json"]) == COMMANDS["hello"]
    assert run["sandbox"] in ("bwrap", "landlock")
    assert run["log_path"] == f".roundtable/testlogs/{run['id']}.log"
    assert out["log"] == "one\ntwo\n"
    log = rt.root / run["log_path"]
    assert log.read_text(encoding="utf-8") == "one\ntwo\n"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert run["summary_md"] == "one\ntwo"
    assert run["agent_id"] == "reviewer-1" and run["finished_at"]
    started, finished = await events(rt, "test.started"), await events(rt, "test.finished")
    assert started[0]["payload"]["test_run_id"] == run["id"]
    assert started[0]["payload"]["sandbox"] == run["sandbox"]
    assert finished[0]["payload"]["status"] == "passed"
    got = await rt.call("test.get_result", {"test_run_id": run["id"]}, AGENT)
    assert got["test_run"] == run and got["log"] == "one\ntwo\n" and "log_error" not in got


async def test_a_command_by_its_exact_argument_string(rt: Runtime) -> None:
    configure(rt)
    out = await rt.call("test.run", {"command": f"{PY} -c 'raise SystemExit(3)'"}, AGENT)
    assert out["test_run"]["command"] == "fails"
    assert out["test_run"]["status"] == "failed" and out["test_run"]["exit_code"] == 3
    assert out["test_run"]["summary_md"] == "No test output captured."


HOSTILE = [
    'git -c "alias.x=!id" x',
    "git -c alias.x=!id x",
    "node -e \"require('child_process').execSync('id')\"",
    "make anything",
    "make -f /dev/stdin",
    "/any/dir/git --version",
    "/usr/bin/git --version",
    "git apply .roundtable/patches/0000.diff",
    "git clean -fdx",
    "git --version",
    "printf ok",
    "python -c 'print(1)'",
    "hello extra",
    "hello; id",
    "  printf 'one\\ntwo\\n' --x",
    "HELLO",
]


@pytest.mark.parametrize("command", HOSTILE)
async def test_agents_cannot_run_anything_but_the_configured_commands(rt: Runtime, command: str) -> None:
    configure(rt, {"hello": COMMANDS["hello"], "unit": COMMANDS["unit"]})
    with pytest.raises(ToolError, match="is not one of the test commands the operator configured") as info:
        await rt.call("test.run", {"command": command}, AGENT)
    assert "allowed: hello (printf" in str(info.value) and "unit (" in str(info.value)
    assert await count(rt, "test_runs") == 0
    logs = rt.root / ".roundtable" / "testlogs"
    assert not logs.exists() or not any(logs.iterdir())


async def test_without_configured_commands_the_markers_decide(rt: Runtime) -> None:
    (rt.root / "Makefile").write_text("test:\n\t@printf made\nevil:\n\t@id\n", encoding="utf-8")
    assert (await rt.call("test.run", {"command": "make test"}, AGENT))["log"] == "made"
    with pytest.raises(ToolError, match=r"allowed: make test\Z"):
        await rt.call("test.run", {"command": "make evil"}, AGENT)
    suggested = await rt.call("test.suggest", {}, AGENT)
    assert suggested["commands"] == ["make test"]
    # A configured set replaces the markers' set, for test.suggest too.
    configure(rt, {"hello": COMMANDS["hello"]})
    with pytest.raises(ToolError, match="allowed: hello"):
        await rt.call("test.run", {"command": "make test"}, AGENT)
    suggested = await rt.call("test.suggest", {}, AGENT)
    assert suggested["commands"] == ["hello"]
    assert suggested["suggestions"][0]["argv"] == COMMANDS["hello"]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("pytest | tee out", "disallowed shell control characters"),
        ("pytest; rm -rf x", "disallowed shell control characters"),
        ("pytest && true", "disallowed shell control characters"),
        ("pytest > out.txt", "disallowed shell control characters"),
        ("pytest < in.txt", "disallowed shell control characters"),
        ("printf $(id)", "disallowed shell control characters"),
        ("printf `id`", "disallowed shell control characters"),
        ("pytest\nrm -rf x", "disallowed shell control characters"),
        ("printf 'unbalanced", "could not be split into arguments"),
        ("   ", "argument command must not be empty"),
    ],
)
async def test_the_operators_free_command_line_uses_no_shell(rt: Runtime, command: str, message: str) -> None:
    configure(rt)
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await rt.call("test.run", {"command": command}, OPERATOR)
    assert await count(rt, "test_runs") == 0


async def test_the_operator_may_run_a_free_command_in_the_sandbox(rt: Runtime) -> None:
    configure(rt)
    out = await rt.call("test.run", {"command": "printf free"}, OPERATOR)
    assert out["log"] == "free" and out["test_run"]["sandbox"] in ("bwrap", "landlock")
    assert json.loads(out["test_run"]["argv_json"]) == ["printf", "free"]


TEST_MUL = (
    "import unittest\n\nfrom app import mul\n\n\n"
    "class MulTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(3, 4), 12)\n"
)


async def test_evidence_is_about_the_revision(rt: Runtime) -> None:
    configure(rt)
    before = scratch_dirs()
    patch = add_lines_patch("app.py", ["", "", "def mul(a, b):", "    return a * b"]) + add_lines_patch(
        "test_mul.py", TEST_MUL.rstrip("\n").split("\n"), new_file=True
    )
    pid = await make_proposal(rt, patch)
    out = await rt.call("test.run", {"command": "unit", "proposal_id": pid}, AGENT)
    run = out["test_run"]
    assert run["status"] == "passed", out["log"]
    assert "Ran 1 test" in out["log"]
    async with rt.db.read() as r:
        current = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (pid,))
    assert run["revision"] == current and run["task_id"] == "T-1" and run["proposal_id"] == pid
    assert passing_runs([TestRun.from_row(run)], current) != []
    # The operator's tree is untouched: neither file changed, no worktree or scratch dir is left.
    assert "mul" not in (rt.root / "app.py").read_text() and not (rt.root / "test_mul.py").exists()
    assert scratch_dirs() == before and len(worktrees(rt.root)) == 1
    # The same test on the base tree fails: the pass above was about the revision.
    (rt.root / "test_mul.py").write_text(TEST_MUL, encoding="utf-8")
    base = await rt.call("test.run", {"command": "unit"}, AGENT)
    assert base["test_run"]["status"] == "failed" and "ImportError" in base["log"]
    (rt.root / "test_mul.py").unlink()
    # A new revision makes the pass stale.
    await make_proposal(rt, add_lines_patch("app.py", ["# change 2"]), proposal_id=pid)
    async with rt.db.read() as r:
        newer = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (pid,))
    assert passing_runs([TestRun.from_row(run)], newer) == []


async def test_concurrent_runs_get_their_own_worktrees(rt: Runtime) -> None:
    import anyio

    configure(rt, {"show": [PY, "-c", "print(open('app.py').read())"]})
    pids = [await make_proposal(rt, add_lines_patch("app.py", [f"# variant {i}"])) for i in range(3)]
    logs: dict[str, str] = {}

    async def one(pid: str) -> None:
        logs[pid] = (await rt.call("test.run", {"command": "show", "proposal_id": pid}, AGENT))["log"]

    async with anyio.create_task_group() as tg:
        for pid in pids:
            tg.start_soon(one, pid)
    for i, pid in enumerate(pids):
        assert f"# variant {i}" in logs[pid] and all(f"# variant {j}" not in logs[pid] for j in range(3) if j != i)
    assert scratch_dirs() == set() and len(worktrees(rt.root)) == 1


async def test_a_revision_that_breaks_a_test_fails(rt: Runtime) -> None:
    configure(rt)
    (rt.root / "test_add.py").write_text(
        "import unittest\n\nfrom app import add\n\n\n"
        "class AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        encoding="utf-8",
    )
    assert (await rt.call("test.run", {"command": "unit"}, AGENT))["test_run"]["status"] == "passed"
    broken = (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
        "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a + b\n+    return a - b\n"
    )
    pid = await make_proposal(rt, broken)
    out = await rt.call("test.run", {"command": "unit", "proposal_id": pid}, AGENT)
    assert out["test_run"]["status"] == "failed" and "AssertionError" in out["log"]
    assert (rt.root / "app.py").read_text().endswith("return a + b\n")


async def test_a_patch_that_no_longer_applies_is_an_error(rt: Runtime) -> None:
    configure(rt)
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# x"]))
    (rt.root / "app.py").write_text("something else entirely\n", encoding="utf-8")
    out = await rt.call("test.run", {"command": "hello", "proposal_id": pid}, AGENT)
    assert out["test_run"]["status"] == "error"
    assert "does not apply to the current tree" in out["test_run"]["summary_md"]
    assert len(worktrees(rt.root)) == 1


async def test_not_a_git_repository_is_an_error(runtime: Runtime) -> None:
    configure(runtime)
    out = await runtime.call("test.run", {"command": "hello"}, AGENT)
    assert out["test_run"]["status"] == "error"
    assert "needs the project to be a git repository" in out["test_run"]["summary_md"]


async def test_timeout_kills_the_process(rt: Runtime) -> None:
    configure(rt, {"slow": ["make", "slow"]}, timeout_seconds=0.5)
    (rt.root / "Makefile").write_text("slow:\n\t@echo begin\n\t@sleep 30\n", encoding="utf-8")
    out = await rt.call("test.run", {"command": "slow"}, AGENT)
    run = out["test_run"]
    assert run["status"] == "timed_out"
    assert run["summary_md"].startswith("Timed out after 0.5 s.")
    assert "begin" in out["log"]


async def test_output_is_capped_with_a_marker(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(rt)
    monkeypatch.setattr(test_exec, "HEAD_BYTES", 1000)
    monkeypatch.setattr(test_exec, "TAIL_BYTES", 500)
    out = await rt.call("test.run", {"command": "big"}, AGENT)
    log = out["log"]
    assert out["test_run"]["status"] == "passed"
    assert log.startswith("start000")
    assert log.endswith("0END")
    assert "[... 18508 bytes of output dropped ...]" in log
    stored = (rt.root / out["test_run"]["log_path"]).read_text(encoding="utf-8")
    assert stored == log and len(stored) < 1600


def test_output_capture_keeps_head_and_tail() -> None:
    capture = test_exec.OutputCapture(head=4, tail=3)
    for chunk in (b"ab", b"cdef", b"gh", b"ij"):
        capture.add(chunk)
    assert capture.total == 10 and capture.dropped == 3
    assert capture.text() == "abcd\n[... 3 bytes of output dropped ...]\nhij"


async def test_program_that_cannot_start_is_an_error_status(rt: Runtime) -> None:
    configure(rt)
    out = await rt.call("test.run", {"command": "missing"}, AGENT)
    assert out["test_run"]["status"] == "error"
    assert out["test_run"]["summary_md"] == "Could not start ./node_modules/.bin/vitest: not found or not executable."
    assert out["test_run"]["exit_code"] == 0  # none: NULL reads back as 0
    assert "could not start" in out["log"]


async def test_ids_and_labels(rt: Runtime) -> None:
    configure(rt)
    await rt.call("test.run", {"command": "hello", "test_run_id": "TR-mine"}, AGENT)
    with pytest.raises(ToolError, match="test run TR-mine already exists"):
        await rt.call("test.run", {"command": "hello", "test_run_id": "TR-mine"}, AGENT)
    with pytest.raises(ToolError, match="test_run_id must be"):
        await rt.call("test.run", {"command": "hello", "test_run_id": "../../etc/x"}, AGENT)
    with pytest.raises(ToolError, match="get proposal P-nope: not found"):
        await rt.call("test.run", {"command": "hello", "proposal_id": "P-nope"}, AGENT)
    assert await count(rt, "test_runs") == 1
    with pytest.raises(ToolError, match="get test run TR-nope: not found"):
        await rt.call("test.get_result", {"test_run_id": "TR-nope"}, AGENT)


async def test_missing_log_is_reported_not_hidden(rt: Runtime) -> None:
    configure(rt)
    run = (await rt.call("test.run", {"command": "hello"}, AGENT))["test_run"]
    (rt.root / run["log_path"]).unlink()
    got = await rt.call("test.get_result", {"test_run_id": run["id"]}, AGENT)
    assert got["log"] == ""
    assert got["log_error"].startswith(f"read test log {run['log_path']}:")


async def test_secrets_in_output_are_redacted(rt: Runtime) -> None:
    configure(rt)
    out = await rt.call("test.run", {"command": "secret"}, AGENT)
    assert "hunter2" not in out["log"]
    assert "hunter2" not in (rt.root / out["test_run"]["log_path"]).read_text(encoding="utf-8")


async def test_no_sandbox_refuses_agents_and_asks_the_operator(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no sandbox works (simulated: the probe's answer for the forced kind), agents are
    refused with the reason; the operator may run unsandboxed only when asking for it."""
    configure(rt, sandbox="bwrap")
    monkeypatch.setitem(runner._probed, "bwrap", "bwrap is not installed")
    with pytest.raises(
        ToolError, match=r"no sandbox works on this machine \(bwrap is not installed\); ask the operator"
    ):
        await rt.call("test.run", {"command": "hello"}, AGENT)
    with pytest.raises(ToolError, match="only the operator may run a test without a sandbox"):
        await rt.call("test.run", {"command": "hello", "unsandboxed": True}, AGENT)
    with pytest.raises(ToolError, match="the operator may run it unsandboxed from the console"):
        await rt.call("test.run", {"command": "hello"}, OPERATOR)
    assert await count(rt, "test_runs") == 0
    out = await rt.call("test.run", {"command": "hello", "unsandboxed": True}, OPERATOR)
    assert out["test_run"]["status"] == "passed" and out["test_run"]["sandbox"] == "none"


async def test_evidence_from_a_tester_session(rt: Runtime) -> None:
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# x"]))
    tester = session_caller("tester", "tester-1", pid, session_id="S-7")
    args = {"proposal_id": pid, "command": "pytest -q", "outcome": "passed", "summary_md": "all green"}
    run = (await rt.call("test.evidence.submit", args, tester))["test_run"]
    assert run["status"] == "reported" and run["outcome"] == "passed"
    assert run["agent_id"] == "tester-1" and run["session_id"] == "S-7"
    assert run["log_path"] == "" and run["task_id"] == "T-1" and len(run["revision"]) == 64
    assert passing_runs([TestRun.from_row(run)], run["revision"]) == []  # never a pass
    [event] = await events(rt, "test.evidence_reported")
    assert event["payload"]["outcome"] == "passed"
    got = await rt.call("test.get_result", {"test_run_id": run["id"]}, AGENT)
    assert got["test_run"]["status"] == "reported"


async def test_evidence_refusals(rt: Runtime) -> None:
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# x"]))
    other = await make_proposal(rt, add_lines_patch("app.py", ["# y"]))
    args = {"proposal_id": pid, "command": "pytest", "outcome": "passed", "summary_md": "ok"}
    with pytest.raises(ToolError, match=r"only available to (tester )?capability sessions"):
        await rt.call("test.evidence.submit", args, AGENT)
    with pytest.raises(ToolError, match=r"only available to (tester )?capability sessions"):
        await rt.call("test.evidence.submit", args, OPERATOR)
    with pytest.raises(ToolError, match="not permitted for role reviewer"):
        await rt.call("test.evidence.submit", args, session_caller("reviewer", "reviewer-1", pid))
    tester = session_caller("tester", "tester-1", pid)
    with pytest.raises(ToolError, match="proposal_id does not match the session capability"):
        await rt.call("test.evidence.submit", {**args, "proposal_id": other}, tester)
    with pytest.raises(ToolError, match="argument outcome must be one of passed, failed, inconclusive"):
        await rt.call("test.evidence.submit", {**args, "outcome": "PASSED"}, tester)
    with pytest.raises(ToolError, match="argument summary_md is too long: 10001 characters, at most 10000 allowed"):
        await rt.call("test.evidence.submit", {**args, "summary_md": "x" * 10_001}, tester)
    with pytest.raises(ToolError, match="argument command is too long: 1001 characters, at most 1000 allowed"):
        await rt.call("test.evidence.submit", {**args, "command": "x" * 1_001}, tester)
    assert await count(rt, "test_runs") == 0


async def test_run_holds_no_transaction_and_cancel_leaves_nothing_behind(rt: Runtime) -> None:
    import anyio

    marker = f"rt-cancel-{os.getpid()}"
    configure(rt, {"slow": [PY, "-c", "import time\ntime.sleep(30)", marker]})
    before = scratch_dirs()
    async with anyio.create_task_group() as tg:
        tg.start_soon(rt.call, "test.run", {"command": "slow", "test_run_id": "TR-slow"}, AGENT)
        await _poll(lambda: count(rt, "test_runs"), lambda n: n == 1)
        # Other writes go through while the command runs.
        await rt.call("human.request_approval", {"subject": "s", "reason_md": "r"}, AGENT)
        got = await rt.call("test.get_result", {"test_run_id": "TR-slow"}, AGENT)
        assert got["test_run"]["status"] == "running"
        await _poll(_async(lambda: processes_with(marker)), bool)
        tg.cancel_scope.cancel()
    # The whole sandbox was killed, and the worktree removed.
    await _poll(_async(lambda: processes_with(marker)), lambda procs: not procs)
    got = await rt.call("test.get_result", {"test_run_id": "TR-slow"}, AGENT)
    assert got["test_run"]["status"] == "error"
    assert got["test_run"]["summary_md"] == "Test run was cancelled before it finished."
    assert [e["payload"]["status"] for e in await events(rt, "test.finished")] == ["error"]
    assert scratch_dirs() == before and len(worktrees(rt.root)) == 1


def _async(fn: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    async def wrapper() -> T:
        return fn()

    return wrapper


async def _poll(read: Callable[[], Awaitable[T]], ok: Callable[[T], bool], timeout: float = 10.0) -> T:
    """Re-read until `ok` holds (state changed by another task or process), or fail."""
    import anyio

    for _ in range(int(timeout / 0.02)):
        value = await read()
        if ok(value):
            return value
        await anyio.sleep(0.02)
    raise AssertionError("condition not reached in time")
