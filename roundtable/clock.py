"""Time and identifiers: RFC 3339 timestamps with nanoseconds and process-monotonic ids, and the
clock the owner's loops wait on.

Every timestamp we write is UTC with exactly nine fractional digits and `Z`, so string order
equals time order. Generated ids are `<PREFIX>-YYYYMMDDTHHMMSS.nnnnnnnnn`; two ids generated in
the same clock tick never collide because the stamp is forced to increase within the process.

The Chair's loop and the autopilot's dispatcher read their periods, backoffs and deadlines from
a `Clock` (`monotonic()` and `sleep()`): `SYSTEM` in every process, a `VirtualClock` in tests,
which moves only when the test says (`advance`) — a test of a 30-second sweep or a retry backoff
then takes no wall time and cannot race the machine's load.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import re
import threading
import time
from datetime import UTC, datetime
from typing import Protocol

_lock = threading.Lock()
_last_ns = 0

ID_PATTERN = re.compile(r"^[A-Za-z0-9_\-][A-Za-z0-9._\-]{0,127}$")
_PLAIN_SECONDS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")


def now_ns() -> int:
    return time.time_ns()


class _SecondText:
    """`strftime` of a Unix second, remembering the last one: most stamps fall in the second
    before them, and `strftime` is most of what a stamp costs. (A tuple swap: thread-safe.)"""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, seconds: int) -> str:
        last = self._last
        if last[0] == seconds:
            return last[1]
        text = datetime.fromtimestamp(seconds, tz=UTC).strftime(self.fmt)
        self._last = (seconds, text)
        return text


_STAMP_SECOND = _SecondText("%Y-%m-%dT%H:%M:%S")
_ID_SECOND = _SecondText("%Y%m%dT%H%M%S")


def format_ns(ns: int) -> str:
    """Format Unix nanoseconds as `2026-01-15T09:30:12.123456789Z`."""
    seconds, frac = divmod(ns, 1_000_000_000)
    return f"{_STAMP_SECOND(seconds)}.{frac:09d}Z"


def now() -> str:
    return format_ns(now_ns())


def parse(stamp: str) -> int:
    """Parse a timestamp we wrote (or any RFC 3339 UTC time) back to Unix nanoseconds."""
    text = stamp.strip()
    if not text:
        raise ValueError("empty timestamp")
    if text.endswith("Z"):
        text = text[:-1]
    frac_ns = 0
    if "." in text:
        text, frac = text.split(".", 1)
        frac_ns = int((frac + "000000000")[:9])
    text = text.replace(" ", "T")
    if _PLAIN_SECONDS.fullmatch(text):  # what we write: the C parser (strptime is ~10x slower)
        dt = datetime.fromisoformat(text).replace(tzinfo=UTC)
    else:
        dt = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + frac_ns


def _next_stamp_ns() -> int:
    global _last_ns
    with _lock:
        ns = now_ns()
        if ns <= _last_ns:
            ns = _last_ns + 1
        _last_ns = ns
        return ns


def new_id(prefix: str) -> str:
    """A new id such as `T-20260115T093012.123456789`, unique within this process."""
    seconds, frac = divmod(_next_stamp_ns(), 1_000_000_000)
    return f"{prefix}-{_ID_SECOND(seconds)}.{frac:09d}"


def is_valid_id(value: str) -> bool:
    """Caller-supplied record ids: 1–128 letters, digits, `.`, `_`, `-`; no leading `.`."""
    return bool(ID_PATTERN.match(value))


class Clock(Protocol):
    """What a loop asks of time: how far it has moved, and waiting for some of it to pass."""

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The machine's monotonic clock and asyncio's sleep."""

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM: Clock = SystemClock()


class VirtualClock:
    """A monotonic clock that moves only by `advance`: `sleep` returns once the clock has been
    advanced past its deadline (a sleep of zero or less yields once and returns). Timestamps
    (`now`) stay the wall clock's: records keep real times."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self._now

    @property
    def sleeping(self) -> int:
        """How many sleeps are waiting for the clock (cancelled ones not counted)."""
        return sum(1 for _, _, waiter in self._sleepers if not waiter.done())

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), waiter))
        await waiter

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds`, waking every sleep whose deadline that reaches (they run
        at the event loop's next turn)."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, waiter = heapq.heappop(self._sleepers)
            if not waiter.done():
                waiter.set_result(None)
