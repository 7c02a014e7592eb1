"""Timestamps and ids: formatting, parsing back, and the per-second cache staying exact; the
clocks the loops wait on (the system's, and the virtual one tests advance)."""

from __future__ import annotations

import pytest

from roundtable import clock


def test_a_stamp_parses_back_to_its_nanoseconds_across_second_boundaries() -> None:
    base = 1_796_160_807 * 1_000_000_000
    for ns in (base + 999_999_999, base + 1_000_000_000, base + 1_000_000_001, base - 1, base + 86_400 * 10**9):
        stamp = clock.format_ns(ns)
        assert stamp.endswith("Z") and len(stamp) == 30
        assert clock.parse(stamp) == ns
    assert clock.format_ns(base) == "2026-12-01T21:33:27.000000000Z"
    assert clock.format_ns(base + 10**9) == "2026-12-01T21:33:28.000000000Z"


def test_parse_takes_any_rfc3339_utc_time_and_refuses_others() -> None:
    assert clock.parse("2026-01-15T09:30:12Z") == 1_768_469_412 * 10**9
    assert clock.parse("2026-01-15 09:30:12.5") == 1_768_469_412 * 10**9 + 500_000_000
    assert clock.parse("2026-1-5T9:3:2Z") == clock.parse("2026-01-05T09:03:02Z")  # the lenient form
    for bad in ("", "yesterday", "2026-13-01T00:00:00Z", "2026-01-15T25:00:00Z"):
        with pytest.raises(ValueError):
            clock.parse(bad)


def test_ids_are_unique_and_increasing_within_a_second() -> None:
    ids = [clock.new_id("T") for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids)
    assert all(i.startswith("T-") and len(i) == len("T-20260115T093012.123456789") for i in ids)


@pytest.mark.anyio
async def test_a_virtual_clock_moves_only_when_advanced_and_wakes_sleeps_in_deadline_order() -> None:
    import asyncio

    virtual = clock.VirtualClock(start=100.0)
    woke: list[str] = []

    async def nap(name: str, seconds: float) -> None:
        await virtual.sleep(seconds)
        woke.append(f"{name}@{virtual.monotonic():g}")

    tasks = [asyncio.create_task(nap("long", 30)), asyncio.create_task(nap("short", 5))]
    for _ in range(5):
        await asyncio.sleep(0)
    assert virtual.sleeping == 2 and woke == [] and virtual.monotonic() == 100.0
    virtual.advance(4.9)
    for _ in range(5):
        await asyncio.sleep(0)
    assert woke == []  # 4.9 s is not 5
    virtual.advance(0.1)
    await tasks[1]
    assert woke == ["short@105"] and virtual.sleeping == 1
    virtual.advance(60)
    await tasks[0]
    assert woke == ["short@105", "long@165"] and virtual.sleeping == 0
    await asyncio.wait_for(virtual.sleep(0), 1)  # no time to wait: returns at once
    with pytest.raises(ValueError):
        virtual.advance(-1)


@pytest.mark.anyio
async def test_a_cancelled_virtual_sleep_is_no_longer_counted() -> None:
    import asyncio

    virtual = clock.VirtualClock()
    task = asyncio.create_task(virtual.sleep(10))
    await asyncio.sleep(0)
    assert virtual.sleeping == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert virtual.sleeping == 0
    virtual.advance(20)  # the cancelled sleep's deadline passes harmlessly


def test_the_system_clock_is_the_machine_s_monotonic_clock() -> None:
    import time

    before = time.monotonic()
    assert before <= clock.SYSTEM.monotonic() <= time.monotonic()
