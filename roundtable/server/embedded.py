"""uvicorn embedded in the owner: start on bound sockets, wait until listening, stop gracefully.

Both HTTP servers of an owner — the shared MCP endpoint and each capability session's endpoint —
run uvicorn as a task on the owner's event loop. The owner handles signals (uvicorn installs
none here); start-up is awaited on an event uvicorn's start-up sets, not polled, and a start-up
failure (a TLS key pair that does not load, an application lifespan that fails) is an
`EmbeddedStartError` naming what failed, never a `SystemExit` out of the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn

log = logging.getLogger("roundtable.server.embedded")


class EmbeddedStartError(Exception):
    """uvicorn did not start: `stage` is `load` (configuration, TLS) or `serve`; `reason` the
    exception type (never its text, which may name a key file's contents)."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


class _Server(uvicorn.Server):
    """uvicorn without signal handlers, with an event set once it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.listening.set()


class Embedded:
    """One uvicorn server on sockets the caller bound; `start()`, then `stop()`."""

    def __init__(self, config: uvicorn.Config, *, name: str) -> None:
        self.config = config
        self.name = name
        self.server: _Server | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self, sockets: list[socket.socket], *, timeout: float | None = None) -> None:
        """Serve on `sockets` and return once listening; `EmbeddedStartError` otherwise (the
        sockets are closed then)."""
        try:
            self.config.load()  # TLS and the protocol classes: fail here, not inside the task
        except Exception as exc:
            _close(sockets)
            raise EmbeddedStartError("load", type(exc).__name__) from None
        server = self.server = _Server(self.config)
        self.task = asyncio.create_task(self._serve(server, sockets), name=self.name)
        listening = asyncio.ensure_future(server.listening.wait())
        try:
            await asyncio.wait({listening, self.task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            listening.cancel()
        if server.listening.is_set():
            return
        reason = "timeout"
        if self.task.done():
            failure = None if self.task.cancelled() else self.task.exception()
            reason = type(failure).__name__ if failure is not None else "stopped"
        else:
            server.should_exit = server.force_exit = True
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task
        _close(sockets)
        raise EmbeddedStartError("serve", reason)

    @staticmethod
    async def _serve(server: _Server, sockets: list[socket.socket]) -> None:
        try:
            await server.serve(sockets=sockets)
        except SystemExit:  # uvicorn's answer to a failed application start-up
            raise RuntimeError("application start-up failed") from None

    async def stop(self, timeout: float = 5.0) -> None:
        """Ask uvicorn to finish (open connections get its graceful shutdown); after `timeout`
        seconds force it and cancel the task. Idempotent."""
        server, task = self.server, self.task
        if server is None or task is None:
            return
        server.should_exit = True
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            server.force_exit = True
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled() and task.exception() is not None:
            log.error("%s stopped with an error: %s", self.name, type(task.exception()).__name__)


def _close(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.close()
