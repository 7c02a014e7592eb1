"""Token usage read from a supervised harness's own machine-readable output, line by line.

The supervisor feeds every line a session prints to a `Meter`; lines that are not one of the
shapes below are ignored, so any harness (or none) can be metered. Shapes, as measured on the
harnesses' own output (pinned by tests on captured streams):

- Claude Code (`-p --output-format stream-json --verbose`): each `assistant` event carries its
  message's `usage` as of the message's start (the output count is not final there), repeated for
  every content block of the message; the closing `result` event carries the session's totals —
  `modelUsage` (per model, side requests included, with `costUSD`), `usage` (the main loop only)
  and `total_cost_usd`. Live figures come from the assistant events (each message counted once,
  its latest figure kept); the result raises them to its totals (never lowers one) and gives
  the harness's cost.
- Codex (`exec --json`): a `turn.completed` event per turn carries that turn's
  `usage` (`input_tokens` including `cached_input_tokens`, `output_tokens`); turns add up.
  Codex reports no cost: the owner prices it from the configured price table.

Only the harness's own events are read (`Meter.harness`), every figure is bounded and
validated, and nothing a later line says lowers a figure already counted. These printed figures
are a cross-check of what the owner measures on the wire, not a source to trust.

Counts are normalised so both harnesses mean the same thing: `input_tokens` is every prompt token
the model read (cache reads and cache writes included), `cached_input_tokens` the part read from a
cache, `output_tokens` what it wrote.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

# A line longer than this is not a usage event (a harness can print whole files on one line).
MAX_LINE = 1 << 20
# The most one figure in one event may claim: a billion tokens (a request reads a few million at
# most; a Codex turn adds up its requests) and, for a session's closing result, $10,000. A figure
# that is not a non-negative finite number below these refuses its whole event.
MAX_EVENT_TOKENS = 10**9
MAX_COST_USD = 10_000.0
# A session's running totals stop growing here (far beyond any budget, far inside SQLite's 64 bits).
MAX_TOTAL_TOKENS = 10**12
# The harnesses whose own event shapes are read; any other adapter (the scripted one replays
# captured streams of both) is read for both.
HARNESSES = ("claude", "codex")
_Counts = tuple[int, int, int]


@dataclass(frozen=True)
class Usage:
    """A session's token counts and, when the harness reported one, its cost in USD."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    model: str = ""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class _Refused(ValueError):
    """A figure in an event is not a count or a cost one could believe: the event is skipped."""


def _count(value: Any) -> int:
    """A token count from a JSON value: absent is 0; a non-negative whole number up to
    `MAX_EVENT_TOKENS` is itself; anything else (negative, fractional, Infinity, NaN, huge, a
    string, a boolean) refuses the event."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Refused(f"token count {value!r} is not a number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _Refused(f"token count {value!r} is not a whole number")
    if not 0 <= value <= MAX_EVENT_TOKENS:
        raise _Refused(f"token count {value!r} is outside 0..{MAX_EVENT_TOKENS}")
    return int(value)


def _cost(value: Any) -> float | None:
    """A cost in USD: absent is None; a finite number in 0..`MAX_COST_USD` is itself; anything
    else refuses the event."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Refused(f"cost {value!r} is not a finite number")
    if not 0 <= value <= MAX_COST_USD:
        raise _Refused(f"cost {value!r} is outside 0..{MAX_COST_USD:g}")
    return float(value)


def _anthropic(usage: dict[str, Any]) -> _Counts:
    """(input with cache reads and writes, cache reads, output) of an Anthropic `usage`."""
    reads = _count(usage.get("cache_read_input_tokens"))
    total_in = _count(usage.get("input_tokens")) + _count(usage.get("cache_creation_input_tokens")) + reads
    return total_in, reads, _count(usage.get("output_tokens"))


def _capped(counts: _Counts) -> _Counts:
    return tuple(min(c, MAX_TOTAL_TOKENS) for c in counts)  # type: ignore[return-value]


def _larger(a: _Counts, b: _Counts) -> _Counts:
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


@dataclass
class Meter:
    """Accumulates one session's usage from its output lines; `version` grows on each change.

    `harness` (`claude`, `codex`) limits the events read to that harness's own: Claude Code's
    `assistant` and `result` events of the session its `init` event named, Codex's
    `turn.completed` after a `turn.started`. Figures are validated (`_count`, `_cost`); an event
    with a figure out of bounds is skipped whole and counted in `refused`. Totals never go down:
    a closing `result` raises each figure to its own when that is higher, never lowers one."""

    harness: str = ""
    version: int = 0
    refused: int = 0  # events skipped for a figure out of bounds
    _messages: dict[str, _Counts] = field(default_factory=dict)  # Claude message id → counts
    _codex: _Counts = (0, 0, 0)
    _turn_open: bool = False  # Codex: a turn.started not yet completed
    _final: _Counts | None = None  # Claude's closing result event(s), the highest figures
    _final_cost: float | None = None
    _final_model: str = ""
    _model: str = ""
    _claude_session: str = ""  # the session id of Claude Code's init event

    def feed(self, line: str) -> bool:
        """Read one output line; True when it changed the usage."""
        text = line.strip()
        if not text.startswith("{") or len(text) > MAX_LINE:
            return False
        # Every line that carries usage names it (`usage`, `modelUsage`), and Claude's init names
        # the session: others are not parsed.
        if 'sage"' not in text and '"init"' not in text and '"turn.started"' not in text:
            return False
        try:
            event = json.loads(text)
        except (ValueError, RecursionError):
            return False
        if not isinstance(event, dict):
            return False
        try:
            changed = self._read(event)
        except _Refused:
            self.refused += 1
            return False
        if changed:
            self.version += 1
        return changed

    def _reads(self, harness: str) -> bool:
        return self.harness not in HARNESSES or self.harness == harness

    def _claude_own(self, event: dict[str, Any]) -> bool:
        """Is this event of the Claude Code session the stream's init named (any, before one)?"""
        session = event.get("session_id")
        return not self._claude_session or session == self._claude_session

    def _read(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init" and self._reads("claude"):
            if not self._claude_session and isinstance(event.get("session_id"), str):
                self._claude_session = event["session_id"]
            return False
        if kind == "assistant" and self._reads("claude") and isinstance(event.get("message"), dict):
            return self._assistant(event)
        if kind == "result" and self._reads("claude") and ("usage" in event or "modelUsage" in event):
            return self._claude_own(event) and self._result(event)
        if kind == "turn.started" and self._reads("codex"):
            self._turn_open = True
            return False
        if kind == "turn.completed" and self._reads("codex") and isinstance(event.get("usage"), dict):
            if self.harness == "codex" and not self._turn_open:
                return False  # a turn Codex did not start
            usage = event["usage"]
            turn = (
                _count(usage.get("input_tokens")),
                _count(usage.get("cached_input_tokens")),
                _count(usage.get("output_tokens")),
            )
            self._turn_open = False
            if turn == (0, 0, 0):
                return False
            self._codex = _capped(tuple(a + b for a, b in zip(self._codex, turn, strict=True)))  # type: ignore[arg-type]
            return True
        return False

    def _assistant(self, event: dict[str, Any]) -> bool:
        message = event["message"]
        usage = message.get("usage")
        if not isinstance(usage, dict) or not self._claude_own(event):
            return False
        counts = _anthropic(usage)
        if isinstance(message.get("model"), str) and message["model"]:
            self._model = message["model"][:200]
        key = str(message.get("id") or f"#{len(self._messages)}")[:200]
        previous = self._messages.get(key)
        if previous is not None:
            counts = _larger(previous, counts)
        if counts == previous:
            return False
        self._messages[key] = counts
        return True

    def _result(self, event: dict[str, Any]) -> bool:
        counts, cost, model = _claude_result(event, self._model)
        before = (self._final, self._final_cost)
        self._final = counts if self._final is None else _larger(self._final, counts)
        if cost is not None:
            self._final_cost = cost if self._final_cost is None else max(self._final_cost, cost)
        self._final_model = model or self._final_model
        return (self._final, self._final_cost) != before

    def _live(self) -> _Counts:
        return _capped(tuple(sum(c[i] for c in self._messages.values()) + self._codex[i] for i in range(3)))  # type: ignore[arg-type]

    def usage(self) -> Usage:
        """What the session has used so far: the live figures, each raised to the closing
        result's when that is higher."""
        live = self._live()
        if self._final is None:
            return Usage(*live, None, self._model)
        return Usage(*_larger(live, self._final), self._final_cost, self._final_model or self._model)


def _claude_result(event: dict[str, Any], model: str) -> tuple[_Counts, float | None, str]:
    """The totals of Claude Code's closing `result` event: `modelUsage` when present (it counts
    every request, side requests included, and is what the cost covers), else `usage`."""
    cost = _cost(event.get("total_cost_usd"))
    per_model = event.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        total_in = reads = out = 0
        models = []
        costs: list[float] = []
        for name, counts in per_model.items():
            if not isinstance(counts, dict):
                continue
            models.append(str(name)[:200])
            r = _count(counts.get("cacheReadInputTokens"))
            total_in += _count(counts.get("inputTokens")) + _count(counts.get("cacheCreationInputTokens")) + r
            reads += r
            out += _count(counts.get("outputTokens"))
            if (each := _cost(counts.get("costUSD"))) is not None:
                costs.append(each)
        if cost is None and costs:
            cost = _cost(sum(costs))
        return _capped((total_in, reads, out)), cost, ",".join(models[:20]) or model
    usage = event.get("usage")
    return _capped(_anthropic(usage if isinstance(usage, dict) else {})), cost, model
