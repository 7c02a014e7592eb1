"""Answers of point reads remembered until the next commit by anyone.

A point read (`Database.read_point`: one primary-key lookup such as `task.get`) cannot change
its answer between two commits. `PointCache` keeps the answers it was handed, keyed by the
read's function and arguments, for as long as SQLite's `PRAGMA data_version` on one dedicated
read-only connection stays the same. That number changes whenever any other connection
commits — this process's writer, the CLI in direct mode, another process — so the first read
after any commit reads the database again, and every answer is one the database gave since the
last commit.

The version is asked *before* the read: a commit landing between the question and the read
changes the version, so an answer read after it is dropped at the next question rather than
served as the older state's.

Bounds: at most `MAX_ENTRIES` answers and `MAX_CHARS` characters of text among them; an answer
holding more than `MAX_ENTRY_CHARS` (a task with a large body) is not kept. Answers are kept as
copies and handed out as copies (plain dicts and lists of JSON values), so a caller that changes
the answer it got changes no one else's.

`DataVersion` is also how the HTTP credential cache (`server/tokencache.py`) knows that nothing
changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any
from urllib.parse import quote

MAX_ENTRIES = 512
MAX_CHARS = 2_000_000  # characters of strings across all kept answers (about 2-8 MB)
MAX_ENTRY_CHARS = 64_000


class DataVersion:
    """SQLite's `PRAGMA data_version` of one read-only connection, opened on first use on the
    calling thread: a number that changes whenever another connection committed since it last
    asked. None when it cannot be told (then nothing may be taken as unchanged)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None

    def current(self) -> int | None:
        try:
            conn = self._conn or self._open()
            row = conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:  # busy, gone, or used from another thread than the one that opened it
            return None
        return int(row[0]) if row is not None else None

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 0")
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            conn.close()


class TooLarge(Exception):
    """An answer holding more text than one entry may."""


def copy_answer(value: Any, budget: list[int]) -> Any:
    """A copy of a JSON-shaped answer (dicts and lists copied, scalars shared); `budget[0]`
    is reduced by the length of every string met and `TooLarge` raised when it goes negative."""
    if isinstance(value, str):
        budget[0] -= len(value)
        if budget[0] < 0:
            raise TooLarge
        return value
    if isinstance(value, dict):
        return {key: copy_answer(item, budget) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_answer(item, budget) for item in value]
    return value


class PointCache:
    """`version()` before a read; `get(version, fn, args)` gives a kept answer or `MISSING`;
    `put(version, fn, args, answer)` keeps one. A version of None keeps and gives nothing."""

    MISSING: Any = object()

    def __init__(
        self,
        version: DataVersion,
        *,
        max_entries: int = MAX_ENTRIES,
        max_chars: int = MAX_CHARS,
        max_entry_chars: int = MAX_ENTRY_CHARS,
    ) -> None:
        self.data_version = version
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.max_entry_chars = max_entry_chars
        self.hits = 0
        self.misses = 0
        self._seen: int | None = None
        self._kept: dict[Hashable, tuple[Any, int]] = {}  # key -> (answer, its characters)
        self._chars = 0

    def version(self) -> int | None:
        """The database's version now, asked before a read; forgets every answer when it changed."""
        version = self.data_version.current()
        if version != self._seen:
            self._kept.clear()
            self._chars = 0
            self._seen = version
        return version

    @staticmethod
    def _key(fn: Callable[..., Any], args: tuple[Any, ...]) -> Hashable | None:
        key = (fn, args)
        try:
            hash(key)
        except TypeError:  # an argument that cannot be a key (a list): not kept
            return None
        return key

    def get(self, version: int | None, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if version is None or version != self._seen:
            return self.MISSING
        key = self._key(fn, args)
        kept = self._kept.get(key) if key is not None else None
        if kept is None:
            self.misses += 1
            return self.MISSING
        self.hits += 1
        return copy_answer(kept[0], [kept[1]])  # its size was counted when it was kept

    def put(self, version: int | None, fn: Callable[..., Any], args: tuple[Any, ...], answer: Any) -> None:
        if version is None or version != self._seen:
            return  # the database changed since the version was asked (or it cannot be told)
        key = self._key(fn, args)
        if key is None:
            return
        budget = [self.max_entry_chars]
        try:
            copy = copy_answer(answer, budget)
        except TooLarge:
            return
        chars = self.max_entry_chars - budget[0]
        old = self._kept.pop(key, None)
        if old is not None:
            self._chars -= old[1]
        while self._kept and (len(self._kept) >= self.max_entries or self._chars + chars > self.max_chars):
            oldest = next(iter(self._kept))
            self._chars -= self._kept.pop(oldest)[1]
        self._kept[key] = (copy, chars)
        self._chars += chars

    def close(self) -> None:
        self._kept.clear()
        self._chars = 0
        self.data_version.close()
