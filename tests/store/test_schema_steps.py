"""Migration steps are tuples of single statements: the landed steps still build exactly the schema
the statement-splitting migrator built (`schema_v5.sql`, sqlite_master of a fresh version 5 file),
and a file left at any earlier version migrates to the same schema as a fresh one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from roundtable.store.db import Database
from roundtable.store.schema import MIGRATIONS, SCHEMA_VERSION

pytestmark = pytest.mark.anyio

GOLDEN_V5 = Path(__file__).with_name("schema_v5.sql")


def _master(con: sqlite3.Connection) -> str:
    rows = con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type DESC, name")
    return ";\n\n".join(sql for (sql,) in rows) + ";\n"


def _file_at(path: Path, version: int) -> None:
    con = sqlite3.connect(path)
    for step in MIGRATIONS[:version]:
        for statement in step:
            con.execute(statement)
    con.execute(f"PRAGMA user_version = {version}")
    con.commit()
    con.close()


def test_landed_steps_build_the_version_5_schema_byte_for_byte() -> None:
    con = sqlite3.connect(":memory:")
    for step in MIGRATIONS[:5]:
        for statement in step:
            con.execute(statement)
    golden = GOLDEN_V5.read_text()
    expected = golden[golden.index("CREATE") :]
    assert _master(con) == expected


def test_every_statement_is_one_statement_without_a_terminator() -> None:
    for version, step in enumerate(MIGRATIONS, start=1):
        assert isinstance(step, tuple) and step, f"step {version} is not a tuple of statements"
        for statement in step:
            assert statement == statement.strip() and not statement.endswith(";"), (version, statement[:60])
            # sqlite3 refuses more than one statement per execute; a lone statement completes with `;`.
            assert sqlite3.complete_statement(statement + ";"), (version, statement[:60])


@pytest.mark.parametrize("start", range(0, SCHEMA_VERSION))
async def test_a_file_at_any_earlier_version_migrates_to_the_fresh_schema(tmp_path: Path, start: int) -> None:
    fresh, old = tmp_path / "fresh.db", tmp_path / "old.db"
    db = await Database.open(fresh)
    await db.close()
    _file_at(old, start)
    db = await Database.open(old)
    await db.close()
    with sqlite3.connect(fresh) as a, sqlite3.connect(old) as b:
        assert _master(b) == _master(a)
        assert b.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
