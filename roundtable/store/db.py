"""Connections and transactions over one SQLite file, through aiosqlite.

- One writer connection. `Database.write()` takes the writer's lock and opens `BEGIN IMMEDIATE`,
  so a transaction's statements never interleave with another coroutine's, and the SQLite write
  lock is held from the first statement (serialising writers in other processes too). Its
  COMMIT is queued on the writer's thread before the lock passes on, and awaited after: the
  next writer's statements run right behind it on that thread, instead of waiting for the
  COMMIT's answer to come back through a busy event loop first.
- A small pool of reader connections. `Database.read()` opens one read transaction, so every
  query inside it sees one instant.
- Every connection: WAL, `synchronous=NORMAL`, `foreign_keys=ON`, `busy_timeout`.
- Events appended inside a write transaction are published on the change bus only after the
  commit succeeds; a rolled-back transaction publishes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import aiosqlite

from roundtable import clock
from roundtable.bus import Change, ChangeBus
from roundtable.errors import NotFound, StoreError
from roundtable.store.lock import WriteLock
from roundtable.store.records import RECORD_KINDS, Event, Record
from roundtable.store.schema import MIGRATIONS, SCHEMA_VERSION
from roundtable.store.thread import on_thread, submit
from roundtable.store.watch import CommitWatch, DataVersion, publish_external_commits

R = TypeVar("R", bound=Record)
T = TypeVar("T")
log = logging.getLogger("roundtable.store")
Params = Sequence[Any] | dict[str, Any]

BUSY_TIMEOUT_MS = 5000
COMMIT_POLL_S = 0.25  # how often other processes' commits are looked for (`watch_commits`)
PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA foreign_keys = ON",
)  # and `PRAGMA busy_timeout`, per connection (`_connect`)


async def _connect(
    path: Path, *, create: bool = True, read_only: bool = False, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> aiosqlite.Connection:
    """Open a connection with our pragmas. `create=False` (readers) never creates the file: a
    read while the database is missing must fail, not leave an empty database behind.
    `read_only=True` opens it with `mode=ro` (the read-only console's readers)."""
    uri = read_only or not create
    target = f"file:{quote(str(path))}?mode={'ro' if read_only else 'rw'}" if uri else str(path)
    try:
        conn = await aiosqlite.connect(target, isolation_level=None, uri=uri)
    except sqlite3.Error as exc:
        raise StoreError(f"open database {path}: {exc}") from None
    conn.row_factory = sqlite3.Row
    try:
        for statement in (f"PRAGMA busy_timeout = {int(busy_timeout_ms)}", *PRAGMAS):
            try:
                await conn.execute(statement)
            except sqlite3.Error as exc:
                raise StoreError(f'apply pragma "{statement}": {exc}') from None
    except BaseException:
        # Failed or cancelled half open: end the connection's worker thread now. aiosqlite's
        # thread is not a daemon, and one left waiting keeps the process from exiting.
        conn.stop()
        raise
    return conn


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of `path`, or None when nothing is there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def _file_problem(path: Path, identity: tuple[int, int] | None) -> str:
    """Why `path` no longer names the file whose (device, inode) is `identity` ('' while it does;
    always '' for an in-memory database, whose identity is None)."""
    if identity is None:
        return ""
    try:
        now = _file_identity(path)
    except OSError as exc:
        return f"the database file {path} cannot be checked: {exc.strerror}"
    if now is None:
        return f"the database file {path} was removed while this process had it open"
    if now != identity:
        return f"the database file {path} was replaced while this process had it open"
    return ""


def _refusal(problem: str) -> StoreError:
    return StoreError(f"{problem}; refusing to write (restart the owner)")


def _create_private_file(path: Path) -> None:
    """Create the database file with mode 0600 before SQLite does (it would use 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)


def _run_statement(conn: sqlite3.Connection, sql: str, params: Params) -> int:
    """Runs on the connection's worker thread: one statement, its rowid or row count."""
    cursor = conn.execute(sql, params)
    try:
        if sql.lstrip()[:6].upper() == "INSERT":
            return cursor.lastrowid or 0
        return cursor.rowcount
    finally:
        cursor.close()


class _Queries:
    """Query helpers shared by readers and write transactions.

    Each helper is a single round trip to aiosqlite's worker thread (execute, fetch and close
    together): a hop costs 50-100 µs here, several times the SQLite work of a small query.
    """

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(connection, *args)` on the connection's worker thread: any number of statements
        for one round trip. `fn` is synchronous code over the `sqlite3.Connection` (rows are
        `sqlite3.Row`); it must not commit, roll back or begin — the transaction is ours."""
        return await on_thread(self.conn, fn, *args)

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return list(await self.conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def one(self, cls: type[R], sql: str, params: Params = ()) -> R | None:
        row = await self.fetchone(sql, params)
        return None if row is None else cls.from_row(row)

    async def all(self, cls: type[R], sql: str, params: Params = ()) -> list[R]:
        return [cls.from_row(r) for r in await self.fetchall(sql, params)]

    async def get(self, cls: type[R], record_id: str) -> R:
        """The record with this id, or `NotFound` (`get <kind> <id>: not found`)."""
        record = await self.one(cls, f"SELECT * FROM {cls.table} WHERE id = ?", (record_id,))
        if record is None:
            raise NotFound(RECORD_KINDS.get(cls.table, cls.table), record_id)
        return record


def _in_snapshot(conn: sqlite3.Connection, fn: Callable[..., T], args: tuple[Any, ...], end: bool) -> T:
    """On a reader's thread: open a read transaction and run `fn(conn, *args)` in it, in one round
    trip; `end` closes the snapshot in the same trip (`Database.read_call`), else it stays open for
    the reader's next queries. A transaction left open by an earlier, cancelled reader is ended
    first: this runs in the connection's own queue, so nothing can interleave with the check."""
    if conn.in_transaction:
        conn.execute("COMMIT")
    conn.execute("BEGIN")
    if not end:
        return fn(conn, *args)
    try:
        return fn(conn, *args)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


class Reader(_Queries):
    """A read transaction: every query sees the same snapshot.

    The transaction opens lazily with the first query, in the same worker-thread round trip, and
    ends without waiting (see `Database.read`): a one-query read costs one hop instead of three.
    """

    def __init__(self, conn: aiosqlite.Connection) -> None:
        super().__init__(conn)
        self.begun = False

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        if self.begun:
            return await super().fetchall(sql, params)
        self.begun = True
        return await on_thread(self.conn, _in_snapshot, _fetch, (sql, params), False)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if self.begun:
            return await super().run(fn, *args)
        self.begun = True
        return await on_thread(self.conn, _in_snapshot, fn, args, False)


_INSERT_EVENT = (
    "INSERT INTO events (run_id, type, actor_id, task_id, payload_json, created_at, principal, transport)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


# Who the current task acts for, as (principal, transport): `Runtime.call` sets it around a tool's
# handler so that transactions the handler opens itself (tools that manage their own) stamp the
# caller's principal on their events too, not `internal`.
ACTING: ContextVar[tuple[str, str]] = ContextVar("roundtable_acting", default=("", ""))


def _begin_write(conn: sqlite3.Connection, tx: Tx, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
    """A write transaction's first round trip: `BEGIN IMMEDIATE`, then `fn(conn, *args)`. It notes
    the connection's change count first, so the COMMIT can tell whether anything was written."""
    if conn.in_transaction:  # defensive: left open by nobody we know of
        conn.execute("ROLLBACK").close()
    tx.changes_before = conn.total_changes
    busy_ms = tx.busy_timeout_ms
    try:
        conn.execute("BEGIN IMMEDIATE").close()
    except sqlite3.OperationalError as exc:
        raise _busy_or_store_error(exc, busy_ms) from None
    return fn(conn, *args)


def _fetch(conn: sqlite3.Connection, sql: str, params: Params) -> list[sqlite3.Row]:
    cursor = conn.execute(sql, params)
    try:
        return cursor.fetchall()
    finally:
        cursor.close()


def _run_many(conn: sqlite3.Connection, sql: str, rows: list[Params]) -> None:
    conn.executemany(sql, rows).close()


_LOST_INSIDE = "the write transaction was rolled back by an error inside it"


def _commit_write(conn: sqlite3.Connection, changes_before: int) -> bool:
    """COMMIT the writer's transaction (on its thread); whether it changed anything. A failed
    COMMIT is rolled back here, so the next writer queued behind it finds the connection clean."""
    if not conn.in_transaction:
        # SQLite ended the transaction under this writer (some errors roll it back whole, and
        # the writer went on): nothing of it is left.
        raise StoreError(f"{_LOST_INSIDE}; nothing was written — retry")
    try:
        conn.execute("COMMIT").close()
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK").close()
        raise StoreError(f"commit failed: {exc}; nothing of this call was written") from None
    return conn.total_changes != changes_before


def _rollback_open(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK").close()


class Tx(_Queries):
    """A write transaction (`BEGIN IMMEDIATE`). Collects events to publish after commit.

    Every statement goes through `_hop`, so `BEGIN IMMEDIATE` rides on the first one's round
    trip; a writer that runs no statement opens nothing."""

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        principal: str = "",
        transport: str = "",
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        super().__init__(conn)
        self.events: list[dict[str, Any]] = []
        self.tables: set[str] = set()
        # Who this transaction acts for: stamped on every event it appends.
        self.principal = principal
        self.transport = transport
        self.entered = False  # BEGIN IMMEDIATE was sent
        self.busy_timeout_ms = busy_timeout_ms
        self.changes_before = 0  # the connection's change count as the transaction began

    async def _hop(self, fn: Callable[..., T], *args: Any) -> T:
        if self.entered:
            return await on_thread(self.conn, fn, *args)
        self.entered = True
        return await on_thread(self.conn, _begin_write, self, fn, args)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._hop(fn, *args)

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        return await self._hop(_fetch, sql, params)

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the new row's id for an INSERT, else the row count."""
        # The row id and the row count are read with the statement: one round trip.
        return await self._hop(_run_statement, sql, params)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self._hop(_run_many, sql, list(rows))

    async def insert(self, table: str, values: dict[str, Any]) -> int:
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self.tables.add(table)
        return await self.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(values.values()))

    async def update(self, table: str, key: dict[str, Any], values: dict[str, Any]) -> int:
        sets = ", ".join(f"{c} = ?" for c in values)
        where = " AND ".join(f"{c} = ?" for c in key)
        self.tables.add(table)
        return await self.execute(f"UPDATE {table} SET {sets} WHERE {where}", [*values.values(), *key.values()])

    def _event(
        self, run_id: str, type: str, payload: dict[str, Any], actor_id: str, task_id: str
    ) -> tuple[str, tuple[Any, ...], Callable[[int], Event]]:
        """The INSERT for one event, and the `Event` it stores once its id is known."""
        created_at = clock.now()
        payload_json = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        params = (
            run_id,
            type,
            actor_id or None,
            task_id or None,
            payload_json,
            created_at,
            self.principal or None,
            self.transport or None,
        )

        def stored(event_id: int) -> Event:
            return Event(
                id=event_id,
                run_id=run_id,
                type=type,
                actor_id=actor_id,
                task_id=task_id,
                payload_json=payload_json,
                created_at=created_at,
                principal=self.principal,
                transport=self.transport,
            )

        return _INSERT_EVENT, params, stored

    def _record(self, event: Event) -> Event:
        self.events.append(event.to_dict())
        self.tables.add("events")
        return event

    async def append_event(
        self,
        run_id: str,
        type: str,
        payload: dict[str, Any],
        *,
        actor_id: str = "",
        task_id: str = "",
    ) -> Event:
        """Append one event inside this transaction; it is published only if the commit succeeds."""
        sql, params, stored = self._event(run_id, type, payload, actor_id, task_id)
        event_id = await self.execute(sql, params)
        return self._record(stored(event_id))

    def emit(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        type: str,
        payload: dict[str, Any],
        *,
        actor_id: str = "",
        task_id: str = "",
    ) -> Event:
        """`append_event` for code running on the writer's thread inside `Tx.run` (synchronous):
        the event is inserted on `conn` and published only if the commit succeeds."""
        sql, params, stored = self._event(run_id, type, payload, actor_id, task_id)
        cursor = conn.execute(sql, params)
        try:
            event_id = cursor.lastrowid or 0
        finally:
            cursor.close()
        return self._record(stored(event_id))


class DatabaseBusy(StoreError):
    """Another process held the database's write lock for longer than the busy timeout."""


def _busy_or_store_error(exc: sqlite3.OperationalError, busy_timeout_ms: int) -> StoreError:
    """The one-line refusal for a transaction that could not begin."""
    # SQLite's own code, not its words (`sqlite_errorcode` is the extended code: its low byte the primary one).
    if exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return DatabaseBusy(
            f"the database is busy: another process held its write lock for over {busy_timeout_ms / 1000:g} s; "
            "nothing was written — retry, or send the call through the running owner (roundtable mcp call --socket)"
        )
    return StoreError(f"begin a write transaction: {exc}")


async def _complete(awaitable: Awaitable[T]) -> T:
    """Await `awaitable` to its end even if the caller is cancelled meanwhile (the cancellation
    is re-raised afterwards): a transaction's end is never left half done."""
    future = asyncio.ensure_future(awaitable)
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True
    result = future.result()
    if cancelled:
        raise asyncio.CancelledError
    return result


class Database:
    """The store: one writer connection, a pool of readers, and the change bus."""

    def __init__(
        self,
        path: Path,
        writer: aiosqlite.Connection,
        bus: ChangeBus,
        readers: int,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.bus = bus
        self._writer = writer
        self._write_lock = WriteLock()
        self.commits = 0  # COMMITs issued
        self._committing = 0  # COMMITs queued whose changes are not yet published
        self._reader_limit = readers
        self._readers: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._reader_count = 0
        self._all_readers: list[aiosqlite.Connection] = []
        self._pending: set[asyncio.Future[Any]] = set()
        self._closed = False
        self.read_only = False
        self._commit_watch: asyncio.Task[None] | None = None
        self._watch: CommitWatch | None = None
        # The file this object opened: a write is refused once the path names another file (or
        # none) — it would go to the unlinked file and be lost.
        self._abspath = Path(os.path.abspath(path))
        self._identity = _file_identity(self._abspath)
        self.data_version = DataVersion(self._abspath)  # "did anyone commit?" (`store/watch.py`)

    def file_problem(self) -> str:
        """Why the database path no longer names the file this object opened ('' while it does)."""
        return _file_problem(self._abspath, self._identity)

    @classmethod
    async def open(
        cls,
        path: Path | str,
        *,
        bus: ChangeBus | None = None,
        readers: int = 4,
        read_only: bool = False,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> Database:
        """Open (creating if needed, mode 0600) and migrate the database at `path`.

        `busy_timeout_ms` bounds how long a write waits for another process's write lock before
        it is refused with `DatabaseBusy` (a one-shot CLI process waits longer than an owner).

        `read_only=True` opens an existing, up-to-date file through SQLite's `mode=ro` and
        creates, migrates and writes nothing: `write()` then refuses (the read-only console)."""
        path = Path(path)
        if read_only:
            return await cls._open_read_only(path, bus=bus, readers=readers)
        try:
            _create_private_file(path)
        except OSError as exc:
            raise StoreError(f"open database {path}: {exc.strerror}") from None
        writer = await _connect(path, busy_timeout_ms=busy_timeout_ms)
        try:
            await migrate(writer)
        except BaseException:
            await writer.close()
            raise
        return cls(path, writer, bus or ChangeBus(), readers, busy_timeout_ms)

    @classmethod
    async def _open_read_only(cls, path: Path, *, bus: ChangeBus | None, readers: int) -> Database:
        if not await asyncio.to_thread(path.is_file):
            raise StoreError(f"no database at {path}: nothing to show read-only (start the owner once first)")
        try:
            writer = await aiosqlite.connect(f"file:{quote(str(path))}?mode=ro", isolation_level=None, uri=True)
        except sqlite3.Error as exc:
            raise StoreError(f"open database {path}: {exc}") from None
        writer.row_factory = sqlite3.Row
        try:
            await writer.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            async with writer.execute("PRAGMA user_version") as cursor:
                row = await cursor.fetchone()
            found = int(row[0]) if row else 0
        except sqlite3.Error as exc:
            await writer.close()
            raise StoreError(f"open database {path}: {exc}") from None
        if found != SCHEMA_VERSION:
            await writer.close()
            raise StoreError(
                f"database schema version {found} differs from this roundtable's ({SCHEMA_VERSION}); "
                "open it once with a writable owner (roundtable start) before a read-only console"
            )
        db = cls(path, writer, bus or ChangeBus(), readers)
        db.read_only = True
        return db

    def watch_commits(self, interval: float = COMMIT_POLL_S) -> None:
        """Announce other processes' commits on the change bus (`store/watch.py`); idempotent.
        Owners and the read-only console start it; a one-shot CLI command needs none."""
        if self._commit_watch is None and not self._closed:
            self._watch = CommitWatch(self.path)
            watcher = publish_external_commits(
                self._watch, self.bus, interval, self.file_problem, lambda: self._committing > 0
            )
            self._commit_watch = asyncio.create_task(watcher, name="roundtable-commit-watch")

    @property
    def commit_polls(self) -> int:
        """How many times the commit watch has asked whether anything changed (0: not started,
        or not yet taken its baseline)."""
        return self._watch.asked if self._watch is not None else 0

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._commit_watch is not None:
            self._commit_watch.cancel()
            with contextlib.suppress(asyncio.CancelledError, StoreError, sqlite3.Error):
                await self._commit_watch
        async with self._locked():
            if self._pending:
                await asyncio.gather(*self._pending, return_exceptions=True)
            for conn in self._all_readers:
                await conn.close()
            self.data_version.close()
            await self._writer.close()

    @asynccontextmanager
    async def _locked(self, urgent: bool = False) -> AsyncIterator[None]:
        await self._write_lock.acquire(urgent=urgent)
        try:
            yield
        finally:
            self._write_lock.release()

    @asynccontextmanager
    async def write(
        self, *, tool: str = "", principal: str = "", transport: str = "", urgent: bool = False
    ) -> AsyncIterator[Tx]:
        """One write transaction: commit on success, roll back on any exception. `principal` and
        `transport` name who the transaction acts for; every event it appends records them.
        `urgent` goes before the ordinary writers already waiting (short Chair transactions).
        Its events are published on the change bus only once the COMMIT succeeded; a failed
        COMMIT raises `StoreError` and publishes nothing. The COMMIT is queued before the lock
        passes on and awaited after it (`_queue_commit`)."""
        self._check_writable(tool)
        committed: asyncio.Future[bool] | None = None
        async with self._locked(urgent):
            problem = self.file_problem()  # a write to an unlinked file would be lost
            if problem:
                raise _refusal(problem)
            acting = ACTING.get()
            tx = Tx(
                self._writer,
                principal=principal or acting[0] or "internal",
                transport=transport or acting[1] or "internal",
                busy_timeout_ms=self.busy_timeout_ms,
            )
            try:
                yield tx
            except BaseException:
                # On the thread, in its queue: after a cancelled writer's statement still on its way.
                await _complete(on_thread(self._writer, _rollback_open))
                raise
            if tx.entered:
                committed = self._queue_commit(tool, tx)
        if committed is not None:
            await _complete(committed)

    def _queue_commit(self, tool: str, tx: Tx) -> asyncio.Future[bool]:
        """Queue `tx`'s COMMIT on the writer's thread now, while the lock is still held: whatever
        the next holder sends runs after it there. Under load the lock is the queue every write
        waits in, and each answer that must come back through the event loop before it passes on
        (one loop turn, milliseconds while fifty agents' requests are being served) is time every
        writer behind it waits too. Its changes are announced from the future's first callback,
        so in commit order (the thread answers in queue order) and before the writer resumes."""
        try:
            committed = submit(self._writer, _commit_write, tx.changes_before)
        except ValueError as exc:  # the connection is closed
            raise StoreError(f"commit failed: {exc}; nothing of this call was written") from None
        self._committing += 1

        def announce(done: asyncio.Future[bool]) -> None:
            self._committing -= 1
            if done.cancelled() or done.exception() is not None:
                return
            self.commits += 1
            if done.result() or tx.events:
                self.bus.publish(Change(tool=tool, events=tuple(tx.events), tables=frozenset(tx.tables)))

        committed.add_done_callback(announce)
        return committed

    def _check_writable(self, tool: str) -> None:
        """Refuse a write to a closed or read-only database. (Whether the file is still the one
        opened is checked once per transaction, where it begins.)"""
        if self._closed:
            raise StoreError("database is closed")
        if self.read_only:
            raise StoreError(f"read-only: {tool or 'this action'} would write to the database")

    async def write_run(
        self,
        fn: Callable[..., T],
        *args: Any,
        tool: str = "",
        principal: str = "",
        transport: str = "",
        urgent: bool = False,
    ) -> T:
        """One write whose whole work is `fn(conn, tx, *args)`: a synchronous function of the
        `sqlite3.Connection` and of its `Tx` (events through `tx.emit`), run on the writer's
        thread in one round trip; its exception leaves nothing. Returns its value once committed."""
        async with self.write(tool=tool, principal=principal, transport=transport, urgent=urgent) as tx:
            result: T = await tx.run(fn, tx, *args)
        return result

    async def _acquire_reader(self) -> aiosqlite.Connection:
        if self._readers.empty() and self._reader_count < self._reader_limit:
            self._reader_count += 1
            try:
                conn = await _connect(self.path, create=False, read_only=self.read_only)
            except BaseException:
                self._reader_count -= 1
                raise
            if self._closed:  # closed while this reader was opening: it would outlive the database
                conn.stop()
                raise StoreError("database is closed")
            self._all_readers.append(conn)
            return conn
        return await self._readers.get()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Reader]:
        """One read transaction on a pooled connection: a consistent snapshot."""
        if self._closed:
            raise StoreError("database is closed")
        conn = await self._acquire_reader()
        reader = Reader(conn)
        try:
            yield reader
        finally:
            if reader.begun:
                # End the snapshot without waiting: the connection's queue is ordered, so the
                # next user of this connection runs after the COMMIT (and `_begin_and_fetch`
                # ends any transaction still open, e.g. after a cancelled reader). `commit()`
                # is a no-op outside a transaction.
                task = asyncio.ensure_future(conn.commit())
                self._pending.add(task)
                task.add_done_callback(self._finish_end_read)
            self._readers.put_nowait(conn)

    async def read_call(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(connection, *args)`, a plain synchronous function of the `sqlite3.Connection`,
        inside one snapshot that is opened and closed in the same hop on a pooled reader's
        thread: a point read in one round trip (`read()` takes two: its snapshot ends after)."""
        if self._closed:
            raise StoreError("database is closed")
        conn = await self._acquire_reader()
        try:
            return await on_thread(conn, _in_snapshot, fn, args, True)
        finally:
            self._readers.put_nowait(conn)

    def _finish_end_read(self, task: asyncio.Future[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("ending a read transaction failed: %s", task.exception())


async def migrate(conn: aiosqlite.Connection) -> int:
    """Bring the schema to `SCHEMA_VERSION` in one transaction; returns the version found."""
    async with conn.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    found = int(row[0]) if row else 0
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {found} is newer than this roundtable supports "
            f"({SCHEMA_VERSION}); upgrade roundtable"
        )
    if found == SCHEMA_VERSION:
        return found
    await conn.execute("BEGIN IMMEDIATE")
    try:
        async with conn.execute("PRAGMA user_version") as cursor:
            row = await cursor.fetchone()
        current = int(row[0]) if row else 0
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[version - 1]:
                await conn.execute(statement)
            await conn.execute(f"PRAGMA user_version = {version}")
    except sqlite3.Error as exc:
        await conn.execute("ROLLBACK")
        raise StoreError(f"migrate statement failed: {exc}") from None
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
    await conn.execute("COMMIT")
    return found
