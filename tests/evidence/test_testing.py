"""test.run / test.get_result / test.evidence.submit on a real git repository: the guard, real
subprocesses, the timeout, the output cap, stored logs, revision binding, reported evidence."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from roundtable.errors import ToolError
from roundtable.runtime import Runtime
from roundtable.services import test_exec
from roundtable.services.testing import passing_runs
from roundtable.store.records import TestRun
from roundtable.tools.context import OPERATOR

from .conftest import AGENT, add_lines_patch, count, events, make_proposal, session_caller

pytestmark = pytest.mark.anyio

T = TypeVar("T")

PYTEST = str(Path(sys.executable).parent / "pytest")
# The venv's pytest autoloads heavy plugins (textual snapshots, hypothesis); the tiny test needs none.
NO_PLUGINS = "-p no:cacheprovider -p no:textual-snapshot -p no:syrupy -p no:hypothesispytest -p no:anyio"


async def test_passing_command_stores_log_and_events(rt: Runtime) -> None:
    out = await rt.call("test.run", {"command": "printf 'one\\ntwo\\n'"}, AGENT)
    run = out["test_run"]
    assert run["status"] == "passed" and run["exit_code"] == 0
    assert run["id"].startswith("TR-")
    assert run["log_path"] == f".roundtable/testlogs/{run['id']}.log"
    assert out["log"] == "one\ntwo\n"
    assert (rt.root / run["log_path"]).read_text(encoding="utf-8") == "one\ntwo\n"
    assert run["summary_md"] == "one\ntwo"
    assert run["agent_id"] == "reviewer-1" and run["finished_at"]
    started, finished = await events(rt, "test.started"), await events(rt, "test.finished")
    assert started[0]["payload"]["test_run_id"] == run["id"]
    assert finished[0]["payload"]["status"] == "passed"
    got = await rt.call("test.get_result", {"test_run_id": run["id"]}, AGENT)
    assert got["test_run"] == run and got["log"] == "one\ntwo\n" and "log_error" not in got


async def test_real_pytest_run_bound_to_revision(rt: Runtime) -> None:
    (rt.root / "test_tiny.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    pid = await make_proposal(rt, add_lines_patch("app.py", ["# change"]))
    out = await rt.call("test.run", {"command": f"{PYTEST} -q {NO_PLUGINS} test_tiny.py", "proposal_id": pid}, AGENT)
    run = out["test_run"]
    assert run["status"] == "passed", out["log"]
    assert "1 passed" in out["log"]
    async with rt.db.read() as r:
        current = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (pid,))
    assert run["revision"] == current and run["task_id"] == "T-1" and run["proposal_id"] == pid
    assert passing_runs([TestRun.from_row(run)], current) != []
    # A new revision makes it stale evidence.
    await make_proposal(rt, add_lines_patch("app.py", ["# change 2"]), proposal_id=pid)
    async with rt.db.read() as r:
        newer = await r.scalar("SELECT current_revision FROM proposals WHERE id = ?", (pid,))
    assert passing_runs([TestRun.from_row(run)], newer) == []


async def test_failing_command_is_a_result_with_exit_code(rt: Runtime) -> None:
    out = await rt.call("test.run", {"command": "git rev-parse --verify --quiet refs/heads/nope"}, AGENT)
    assert out["test_run"]["status"] == "failed"
    assert out["test_run"]["exit_code"] == 1
    assert out["test_run"]["summary_md"] == "No test output captured."


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("python -c 'print(1)'", 'command "python" is not allowlisted for the agent test surface'),
        ("/bin/sh -c true", 'command "sh" is not allowlisted for the agent test surface'),
        ("pytest | tee out", "disallowed shell control characters"),
        ("pytest; rm -rf x", "disallowed shell control characters"),
        ("pytest && true", "disallowed shell control characters"),
        ("pytest > out.txt", "disallowed shell control characters"),
        ("pytest < in.txt", "disallowed shell control characters"),
        ("printf $(id)", "disallowed shell control characters"),
        ("printf `id`", "disallowed shell control characters"),
        ("pytest\nrm -rf x", "disallowed shell control characters"),
        ("printf 'unbalanced", "could not be split into arguments"),
    ],
)
async def test_guard_refuses_before_anything_runs(rt: Runtime, command: str, message: str) -> None:
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await rt.call("test.run", {"command": command}, AGENT)
    assert await count(rt, "test_runs") == 0
    assert not (rt.root / ".roundtable" / "testlogs").exists() or not any(
        (rt.root / ".roundtable" / "testlogs").iterdir()
    )


async def test_timeout_kills_the_process(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    (rt.root / "Makefile").write_text("slow:\n\t@echo begin\n\t@sleep 30\n", encoding="utf-8")
    monkeypatch.setattr(test_exec, "DEFAULT_TIMEOUT_S", 0.5)
    out = await rt.call("test.run", {"command": "make slow"}, AGENT)
    run = out["test_run"]
    assert run["status"] == "timed_out"
    assert run["summary_md"].startswith("Timed out after 0.5 s.")
    assert "begin" in out["log"]


async def test_output_is_capped_with_a_marker(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(test_exec, "HEAD_BYTES", 1000)
    monkeypatch.setattr(test_exec, "TAIL_BYTES", 500)
    out = await rt.call("test.run", {"command": "printf %s%020000dEND start 0"}, AGENT)
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
    out = await rt.call("test.run", {"command": "./node_modules/.bin/vitest run"}, AGENT)
    assert out["test_run"]["status"] == "error"
    assert out["test_run"]["summary_md"] == "Could not start ./node_modules/.bin/vitest: No such file or directory."
    assert out["test_run"]["exit_code"] == 0  # none: NULL reads back as 0
    assert "could not start" in out["log"]


async def test_ids_and_labels(rt: Runtime) -> None:
    await rt.call("test.run", {"command": "printf x", "test_run_id": "TR-mine"}, AGENT)
    with pytest.raises(ToolError, match="test run TR-mine already exists"):
        await rt.call("test.run", {"command": "printf y", "test_run_id": "TR-mine"}, AGENT)
    with pytest.raises(ToolError, match="test_run_id must be"):
        await rt.call("test.run", {"command": "printf y", "test_run_id": "../../etc/x"}, AGENT)
    with pytest.raises(ToolError, match="get proposal P-nope: not found"):
        await rt.call("test.run", {"command": "printf y", "proposal_id": "P-nope"}, AGENT)
    assert await count(rt, "test_runs") == 1
    with pytest.raises(ToolError, match="get test run TR-nope: not found"):
        await rt.call("test.get_result", {"test_run_id": "TR-nope"}, AGENT)


async def test_missing_log_is_reported_not_hidden(rt: Runtime) -> None:
    run = (await rt.call("test.run", {"command": "printf x"}, AGENT))["test_run"]
    (rt.root / run["log_path"]).unlink()
    got = await rt.call("test.get_result", {"test_run_id": run["id"]}, AGENT)
    assert got["log"] == ""
    assert got["log_error"].startswith(f"read test log {run['log_path']}:")


async def test_secrets_in_output_are_redacted(rt: Runtime) -> None:
    out = await rt.call("test.run", {"command": "printf 'password=hunter2hunter2\\n'"}, AGENT)
    assert "hunter2" not in out["log"]
    assert "hunter2" not in (rt.root / out["test_run"]["log_path"]).read_text(encoding="utf-8")


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
    with pytest.raises(ToolError, match="only available to tester capability sessions"):
        await rt.call("test.evidence.submit", args, AGENT)
    with pytest.raises(ToolError, match="only available to tester capability sessions"):
        await rt.call("test.evidence.submit", args, OPERATOR)
    with pytest.raises(ToolError, match="not permitted for role reviewer"):
        await rt.call("test.evidence.submit", args, session_caller("reviewer", "reviewer-1", pid))
    tester = session_caller("tester", "tester-1", pid)
    with pytest.raises(ToolError, match="proposal_id does not match the session capability"):
        await rt.call("test.evidence.submit", {**args, "proposal_id": other}, tester)
    with pytest.raises(ToolError, match="argument outcome must be one of passed, failed, inconclusive"):
        await rt.call("test.evidence.submit", {**args, "outcome": "PASSED"}, tester)
    with pytest.raises(ToolError, match="summary_md must be at most 10000 characters"):
        await rt.call("test.evidence.submit", {**args, "summary_md": "x" * 10_001}, tester)
    with pytest.raises(ToolError, match="command must be at most 1000 characters"):
        await rt.call("test.evidence.submit", {**args, "command": "x" * 1_001}, tester)
    assert await count(rt, "test_runs") == 0


async def test_run_holds_no_transaction_and_cancel_leaves_no_running_row(rt: Runtime) -> None:
    import anyio

    (rt.root / "Makefile").write_text("slow:\n\t@sleep 30\n", encoding="utf-8")
    async with anyio.create_task_group() as tg:
        tg.start_soon(rt.call, "test.run", {"command": "make slow", "test_run_id": "TR-slow"}, AGENT)
        await _poll(lambda: count(rt, "test_runs"), lambda n: n == 1)
        # Other writes go through while the command runs.
        await rt.call("human.request_approval", {"subject": "s", "reason_md": "r"}, AGENT)
        got = await rt.call("test.get_result", {"test_run_id": "TR-slow"}, AGENT)
        assert got["test_run"]["status"] == "running"
        await _poll(_async(lambda: _processes_in(rt.root)), bool)
        tg.cancel_scope.cancel()
    # The whole group (make and its sleep) was killed.
    await _poll(_async(lambda: _processes_in(rt.root)), lambda procs: not procs)
    got = await rt.call("test.get_result", {"test_run_id": "TR-slow"}, AGENT)
    assert got["test_run"]["status"] == "error"
    assert got["test_run"]["summary_md"] == "Test run was cancelled before it finished."
    assert [e["payload"]["status"] for e in await events(rt, "test.finished")] == ["error"]


def _processes_in(root: Path) -> list[int]:
    """Live (non-zombie) processes whose working directory is `root`."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") != str(root.resolve()):
                continue
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry))
    return found


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
