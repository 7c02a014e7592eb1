"""Run an `Owner` in the foreground until SIGINT/SIGTERM (shared by `start` and `mcp serve`)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from roundtable.owner import Owner


def echo(line: str) -> None:
    click.echo(line)


async def isolation_lines(owner: Owner) -> list[str]:
    """What agents' code will run in here: the sessions' launcher (when this owner hosts the
    supervisor) and the test runs' sandbox — said once at start, loudly when unsandboxed."""
    from roundtable.errors import RoundtableError
    from roundtable.services.testing import test_runs as testing

    lines: list[str] = []
    supervisor = owner.supervisor
    if supervisor is not None:
        try:
            launcher = await supervisor.launcher()
            lines.append(f"agent sessions: {launcher.describe()}")
        except RoundtableError as exc:
            lines.append(f"agent sessions: cannot be launched ({exc})")
    sandbox = await testing.sandbox_for(owner.runtime)
    lines.append(f"test runs: {sandbox.describe()}")
    return lines


async def serve_forever(
    root: Path,
    *,
    chair: bool,
    ready: Callable[[Owner], str],
    stopped_line: str,
    log: Callable[[str], None] = echo,
    chair_interval: float | None = None,
    autopilot: bool | None = None,
    http_address: str | None = None,
    after_ready: Callable[[Owner], Awaitable[None]] | None = None,
    goal: str = "",
) -> None:
    """Enter the owner, print the ready line, run `after_ready` (e.g. create the run of
    `start --goal`), wait for a signal (or HTTP failure), stop cleanly."""
    from roundtable.errors import StoreError
    from roundtable.owner import Owner
    from roundtable.server.http import HttpError

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    failure = ""
    async with Owner(
        root,
        chair=chair,
        log=log,
        chair_interval=chair_interval,
        autopilot=autopilot,
        http_address=http_address,
        goal=goal,
    ) as owner:
        log(ready(owner))
        for line in await isolation_lines(owner):
            log(line)
        for line in owner.preflight_lines:
            log(line)
        if after_ready is not None:
            await after_ready(owner)
        waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(owner.failed.wait())]
        http_task = owner.http.task if owner.http is not None else None
        if http_task is not None:
            waiters.append(asyncio.ensure_future(asyncio.shield(http_task)))
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()
        if http_task is not None and http_task.done() and not stop.is_set():
            exc = None if http_task.cancelled() else http_task.exception()
            failure = f"MCP HTTP server stopped: {type(exc).__name__ if exc else 'exited'}"
        fatal = owner.fatal_error
    log(stopped_line)
    if fatal:
        raise StoreError(fatal)
    if failure:
        raise HttpError(failure)
