"""The one reach past aiosqlite's public API: run a plain sync function on a connection's thread.

aiosqlite runs every call on one worker thread per connection, in order, but its public API
offers only statement-shaped calls (`execute`, `executemany`, `execute_fetchall`, `commit`, …).
Some units of work must run whole on that thread, with nothing interleaved and in one round trip:
`BEGIN` with a read's first query, several statements of a write, a statement's row id together
with its row count. `on_thread(conn, fn, *args)` queues `fn(sqlite3_connection, *args)` there —
a plain synchronous function of the connection, as datasette's `execute_fn(fn)` — and returns
its result (or raises its exception) on the event loop. `submit` queues it the same way but at
once, before the caller's next statement, and hands back the future of its result: the writer
queues its COMMIT so, and passes the write lock on without waiting for it.

It uses `Connection._tx` (the worker's queue of `(future, function)` items),
`Connection._running` and `Connection._conn` (the `sqlite3.Connection`), which aiosqlite keeps
private: `submit` does what `Connection._execute` does, without awaiting. The version this was
checked against is `CHECKED_AIOSQLITE`; `tests/store/test_thread_contract.py` pins those
attributes and their behaviour against the installed aiosqlite, so an upgrade that changes them
fails there, not in production.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import aiosqlite

CHECKED_AIOSQLITE = "0.22.1"

T = TypeVar("T")
P = ParamSpec("P")


def submit(
    conn: aiosqlite.Connection,
    fn: Callable[Concatenate[sqlite3.Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> asyncio.Future[T]:
    """Queue `fn(raw, *args, **kwargs)` on `conn`'s worker thread now — after everything already
    queued on it, before anything queued later — and return the future of its result (set on
    the event loop, in queue order). Raises `ValueError` when the connection is closed."""
    if not conn._running:
        raise ValueError("Connection closed")
    raw = conn._conn  # raises ValueError itself when the connection was never opened or is gone
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    conn._tx.put_nowait((future, functools.partial(fn, raw, *args, **kwargs)))
    return future


async def on_thread(
    conn: aiosqlite.Connection,
    fn: Callable[Concatenate[sqlite3.Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """`fn(raw, *args, **kwargs)` on `conn`'s worker thread, after everything already queued on
    it and before anything queued later; one round trip. `raw` is the `sqlite3.Connection`."""
    return await submit(conn, fn, *args, **kwargs)
