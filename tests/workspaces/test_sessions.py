"""Supervised implementer sessions run in their workspace: the harness edits there, the next
session finds the previous revision in place, and work a session leaves unproposed is proposed
by the supervisor (or the refusal is recorded)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from roundtable.runtime import Runtime
from roundtable.services.repository.patches import read_patch
from roundtable.services.sessions import adapters
from roundtable.services.sessions import records as sessions
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio


def owners_of(tree: Path) -> set[int]:
    return {p.lstat().st_uid for p in [tree, *tree.rglob("*")]}


EDIT = (
    "import os, pathlib, subprocess; p = pathlib.Path('src/app.py'); print('cwd', os.getcwd());"
    "print('ws', os.environ.get('ROUNDTABLE_WORKSPACE'));"
    "p.write_text(p.read_text() + {line!r} + chr(10));"
    # The harness's own git, inside the sandbox, where the project's repository does not exist.
    "r = subprocess.run(['git', 'status', '--porcelain'], capture_output=True, text=True);"
    "print('git status', r.returncode, repr(r.stdout), r.stderr.strip()[:300])"
)
LINK = "import os; os.symlink('/etc/passwd', 'passwd')"


async def _session(rt: Runtime, sup, task_id: str, script: str) -> str:  # type: ignore[no-untyped-def]
    res = await sup.launch(
        LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="scripted"), extra_args=(script,)
    )
    session_id = str(res["session"]["id"])
    await sup.wait(session_id, 60)
    return session_id


async def _events(rt: Runtime, kind: str) -> list[dict[str, object]]:
    async with rt.db.read() as r:
        rows = await r.fetchall("SELECT payload_json, actor_id FROM events WHERE type = ? ORDER BY id", (kind,))
    return [{**json.loads(row[0]), "actor": row[1]} for row in rows]


async def test_sessions_work_in_their_workspace_and_leftovers_are_proposed(
    rt: Runtime, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    _run, task_id = await make_task(rt)
    real = (repo / "src" / "app.py").read_text()
    sup = await start_supervisor(rt, base_dir=tmp_path)
    try:
        first = await _session(rt, sup, task_id, EDIT.format(line="# one"))
        second = await _session(rt, sup, task_id, EDIT.format(line="# two"))
    finally:
        await sup.close()
    async with rt.db.read() as r:
        session = await sessions.get(r, first)
        ws_path = await r.scalar("SELECT path FROM workspaces")
        proposal = await r.fetchone("SELECT id, revision_number, current_revision, workspace_id FROM proposals")
    assert session.working_directory == ws_path
    assert sessions.metadata(session)["workspace"] == ws_path
    log = sup.log_path(first).read_text()
    assert f"cwd {ws_path}" in log and f"ws {ws_path}" in log
    assert "git status 0 ' M src/app.py\\n'" in log, log  # its own repository: only its change shows
    assert (Path(ws_path) / "src" / "app.py").read_text() == real + "# one\n# two\n"  # revision 1 was in place
    assert (repo / "src" / "app.py").read_text() == real  # the real tree is untouched
    # Between sessions the workspace is the owner's (as root, the sandbox ran as nobody).
    assert owners_of(Path(ws_path)) == {os.getuid()}
    assert proposal[1] == 2 and proposal[3]
    assert read_patch(repo, proposal[2]).endswith("+# one\n+# two\n")
    proposed = await _events(rt, "workspace.proposed")
    assert [(e["proposed_by"], e["revision_number"], e["actor"]) for e in proposed] == [
        ("supervisor", 1, "supervisor"),
        ("supervisor", 2, "supervisor"),
    ]
    assert second


async def test_a_refused_leftover_is_recorded_with_its_reason(
    rt: Runtime, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        adapters,
        "SCRIPTED_ADAPTER",
        adapters.SCRIPTED_ADAPTER.__class__(command=f"{sys.executable} -c", supports_mcp=True),
    )
    _run, task_id = await make_task(rt)
    sup = await start_supervisor(rt, base_dir=tmp_path)
    try:
        session_id = await _session(rt, sup, task_id, LINK)
    finally:
        await sup.close()
    [note] = await _events(rt, "workspace.unproposed")
    assert note["session_id"] == session_id and "symbolic link" in str(note["reason"])
    async with rt.db.read() as r:
        assert await r.scalar("SELECT COUNT(*) FROM proposals") == 0
