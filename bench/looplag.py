"""A loop-lag probe: how late the event loop wakes a task that sleeps 10 ms at a time.

`async with LoopLag() as lag:` runs the probe beside whatever the block awaits; afterwards
`lag.max_ms` and `lag.p99_ms` say how long the loop was kept from running it (the lateness of
each wake-up past its 10 ms). A loop never blocked for long shows a few milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

INTERVAL_S = 0.01


class LoopLag:
    """Samples the lateness of `asyncio.sleep(INTERVAL_S)` wake-ups while the block runs."""

    def __init__(self) -> None:
        self.samples_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _probe(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(INTERVAL_S)
            self.samples_ms.append(max(0.0, (time.perf_counter() - started - INTERVAL_S) * 1000))

    async def __aenter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._probe())
        await asyncio.sleep(0)  # let the probe take its first sample's start time
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    @property
    def max_ms(self) -> float:
        return max(self.samples_ms, default=0.0)

    @property
    def p99_ms(self) -> float:
        if not self.samples_ms:
            return 0.0
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def rows_from_file(benchmark: str, path: Path, what: str) -> list[dict[str, object]]:
    """The two rows (p99, max) of a lag file a subprocess wrote (`bench.floors.owner_echo`)."""
    from bench.rows import row

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return [row(benchmark, f"{what} loop lag", "not recorded", "", "the owner wrote no lag file")]
    note = f"lateness of 10 ms sleeps in the owner's loop, {data['samples']} wake-ups over the module"
    out = [
        row(benchmark, f"{what} loop lag p99", float(data["p99_ms"]), "ms", note),
        row(benchmark, f"{what} loop lag max", float(data["max_ms"]), "ms", note),
    ]
    return out


class _Probing(asyncio.DefaultEventLoopPolicy):
    """An event loop policy whose every new loop runs a probe (`asyncio.run` asks the policy)."""

    def __init__(self, samples: list[float]) -> None:
        super().__init__()
        self._samples = samples

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        probe = LoopLag()
        probe.samples_ms = self._samples  # every loop of the module adds to one list

        def start() -> None:
            probe._task = loop.create_task(probe._probe())

        loop.call_soon(start)
        return loop


@contextlib.contextmanager
def probing_every_loop() -> Iterator[LoopLag]:
    """While the block runs, every event loop the process creates carries a probe; the yielded
    `LoopLag` holds their samples together (its `p99_ms`/`max_ms` are the module's)."""
    summary = LoopLag()
    before = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(_Probing(summary.samples_ms))
    try:
        yield summary
    finally:
        asyncio.set_event_loop_policy(before)
