"""Token usage read from a supervised harness's own machine-readable output, line by line.

The supervisor feeds every line a session prints to a `Meter`; lines that are not one of the
shapes below are ignored, so any harness (or none) can be metered. Shapes, as measured on the
harnesses' own output (pinned by tests on captured streams):

- Claude Code (`-p --output-format stream-json --verbose`): each `assistant` event carries its
  message's `usage` as of the message's start (the output count is not final there), repeated for
  every content block of the message; the closing `result` event carries the session's totals —
  `modelUsage` (per model, side requests included, with `costUSD`), `usage` (the main loop only)
  and `total_cost_usd`. Live figures come from the assistant events (each message counted once,
  its latest figure kept); the result replaces them with the totals and the harness's cost.
- Codex (`exec --json`): a `turn.completed` event per turn carries that turn's
  `usage` (`input_tokens` including `cached_input_tokens`, `output_tokens`); turns add up.
  Codex reports no cost: the owner prices it from the configured price table.

Counts are normalised so both harnesses mean the same thing: `input_tokens` is every prompt token
the model read (cache reads and cache writes included), `cached_input_tokens` the part read from a
cache, `output_tokens` what it wrote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# A line longer than this is not a usage event (a harness can print whole files on one line).
MAX_LINE = 1 << 20


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


def _count(value: Any) -> int:
    """A non-negative token count from a JSON value (anything else counts 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def _cost(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value < 0:
        return None
    return float(value)


def _anthropic(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(input with cache reads and writes, cache reads, output) of an Anthropic `usage`."""
    reads = _count(usage.get("cache_read_input_tokens"))
    total_in = _count(usage.get("input_tokens")) + _count(usage.get("cache_creation_input_tokens")) + reads
    return total_in, reads, _count(usage.get("output_tokens"))


@dataclass
class Meter:
    """Accumulates one session's usage from its output lines; `version` grows on each change."""

    version: int = 0
    _messages: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # Claude message id → counts
    _codex: tuple[int, int, int] = (0, 0, 0)
    _final: Usage | None = None  # Claude's closing result event
    _model: str = ""

    def feed(self, line: str) -> bool:
        """Read one output line; True when it changed the usage."""
        text = line.strip()
        # Every line that carries usage names it (`usage`, `modelUsage`): others are not parsed.
        if not text.startswith("{") or len(text) > MAX_LINE or 'sage"' not in text:
            return False
        try:
            event = json.loads(text)
        except ValueError:
            return False
        if not isinstance(event, dict):
            return False
        changed = self._read(event)
        if changed:
            self.version += 1
        return changed

    def _read(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        if kind == "assistant" and isinstance(event.get("message"), dict):
            message = event["message"]
            usage = message.get("usage")
            if not isinstance(usage, dict):
                return False
            if isinstance(message.get("model"), str) and message["model"]:
                self._model = message["model"]
            key = str(message.get("id") or f"#{len(self._messages)}")
            counts = _anthropic(usage)
            previous = self._messages.get(key)
            if previous is not None:
                counts = tuple(max(a, b) for a, b in zip(previous, counts, strict=True))  # type: ignore[assignment]
            if counts == previous:
                return False
            self._messages[key] = counts
            return True
        if kind == "result" and ("usage" in event or "modelUsage" in event):
            self._final = _claude_result(event, self._model)
            return True
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            usage = event["usage"]
            turn = (
                _count(usage.get("input_tokens")),
                _count(usage.get("cached_input_tokens")),
                _count(usage.get("output_tokens")),
            )
            if turn == (0, 0, 0):
                return False
            self._codex = tuple(a + b for a, b in zip(self._codex, turn, strict=True))  # type: ignore[assignment]
            return True
        return False

    def usage(self) -> Usage:
        """What the session has used so far."""
        if self._final is not None:
            return self._final
        totals = [sum(c[i] for c in self._messages.values()) + self._codex[i] for i in range(3)]
        return Usage(totals[0], totals[1], totals[2], None, self._model)


def _claude_result(event: dict[str, Any], model: str) -> Usage:
    """The totals of Claude Code's closing `result` event: `modelUsage` when present (it counts
    every request, side requests included, and is what the cost covers), else `usage`."""
    cost = _cost(event.get("total_cost_usd"))
    per_model = event.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        total_in = reads = out = 0
        models = []
        for name, counts in per_model.items():
            if not isinstance(counts, dict):
                continue
            models.append(str(name))
            r = _count(counts.get("cacheReadInputTokens"))
            total_in += _count(counts.get("inputTokens")) + _count(counts.get("cacheCreationInputTokens")) + r
            reads += r
            out += _count(counts.get("outputTokens"))
        if cost is None:
            costs = [_cost(c.get("costUSD")) for c in per_model.values() if isinstance(c, dict)]
            cost = sum(c for c in costs if c is not None) if any(c is not None for c in costs) else None
        return Usage(total_in, reads, out, cost, ",".join(models) or model)
    usage = event.get("usage")
    total_in, reads, out = _anthropic(usage if isinstance(usage, dict) else {})
    return Usage(total_in, reads, out, cost, model)
