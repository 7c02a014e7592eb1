"""The one reach past aiosqlite's public API: run a plain sync function on a connection's thread.

aiosqlite runs every call on one worker thread per connection, in order, but its public API
offers only statement-shaped calls (`execute`, `executemany`, `execute_fetchall`, `commit`, …).
Some units of work must run whole on that thread, with nothing interleaved and in one round trip:
`BEGIN` with a read's first query, several statements of a write, a statement's row id together
with its row count. `on_thread(conn, fn, *args)` queues `fn(sqlite3_connection, *args)` there —
a plain synchronous function of the connection, as datasette's `execute_fn(fn)` — and returns
its result (or raises its exception) on the event loop.

It uses `Connection._execute` and `Connection._conn`, which aiosqlite keeps private. The version
this was checked against is `CHECKED_AIOSQLITE`; `tests/store/test_thread_contract.py` pins both
attributes and their behaviour against the installed aiosqlite, so an upgrade that changes them
fails there, not in production.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

import aiosqlite

CHECKED_AIOSQLITE = "0.22.1"

T = TypeVar("T")
P = ParamSpec("P")


async def on_thread(
    conn: aiosqlite.Connection,
    fn: Callable[Concatenate[sqlite3.Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """`fn(raw, *args, **kwargs)` on `conn`'s worker thread, after everything already queued on
    it and before anything queued later; one round trip. `raw` is the `sqlite3.Connection`."""
    result: T = await conn._execute(fn, conn._conn, *args, **kwargs)
    return result
