"""The bench's loop-lag probe sees a blocked event loop (and a free one as free)."""

from __future__ import annotations

import asyncio
import time

import pytest

from bench.looplag import LoopLag

pytestmark = pytest.mark.anyio


async def test_the_probe_reports_a_blocked_loop() -> None:
    async with LoopLag() as lag:
        await asyncio.sleep(0.05)
        time.sleep(0.2)  # noqa: ASYNC251 - blocks the loop on purpose: the next wake-up is ~190 ms late
        await asyncio.sleep(0.05)
    assert lag.max_ms >= 150
    assert lag.p99_ms <= lag.max_ms and len(lag.samples_ms) >= 2
