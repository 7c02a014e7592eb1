"""Is the database file still where the console reads it? Checked before every read."""

from __future__ import annotations

import os
from pathlib import Path


class DatabaseUnavailable(Exception):
    """The database file cannot be read (missing, moved or unreadable)."""


def check_database_file(path: Path) -> None:
    """Raise `DatabaseUnavailable` when the file a refresh would read is gone or unreadable.

    Open connections keep working on a renamed or deleted file, so a query alone would hide
    that the project's database is no longer where the console thinks it is.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DatabaseUnavailable(f"database file missing: {path}") from None
    except OSError as exc:
        raise DatabaseUnavailable(f"database file unreadable: {exc.strerror}") from None
    if not os.access(path, os.R_OK) or (st.st_mode & 0o444) == 0:
        raise DatabaseUnavailable(f"database file unreadable: {path}")
