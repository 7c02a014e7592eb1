"""Usage accounting: the harnesses' own streams (captured from Claude Code 2.1.197 and Codex
0.171.0 driven by the model stub of `tests/e2e_harness`) are metered, recorded per session through
`session.record_usage` and rolled up per task, revision, agent and run; a task budget stops the
session that crosses it."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from roundtable.config import PriceConfig
from roundtable.runtime import Runtime
from roundtable.services.sessions import usage
from roundtable.services.sessions.records import LaunchArgs
from roundtable.services.sessions.usage_stream import Meter, Usage
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio

STREAMS = Path(__file__).parent / "streams"
CLAUDE = STREAMS / "claude-code-2.1.197.jsonl"
CODEX = STREAMS / "codex-0.171.0.jsonl"
# What the stub reported for each request when the streams were captured (Usage in model_stub):
# Claude Code made 3 requests of 1200 input + 60 cache writes + 800 cache reads, 340 output each;
# Codex 1 request of 2100 input (1500 of them cached), 410 output.
CLAUDE_USAGE = Usage(3 * (1200 + 60 + 800), 3 * 800, 3 * 340, 0.027495, "claude-sonnet-4-5")
CODEX_USAGE = Usage(2100, 1500, 410, None, "")


def meter(path: Path) -> Meter:
    m = Meter()
    for line in path.read_text(encoding="utf-8").splitlines():
        m.feed(line)
    return m


def test_claude_code_stream_totals_come_from_its_result_event() -> None:
    m = Meter()
    lines = CLAUDE.read_text(encoding="utf-8").splitlines()
    assert m.feed(lines[0]) is False  # the init event carries no usage
    assert m.feed(lines[1]) is True  # the first assistant message: counted live
    live = m.usage()
    assert (live.input_tokens, live.cached_input_tokens, live.cost_usd) == (1200 + 60 + 800, 800, None)
    assert m.feed(lines[1]) is False  # the same message again (one event per content block)
    for line in lines[2:]:
        m.feed(line)
    assert m.usage() == CLAUDE_USAGE


def test_codex_stream_adds_up_its_turns() -> None:
    m = meter(CODEX)
    assert m.usage() == CODEX_USAGE
    m.feed(CODEX.read_text(encoding="utf-8").splitlines()[-1])  # a second turn
    assert m.usage().tokens == 2 * CODEX_USAGE.tokens


def test_noise_is_ignored() -> None:
    m = Meter()
    for line in ["plain text", "{not json", '{"type": "result"}', "[1, 2]", '{"type":"turn.completed","usage":7}']:
        assert m.feed(line) is False
    assert m.usage() == Usage() and m.version == 0


def test_prices_apply_to_cached_and_fresh_input() -> None:
    prices = {"gpt-x": PriceConfig(input=2.0, output=10.0, cached_input=0.5), "*": PriceConfig(input=1.0)}
    assert usage.price_of(prices, "gpt-x", CODEX_USAGE) == pytest.approx((600 * 2 + 1500 * 0.5 + 410 * 10) / 1e6)
    assert usage.price_of(prices, "other", CODEX_USAGE) == pytest.approx(2100 / 1e6)
    assert usage.price_of({}, "gpt-x", CODEX_USAGE) is None


async def _supervised(runtime: Runtime, tmp_path: Path, stream: Path, **launch: str) -> tuple[str, str, str]:
    """An implementer session whose harness prints `stream` and then works (the scripted agent).
    The captured stream is granted to the session's sandbox (`sessions.read_paths`)."""
    sandboxed = runtime.config.sessions.model_copy(update={"read_paths": (str(stream.parent),)})
    runtime.config = runtime.config.model_copy(update={"sessions": sandboxed})
    run_id, task_id = await make_task(runtime)
    # A long grace: the session must meet the refusal at its next call, not be killed before it.
    sup = await start_supervisor(runtime, base_dir=tmp_path, revoke_grace=60)
    try:
        res = await sup.launch(
            LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted", **launch),
            extra_args=("--usage-stream", str(stream), "--turn-timeout", "0.5"),
        )
        session_id = res["session"]["id"]
        await sup.wait(session_id, 60)
    finally:
        await sup.close()
    return run_id, task_id, session_id


async def test_a_supervised_claude_stream_is_recorded_per_session_task_and_run(
    runtime: Runtime, tmp_path: Path
) -> None:
    run_id, task_id, session_id = await _supervised(runtime, tmp_path, CLAUDE)
    async with runtime.db.read() as r:
        row = await usage.of_session(r, session_id)
        by_task = await usage.totals(r, task_id=task_id)
        by_run = await usage.totals(r, run_id=run_id)
        by_agent = await usage.breakdown(r, "agent_id", run_id=run_id)
    assert row is not None
    assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (6180, 2400, 1020)
    assert row["cost_usd"] == pytest.approx(0.027495) and row["cost_source"] == "harness"
    for totals in (by_task, by_run, by_agent["implementer-1"]):
        assert (totals.sessions, totals.tokens, totals.cost_usd) == (1, 6180 + 1020, pytest.approx(0.027495))


async def test_a_codex_stream_is_priced_from_the_price_table(runtime: Runtime, tmp_path: Path) -> None:
    runtime.config = runtime.config.model_copy(
        update={
            "usage": runtime.config.usage.model_copy(
                update={"prices": {"gpt-x": PriceConfig(input=2.0, output=10.0, cached_input=0.5)}}
            )
        }
    )
    _run_id, _task_id, session_id = await _supervised(runtime, tmp_path, CODEX, model="gpt-x")
    async with runtime.db.read() as r:
        row = await usage.of_session(r, session_id)
    assert row is not None and row["model"] == "gpt-x"
    assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (2100, 1500, 410)
    assert row["cost_source"] == "prices"
    assert row["cost_usd"] == pytest.approx((600 * 2 + 1500 * 0.5 + 410 * 10) / 1e6)


async def test_a_session_over_its_task_budget_is_stopped_and_the_task_blocked(
    runtime: Runtime, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="roundtable.server.sessions")
    budgets = runtime.config.budgets.model_copy(
        update={"task": runtime.config.budgets.task.model_copy(update={"tokens": 5000})}
    )
    runtime.config = runtime.config.model_copy(update={"budgets": budgets})
    _run_id, task_id, session_id = await _supervised(runtime, tmp_path, CLAUDE)
    async with runtime.db.read() as r:
        exceeded = await r.fetchall("SELECT payload_json FROM events WHERE type = 'budget.exceeded'")
        status = await r.scalar("SELECT status FROM tasks WHERE id = ?", (task_id,))
        blocked = await r.scalar(
            "SELECT payload_json FROM events WHERE type = 'task.blocked' AND task_id = ?", (task_id,)
        )
        revoked = await r.scalar("SELECT revoked_reason FROM session_capabilities WHERE session_id = ?", (session_id,))
    assert len(exceeded) == 1
    payload = json.loads(exceeded[0][0])
    assert (payload["scope"], payload["key"], payload["tokens"], payload["limit_tokens"]) == (
        "task",
        task_id,
        7200,
        5000,
    )
    assert status == "blocked" and json.loads(blocked)["reason"].startswith("budget: task")
    assert str(revoked).startswith("budget: task")
    # Its next tool call was refused with the reason, and that stopped it (not a timer: the grace
    # of a revoke is 60 s here).
    stops = [r.getMessage() for r in caplog.records if "stopped: budget: task" in r.getMessage()]
    assert len(stops) == 1, [r.getMessage() for r in caplog.records]
    async with runtime.db.read() as r:
        exited = json.loads(
            await r.scalar("SELECT payload_json FROM events WHERE type = 'session.exited' AND run_id != ''")
        )
    assert exited["session_id"] == session_id and exited["exit_code"] != 0
    log = (runtime.root / ".roundtable" / "logs" / "sessions" / f"{session_id}.log").read_text(encoding="utf-8")
    assert '"step": "done"' not in log


async def test_rollups_per_revision_show_in_the_gate_report_state_resource_and_cli(runtime: Runtime) -> None:
    from click.testing import CliRunner

    from roundtable import clock
    from roundtable.cli import cli
    from roundtable.server.resources import run_usage
    from roundtable.tools.context import SUPERVISOR
    from tests.sessions.helpers import add_proposal, bind

    run_id, task_id = await make_task(runtime)
    proposal_id = await add_proposal(runtime, task_id)
    author = await bind(runtime, "implementer-1", run_id, task_id)
    async with runtime.db.write() as tx:
        await tx.execute("UPDATE proposals SET revision_number = 1, run_id = ? WHERE id = ?", (run_id, proposal_id))
        await tx.insert(
            "patch_revisions",
            {
                "proposal_id": proposal_id,
                "number": 1,
                "sha256": "0" * 64,
                "patch_path": "",
                "agent_id": "implementer-1",
                "created_at": clock.now(),
            },
        )
    reviewer = await bind(runtime, "reviewer-1", run_id, task_id, proposal_id)
    spend = {author.session_id: (1000, 200, 0.5), reviewer.session_id: (300, 100, None)}
    for session_id, (tokens_in, tokens_out, cost) in spend.items():
        args = {"session_id": session_id, "input_tokens": tokens_in, "output_tokens": tokens_out}
        if cost is not None:
            args["cost_usd"] = cost
        await runtime.call("session.record_usage", args, SUPERVISOR)

    report = await runtime.call("patch.validate", {"proposal_id": proposal_id})
    assert report["cost"]["by_revision"] == [
        {
            "revision": 1,
            "sessions": 2,
            "input_tokens": 1300,
            "cached_input_tokens": 0,
            "output_tokens": 300,
            "tokens": 1600,
            "cost_usd": 0.5,
            "unpriced_sessions": 1,
        }
    ]
    from roundtable.tui.widgets.gate_report import cost_line

    assert cost_line(report).plain == "cost: r1 1.6k tokens · $0.50+?"  # the console's gate report
    state = await runtime.call("table.get_state", {"summary": True, "run_id": run_id})
    assert (state["usage"]["sessions"], state["usage"]["tokens"], state["usage"]["cost_usd"]) == (2, 1600, 0.5)
    resource = await run_usage(runtime, run_id)
    assert resource["by_agent"]["reviewer-1"]["tokens"] == 400 and resource["by_task"][task_id]["tokens"] == 1600

    runner = CliRunner()
    listed = await asyncio.to_thread(runner.invoke, cli, ["runs", "list", "--root", str(runtime.root)])
    assert listed.exit_code == 0 and "1.6k tokens · $0.50+?" in listed.output, listed.output
    shown = await asyncio.to_thread(
        runner.invoke, cli, ["sessions", "show", author.session_id, "--root", str(runtime.root)]
    )
    assert shown.exit_code == 0, shown.output
    assert "usage: 1,000 input (0 cached) + 200 output tokens · $0.5000 (harness)" in shown.output
    assert f"for {proposal_id} r1" in shown.output
