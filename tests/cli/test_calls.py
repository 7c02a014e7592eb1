"""The CLI's one way to the project's state (`roundtable/cli/calls.py`): an operation as the
operator through `Runtime.call` (validated, audited, refused whole), a read in one snapshot,
and the running owner's socket for what only the owner can do."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.cli import calls
from roundtable.errors import ValidationError
from roundtable.store.db import Reader


def test_given_leaves_out_what_the_command_line_left_blank() -> None:
    assert calls.given({"a": "x", "b": "", "c": None, "d": 0, "e": False}) == {"a": "x", "d": 0, "e": False}


def test_call_runs_the_operation_as_the_operator_and_read_sees_it(project: Path) -> None:
    made = calls.call(project, "task.create", {"title": "t", "body_md": "b", "task_id": "T-cli"})
    assert made["task"]["id"] == "T-cli"

    async def query(r: Reader) -> tuple[str, str, str]:
        row = await r.fetchone("SELECT principal, transport, actor_id FROM events WHERE type = 'task.created'")
        assert row is not None
        return str(row[0]), str(row[1]), str(row[2])

    assert calls.read(project, query) == ("operator", "cli", "operator")


def test_a_refused_call_raises_and_changes_nothing(project: Path) -> None:
    with pytest.raises(ValidationError, match="unknown argument"):
        calls.call(project, "task.create", {"title": "t", "body_md": "b", "bogus": 1})

    async def count(r: Reader) -> int:
        return int(await r.scalar("SELECT count(*) FROM tasks"))

    assert calls.read(project, count) == 0


def test_owner_call_without_an_owner_says_none_runs(project: Path) -> None:
    from roundtable.server.socket_client import OwnerUnreachable

    with pytest.raises(OwnerUnreachable, match="no owner is running"):
        calls.owner_call(project, "session.revoke", {"session_id": "S-1"}, read_timeout=5)
