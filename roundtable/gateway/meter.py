"""Usage read from the model API's own answers as they pass through the gateway.

A `WireMeter` is fed every chunk of one response, unchanged and as it arrives, and keeps only what
it needs: for a streamed answer (server-sent events) the events that carry usage, for a JSON body
the body up to `MAX_JSON_BODY`. Shapes:

- Anthropic Messages: `message_start` carries `message.usage` (`input_tokens`,
  `cache_creation_input_tokens`, `cache_read_input_tokens`, a first `output_tokens`) and each
  `message_delta` a cumulative `usage` (the final `output_tokens`, and the input counts again in
  newer versions): each field's largest value is the message's. A JSON message carries `usage`.
- OpenAI Responses: `response.completed` (or `.incomplete` / `.failed`) carries `response.usage`
  (`input_tokens` including `input_tokens_details.cached_tokens`, `output_tokens`); a JSON
  response carries `usage`. Chat Completions' `usage` (`prompt_tokens`, `completion_tokens`) too.

Counts are normalised as `usage_stream` normalises the harnesses' own figures: `input_tokens` is
every prompt token (cache reads and writes included), `cached_input_tokens` the cache reads,
`output_tokens` what the model wrote. Every value is checked: a count that is not a finite
non-negative number counts 0, one above `TOKENS_MAX` counts `TOKENS_MAX`, and each such value is
named in `Measured.problems` (recording never fails on what an upstream sent).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

# One request's count of one kind above this is not believed (the largest context is ~10x less).
TOKENS_MAX = 10_000_000
MAX_EVENT = 1 << 20  # an SSE event longer than this is skipped, not parsed
MAX_JSON_BODY = 16 << 20  # a JSON answer longer than this is passed on but not metered
MODEL_MAX = 200
_USAGE_EVENTS_OPENAI = frozenset({"response.completed", "response.incomplete", "response.failed"})


@dataclass
class Measured:
    """One response's usage as the model API reported it, bounded."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def bounded(value: Any, name: str, problems: list[str]) -> int:
    """A token count from a JSON value: finite, non-negative, at most TOKENS_MAX."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        problems.append(f"{name} is not a number")
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(f"{name} is not finite")
        return 0
    if value < 0:
        problems.append(f"{name} is negative")
        return 0
    if value > TOKENS_MAX:
        problems.append(f"{name} is above {TOKENS_MAX:,}")
        return TOKENS_MAX
    return int(value)


class WireMeter:
    """Reads one response of `api` (`anthropic` or `openai`); `streamed` when it is SSE."""

    def __init__(self, api: str, *, streamed: bool) -> None:
        self.api = api
        self.streamed = streamed
        self._buffer = bytearray()
        self._skipping = False  # inside an over-long event: drop until its end
        self._fields: dict[str, int] = {}  # raw field → largest value seen
        self._model = ""
        self._seen = False
        self.problems: list[str] = []
        self._too_long = False

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        if not self.streamed:
            if self._too_long:
                return
            if len(self._buffer) + len(chunk) > MAX_JSON_BODY:
                self._too_long = True
                self._buffer.clear()
                self.problems.append("the answer was too long to meter")
                return
            self._buffer += chunk
            return
        self._buffer += chunk
        while True:
            end, sep = _event_end(self._buffer)
            if end < 0:
                if len(self._buffer) > MAX_EVENT:
                    self._skipping = True
                    del self._buffer[: len(self._buffer) - 4]  # keep a possible split separator
                return
            block = bytes(self._buffer[:end])
            del self._buffer[: end + sep]
            if self._skipping:
                self._skipping = False
                continue
            if b'"usage"' in block:  # every event that carries usage names it
                self._event(block)

    def result(self) -> Measured | None:
        """The usage the response reported, or None when it reported none."""
        if not self.streamed and self._buffer and not self._too_long:
            try:
                body = json.loads(bytes(self._buffer))
            except (ValueError, RecursionError):
                body = None
            if isinstance(body, dict):
                self._object(body)
        if not self._seen:
            return None
        problems = self.problems
        f = self._fields
        if self.api == "anthropic":
            reads = f.get("cache_read_input_tokens", 0)
            total_in = f.get("input_tokens", 0) + f.get("cache_creation_input_tokens", 0) + reads
        else:
            reads = f.get("cached_tokens", 0)
            total_in = f.get("input_tokens", 0)
        total_in = min(total_in, 3 * TOKENS_MAX)
        return Measured(total_in, min(reads, total_in), f.get("output_tokens", 0), self._model, problems)

    # --- parsing ---------------------------------------------------------------------------------

    def _event(self, block: bytes) -> None:
        data = b"\n".join(
            line[5:].lstrip(b" ") for line in block.replace(b"\r\n", b"\n").split(b"\n") if line.startswith(b"data:")
        )
        if not data:
            return
        try:
            event = json.loads(data)
        except (ValueError, RecursionError):
            self.problems.append("an event with usage was not JSON")
            return
        if isinstance(event, dict):
            self._object(event)

    def _object(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if self.api == "anthropic":
            if kind == "message_start" and isinstance(event.get("message"), dict):
                message = event["message"]
                self._model_of(message)
                self._usage(message.get("usage"), _ANTHROPIC_FIELDS)
            elif kind == "message_delta" or kind == "message":
                if kind == "message":
                    self._model_of(event)
                self._usage(event.get("usage"), _ANTHROPIC_FIELDS)
            return
        if kind in _USAGE_EVENTS_OPENAI and isinstance(event.get("response"), dict):
            response = event["response"]
            self._model_of(response)
            self._openai(response.get("usage"))
        elif kind == "response" or "usage" in event:  # a JSON response, or a chat completion
            self._model_of(event)
            self._openai(event.get("usage"))

    def _model_of(self, holder: dict[str, Any]) -> None:
        model = holder.get("model")
        if isinstance(model, str) and model:
            self._model = model[:MODEL_MAX]

    def _usage(self, usage: Any, names: tuple[str, ...]) -> None:
        if not isinstance(usage, dict):
            return
        self._seen = True
        for name in names:
            if name in usage:
                value = bounded(usage[name], name, self.problems)
                self._fields[name] = max(self._fields.get(name, 0), value)

    def _openai(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        if "prompt_tokens" in usage or "completion_tokens" in usage:  # Chat Completions
            details = usage.get("prompt_tokens_details")
            usage = {
                "input_tokens": usage.get("prompt_tokens"),
                "output_tokens": usage.get("completion_tokens"),
                "input_tokens_details": details,
            }
        details = usage.get("input_tokens_details")
        flat = {k: usage.get(k) for k in ("input_tokens", "output_tokens") if k in usage}
        if isinstance(details, dict) and "cached_tokens" in details:
            flat["cached_tokens"] = details["cached_tokens"]
        self._usage(flat, ("input_tokens", "output_tokens", "cached_tokens"))


_ANTHROPIC_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def _event_end(buffer: bytearray) -> tuple[int, int]:
    """Where the first complete SSE event ends in `buffer`, and its separator's length (-1, 0)."""
    lf = buffer.find(b"\n\n")
    crlf = buffer.find(b"\r\n\r\n")
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, 4
    if lf >= 0:
        return lf, 2
    return -1, 0
