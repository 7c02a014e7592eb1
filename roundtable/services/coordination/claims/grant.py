"""Granting a claim in its own transactions: the grant, or — when it conflicts — the refused
grant rolled back and its contentions recorded in a second transaction, so the
evidence of contention survives the refusal."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from roundtable import clock
from roundtable.errors import ToolError
from roundtable.services.coordination.claims.acquire import (
    ClaimConflict,
    ClaimRequest,
    Granted,
    acquire_sync,
    check_request,
    record_contentions,
)
from roundtable.store.db import Database, Tx


class Unprepared(Exception):
    """Raised by a claim's `prepare` on the writer's thread when the resource's hash or span is
    not bounded work (a directory, a symbol, a large file): the caller computes it on a worker
    thread and grants again. Nothing was written."""


Prepare = Callable[[ClaimRequest], ClaimRequest]


def _prepare_and_acquire(
    conn: sqlite3.Connection, tx: Tx, request: ClaimRequest, now: str, prepare: Prepare | None
) -> Granted:
    if prepare is not None:  # (it sets the base hash, computed here: nothing a caller sent)
        request = prepare(request)
    return acquire_sync(conn, tx, request, now)


async def grant(db: Database, request: ClaimRequest, *, label: str, prepare: Prepare | None = None) -> Granted:
    """Grant `request` (one write transaction labelled `label`), or record its contentions and
    raise `ToolError` with the first conflict.

    `prepare`, when given, completes the request (its path guard, base hash, span) on the
    writer's thread just before the grant — bounded file work that saves the claim a trip to a
    worker thread; it raises `Unprepared` (passed on, nothing written) when the work is not
    bounded."""
    check_request(request)
    try:  # one write job: it shares a round trip and a COMMIT with the writes queued beside it
        return await db.write_run(_prepare_and_acquire, request, clock.now(), prepare, tool=label)
    except ClaimConflict as conflict:
        async with db.write(tool=label) as tx:
            await record_contentions(tx, conflict.contentions)
        raise ToolError(str(conflict)) from None
