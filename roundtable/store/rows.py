"""Synchronous lookups for code that runs on a connection's own thread.

`Reader.run`, `Tx.run` and `Database.read_call` hand a plain function the `sqlite3.Connection`
(rows are `sqlite3.Row`); these are the record lookups the async `Reader` offers, for it.
"""

from __future__ import annotations

import sqlite3
from typing import Any, TypeVar

from roundtable.errors import NotFound
from roundtable.store.records import RECORD_KINDS, Record

R = TypeVar("R", bound=Record)


def scalar(conn: sqlite3.Connection, sql: str, params: Any = ()) -> Any:
    """The first column of the first row, or None."""
    cursor = conn.execute(sql, params)
    try:
        row = cursor.fetchone()
    finally:
        cursor.close()
    return None if row is None else row[0]


def records(conn: sqlite3.Connection, cls: type[R], sql: str, params: Any = ()) -> list[R]:
    cursor = conn.execute(sql, params)
    try:
        return [cls.from_row(row) for row in cursor.fetchall()]
    finally:
        cursor.close()


def get(conn: sqlite3.Connection, cls: type[R], record_id: str) -> R:
    """The record with this id, or `NotFound` (`get <kind> <id>: not found`), as `Reader.get`."""
    found = records(conn, cls, f"SELECT * FROM {cls.table} WHERE id = ?", (record_id,))
    if not found:
        raise NotFound(RECORD_KINDS.get(cls.table, cls.table), record_id)
    return found[0]
