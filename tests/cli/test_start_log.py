"""`roundtable start` logs one line per meaningful event through the one
`logging.dictConfig` of the CLI entry: launches and failed launches, turns, applies, rollbacks."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from roundtable.cli import cli
from roundtable.logs import config_dict, describe_event
from tests.support.owners import free_port, set_http_address
from tests.support.processes import LineReader

ROUNDTABLE = [sys.executable, "-m", "roundtable"]


def rt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ROUNDTABLE, *args, "--root", str(root)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def short_socket_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rt-log-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_start_logs_launches_failures_and_turns(project: Path, short_socket_dir: Path) -> None:
    set_http_address(project, free_port())
    cfg = project / ".roundtable" / "config.yaml"
    cfg.write_text(
        cfg.read_text().replace(
            "socket_path: .roundtable/mcp/roundtable.sock", f"socket_path: {short_socket_dir}/s.sock"
        )
    )
    assert rt(project, "run", "--headless", "--run", "RUN-log").returncode == 0
    # No `codex` on PATH: the launch fails the way a user without the CLI sees it.
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"}
    assert shutil.which("codex", path=env["PATH"]) is None
    errors = tempfile.TemporaryFile("w+")  # a file, not a pipe: nobody has to drain it meanwhile
    proc = subprocess.Popen(
        [*ROUNDTABLE, "start", "--root", str(project)],
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    output = LineReader(proc.stdout)
    try:
        assert re.match(
            r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* roundtable coordinator ready; project="
            + re.escape(str(project.resolve())),
            ready,
        ), ready
        task = {"title": "t", "body_md": "b", "task_id": "T-log", "assigned_agent_id": "implementer-1"}
        assert (
            rt(project, "mcp", "call", "--socket", "--tool", "task.create", "--args", json.dumps(task)).returncode == 0
        )
        failed = rt(
            project,
            "sessions",
            "launch",
            "--agent",
            "implementer-1",
            "--task",
            "T-log",
            "--adapter",
            "codex",
            "--run",
            "RUN-log",
        )
        assert failed.returncode == 1 and "launch codex failed: No such file or directory" in failed.stderr
        turn = {"run_id": "RUN-log", "agent_id": "tester-1", "reason_md": "check"}
        assert (
            rt(
                project, "mcp", "call", "--socket", "--tool", "agent.turn_request", "--args", json.dumps(turn)
            ).returncode
            == 0
        )
        output.wait_for(r"turn scheduled for tester-1 in run RUN-log", timeout=60)  # a Chair tick
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    errors.seek(0)
    err = errors.read()
    errors.close()
    assert proc.returncode == 0, err
    lines = output.text().splitlines()
    body = "\n".join(lines)
    assert re.search(r"session S-\S+ launched: implementer-1 \(implementer\) on task T-log", body)
    assert re.search(r"session S-\S+ exited: failed \(exit code -1\)", body)
    assert "launch codex failed: No such file or directory (agent implementer-1, task T-log)" in body
    assert re.search(r"turn requested by tester-1 in run RUN-log \(request \d+\)", body)
    assert re.search(r"turn scheduled for tester-1 in run RUN-log \(request \d+\)", body)
    assert lines[-1].endswith("roundtable coordinator stopped")
    assert sum("launch codex failed" in line for line in lines) == 1  # once, not per layer
    # Which isolation agents' code gets, said right after the ready line.
    assert re.search(r"agent sessions: (bwrap|landlock) \(.*default-deny", body), body[:2000]
    assert re.search(r"test runs: (bwrap|landlock) \(.*default-deny", body), body[:2000]


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (
            {
                "type": "patch.applied",
                "run_id": "R",
                "payload_json": '{"proposal_id": "P-1", "transaction_id": "TX-1"}',
            },
            (logging.INFO, "applied proposal P-1 as transaction TX-1"),
        ),
        (
            {
                "type": "patch.rolled_back",
                "payload_json": '{"proposal_id": "P-1", "transaction_id": "TX-1", "reason": "operator"}',
            },
            (logging.WARNING, "rolled back transaction TX-1 (proposal P-1): operator"),
        ),
        (
            {"type": "patch.apply_failed", "payload_json": '{"proposal_id": "P-2", "error": "git apply failed"}'},
            (logging.ERROR, "apply of proposal P-2 failed: git apply failed"),
        ),
        (
            {"type": "agent.turn_completed", "run_id": "R", "payload_json": '{"agent_id": "a", "request_event_id": 4}'},
            (logging.INFO, "turn completed by a in run R (request 4)"),
        ),
        (
            {"type": "agent.turn_expired", "run_id": "R", "payload_json": "{}"},
            (logging.WARNING, "turn of - expired in run R: -"),
        ),
        (  # the payload has no `subject`: the line said "approval requested: -"
            {
                "type": "approval.requested",
                "run_id": "R",
                "payload_json": '{"approval_id": "H-1", "proposal_id": "P-1", "requested_by": "dispatcher"}',
            },
            (logging.INFO, "approval H-1 requested by dispatcher for proposal P-1"),
        ),
    ],
)
def test_describe_event(event: dict[str, str], line: tuple[int, str]) -> None:
    assert describe_event(event) == line


def test_uninteresting_events_are_not_logged() -> None:
    assert describe_event({"type": "claim.acquired", "payload_json": "{}"}) is None


def test_one_configuration_per_command(capsys: pytest.CaptureFixture[str]) -> None:
    owner = config_dict("start")
    assert owner["loggers"]["roundtable"]["handlers"] == ["owner"]
    assert owner["handlers"]["owner"]["which"] == "stdout"
    quiet = config_dict("claims")
    assert quiet["loggers"]["roundtable"] == {"level": "WARNING", "handlers": [], "propagate": True}
    assert quiet["root"]["handlers"] == ["stderr"]
    # The CLI entry applies it: after any command, `roundtable` logs warnings through the root.
    CliRunner().invoke(cli, ["symbols", "--help"])
    logger = logging.getLogger("roundtable")
    assert logger.level == logging.WARNING and logger.propagate and not logger.handlers
    # The handler writes to the stream of the moment, not CliRunner's (closed) one.
    capsys.readouterr()
    logging.getLogger("roundtable.test").warning("still fine")
    assert capsys.readouterr().err == "roundtable: WARNING: still fine\n"
