"""Granting claims in their own transactions: the grant (of one claim, or of several in one
transaction: all or none), or — when one conflicts — the refused grant rolled back and its
contentions recorded in a second transaction, so the evidence of contention survives the
refusal."""

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
    conn: sqlite3.Connection, tx: Tx, requests: list[ClaimRequest], now: str, prepare: Prepare | None
) -> list[Granted]:
    granted = []
    for request in requests:
        if prepare is not None:  # (it sets the base hash, computed here: nothing a caller sent)
            request = prepare(request)
        granted.append(acquire_sync(conn, tx, request, now))
    return granted


async def grant(db: Database, request: ClaimRequest, *, label: str, prepare: Prepare | None = None) -> Granted:
    """Grant `request` (one write transaction labelled `label`), or record its contentions and
    raise `ToolError` with the first conflict.

    `prepare`, when given, completes the request (its path guard, base hash, span) on the
    writer's thread just before the grant — bounded file work that saves the claim a trip to a
    worker thread; it raises `Unprepared` (passed on, nothing written) when the work is not
    bounded."""
    (granted,) = await grant_all(db, [request], label=label, prepare=prepare)
    return granted


async def grant_all(
    db: Database, requests: list[ClaimRequest], *, label: str, prepare: Prepare | None = None
) -> list[Granted]:
    """Grant every request in one write transaction, in order — or none: the first conflict
    rolls them all back, its contentions are recorded and `ToolError` names it. `prepare` as
    for `grant` (one request it cannot prepare leaves nothing written either)."""
    for request in requests:
        check_request(request)
    try:  # one write job: it shares a round trip and a COMMIT with the writes queued beside it
        return await db.write_run(_prepare_and_acquire, requests, clock.now(), prepare, tool=label)
    except ClaimConflict as conflict:
        async with db.write(tool=label) as tx:
            await record_contentions(tx, conflict.contentions)
        what = str(conflict) if len(requests) == 1 else f"{conflict} (nothing was claimed)"
        raise ToolError(what) from None
