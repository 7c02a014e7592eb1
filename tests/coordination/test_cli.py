"""`roundtable run --headless` and `roundtable watch` end to end (click runner and a subprocess)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from roundtable.cli import cli
from tests.support.processes import LineReader


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _call(project: Path, tool: str, args: dict) -> dict:
    code, out, err = _invoke("mcp", "call", "--root", str(project), "--tool", tool, "--args", json.dumps(args))
    assert code == 0, err
    return json.loads(out)


def test_run_headless_creates_ticks_and_snapshots(project: Path) -> None:
    code, out, err = _invoke("run", "--headless", "--root", str(project), "--goal", "ship it")
    assert code == 0, err
    assert out.startswith("created run RUN-")
    run_id = out.split()[2]
    assert "tick 1: nothing to do" in out and "awaiting_initial_work" in out and "snapshot RS-" in out
    _call(project, "task.create", {"title": "t", "body_md": "b", "task_id": "T-1"})
    code, out, err = _invoke(
        "run", "--headless", "--root", str(project), "--resume", "--ticks", "2", "--interval", "10ms"
    )
    assert code == 0, err
    assert f"resumed run {run_id}" in out
    assert "tick 1: assigned T-1 to implementer-1" in out and "tick 2: nothing to do" in out
    state = _call(project, "table.get_state", {})
    assert state["tasks"][0]["status"] == "in_progress"
    assert [r["id"] for r in state["runs"]] == [run_id] and state["runs"][0]["goal"] == "ship it"


def test_run_headless_refuses_a_second_owner(project: Path) -> None:
    from roundtable.owner import acquire_lock

    with acquire_lock(project):
        code, _out, err = _invoke("run", "--headless", "--root", str(project))
    assert code == 1 and "already owned" in err
    code, _out, err = _invoke("run", "--headless", "--root", str(project), "--resume")
    assert code == 1 and err.strip() == "no run available to resume (create one: roundtable runs create --goal TEXT)"
    code, _out, err = _invoke("run", "--headless", "--root", str(project), "--run", "../x")
    assert code == 2 and "--run" in err


def test_watch_text_and_json(project: Path) -> None:
    _invoke("run", "--headless", "--root", str(project))
    _call(project, "task.create", {"title": "stuck", "body_md": "b", "task_id": "T-b", "status": "blocked"})
    _call(project, "task.create", {"title": "go", "body_md": "b", "task_id": "T-g"})
    _invoke("run", "--headless", "--root", str(project), "--resume")
    _call(project, "agent.turn_request", {"run_id": _latest_run(project), "agent_id": "tester-1", "reason_md": "x"})
    code, out, err = _invoke("watch", "--root", str(project))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("WATCH run=(all) active_agents=8 open_tasks=2 ")
    assert "BLOCKED T-b stuck" in lines
    assert any(line.startswith("EVENT ") and "task.assigned chair-1 T-g" in line for line in lines)
    code, out, _ = _invoke("watch", "--root", str(project), "--json", "--after", "0", "--limit", "1")
    page = json.loads(out)
    assert len(page["events"]) == 1 and page["has_more_events"] is True
    code, _out, err = _invoke("watch", "--root", str(project), "--after", "-1")
    assert code == 2


def test_watch_follow_prints_new_events_and_stops_on_sigint(project: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "roundtable", "watch", "--root", str(project), "--follow", "--interval", "5s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    output = LineReader(proc.stdout)
    try:
        output.wait_for(r"^WATCH ")  # started: the first page is out
        _invoke("run", "--headless", "--root", str(project))
        _call(project, "agent.turn_request", {"run_id": _latest_run(project), "agent_id": "tester-1", "reason_md": "x"})
        output.wait_for(r"agent\.turn_requested tester-1")
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        err = proc.stderr.read() if proc.stderr is not None else ""
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "agent.turn_requested tester-1" in output.text()


def _latest_run(project: Path) -> str:
    runs = _call(project, "table.get_state", {})["runs"]
    return str(runs[-1]["id"])
