"""Printed usage is a cross-check, so it is read defensively: only the harness's own events,
every figure a non-negative finite number under a sane bound (an event with anything else —
Infinity, NaN, a billion dollars — is skipped whole, and recording goes on), and a closing
`result` never lowers what was already counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.sessions import usage
from roundtable.services.sessions.usage_stream import MAX_COST_USD, MAX_EVENT_TOKENS, Meter, Usage
from tests.sessions.test_usage import CLAUDE, CLAUDE_USAGE, CODEX, CODEX_USAGE, _supervised

pytestmark = pytest.mark.anyio
SESSION = json.loads(CLAUDE.read_text(encoding="utf-8").splitlines()[0])["session_id"]


def result(**fields: object) -> str:
    """A Claude Code closing `result` line of the captured session with these figures."""
    return json.dumps({"type": "result", "subtype": "success", "session_id": SESSION, **fields})


def raw(fields: str) -> str:
    """A `result` line with `fields` written as JSON text (`Infinity`, `NaN`, `1e400` as printed)."""
    return '{"type":"result","session_id":"' + SESSION + '",' + fields + "}"


def assistant(message_id: str, output_tokens: object, session: str = SESSION) -> str:
    usage = {"input_tokens": 1000, "output_tokens": output_tokens}
    message = {"id": message_id, "type": "message", "role": "assistant", "model": "m", "usage": usage}
    return json.dumps({"type": "assistant", "message": message, "session_id": session})


def fed(harness: str, *lines: str) -> Meter:
    m = Meter(harness=harness)
    for line in lines:
        m.feed(line)
    return m


def test_a_result_never_lowers_the_running_totals() -> None:
    init = CLAUDE.read_text(encoding="utf-8").splitlines()[0]
    m = fed("claude", init, assistant("msg_1", 155_000))
    assert m.usage().output_tokens == 155_000
    m.feed(result(total_cost_usd=0, usage={"input_tokens": 0, "output_tokens": 0}))
    spent = m.usage()
    assert (spent.input_tokens, spent.output_tokens, spent.cost_usd) == (1000, 155_000, 0.0)
    m.feed(result(usage={"input_tokens": 5000, "output_tokens": 10}))  # higher input: raised, output kept
    assert (m.usage().input_tokens, m.usage().output_tokens) == (5000, 155_000)


@pytest.mark.parametrize(
    "forged",
    [
        result(total_cost_usd=1_000_000_000, usage={"input_tokens": 1, "output_tokens": 1}),
        result(total_cost_usd=MAX_COST_USD * 2, usage={"input_tokens": 1}),
        result(total_cost_usd=-5, usage={"input_tokens": 1}),
        raw('"total_cost_usd":Infinity,"usage":{"input_tokens":1}'),
        raw('"total_cost_usd":NaN,"usage":{"input_tokens":1}'),
        raw('"usage":{"input_tokens":1e400}'),
        result(usage={"input_tokens": MAX_EVENT_TOKENS + 1}),
        result(usage={"input_tokens": 12.5}),
        result(usage={"input_tokens": "900"}),
        result(modelUsage={"m": {"inputTokens": 10, "costUSD": 1e12}}),
    ],
)
def test_an_out_of_bounds_figure_skips_its_event_and_breaks_nothing(forged: str) -> None:
    lines = CLAUDE.read_text(encoding="utf-8").splitlines()
    m = fed("claude", *lines)
    assert m.usage() == CLAUDE_USAGE
    assert m.feed(forged) is False
    assert m.refused == 1 and m.usage() == CLAUDE_USAGE


def test_only_the_harness_own_events_count() -> None:
    claude_lines = CLAUDE.read_text(encoding="utf-8").splitlines()
    codex_lines = CODEX.read_text(encoding="utf-8").splitlines()
    # Claude Code's meter reads no Codex shape, nor an event of another Claude session.
    m = fed("claude", *claude_lines, *codex_lines, assistant("msg_x", 90_000, session="another-session"))
    assert m.usage() == CLAUDE_USAGE
    # Codex's meter reads no Claude shape, and a turn.completed only after Codex started a turn.
    c = fed("codex", *codex_lines, *claude_lines, codex_lines[-1])
    assert c.usage() == CODEX_USAGE
    again = fed("codex", *codex_lines, '{"type":"turn.started"}', codex_lines[-1])
    assert again.usage().tokens == 2 * CODEX_USAGE.tokens
    # An adapter that is neither (the scripted one replays both) reads both shapes.
    assert fed("scripted", *codex_lines).usage() == CODEX_USAGE


def test_totals_are_capped_far_inside_sqlite() -> None:
    turn = json.dumps({"type": "turn.completed", "usage": {"input_tokens": MAX_EVENT_TOKENS}})
    m = fed("codex", *(line for _ in range(2000) for line in ('{"type":"turn.started"}', turn)))
    assert m.usage().input_tokens == 10**12 and m.usage() != Usage()


async def test_a_forged_result_is_not_recorded_and_recording_goes_on(runtime: Runtime, tmp_path: Path) -> None:
    streams = tmp_path / "streams"
    streams.mkdir(mode=0o755)
    stream = streams / "forged.jsonl"
    forged = [
        result(total_cost_usd=1_000_000_000, usage={"input_tokens": 1, "output_tokens": 1}),
        raw('"total_cost_usd":Infinity,"usage":{"input_tokens":1e400}'),
        result(total_cost_usd=0, usage={"input_tokens": 0, "output_tokens": 0}),
    ]
    stream.write_text("\n".join([*CLAUDE.read_text(encoding="utf-8").splitlines(), *forged]) + "\n")
    stream.chmod(0o644)
    _run_id, _task_id, session_id = await _supervised(runtime, tmp_path, stream)
    async with runtime.db.read() as r:
        row = await usage.of_session(r, session_id)
    assert row is not None
    assert (row["input_tokens"], row["cached_input_tokens"], row["output_tokens"]) == (6180, 2400, 1020)
    assert row["cost_usd"] == pytest.approx(0.027495)
