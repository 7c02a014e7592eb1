"""The console's `T` key: only allowed commands run (agent-written expected tests that are not
configured are skipped), on the revision; where no sandbox works it asks first, and runs the
tests unsandboxed only after the operator confirmed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from roundtable.runtime import Runtime
from roundtable.sandbox import runner
from roundtable.services.coordination import runs
from roundtable.services.policy.engine import load_policy
from roundtable.tools.context import OPERATOR
from roundtable.tui.screens.confirm import ConfirmScreen
from roundtable.tui.widgets.proposals_pane import ProposalsPane
from tests.helpers import agent
from tests.support.console import make_app, notifications, settle, wait_for
from tests.tui.flows import AUTHOR, make_repo, one_line_patch, scalar

pytestmark = pytest.mark.anyio


@pytest.fixture
async def rt(project: Path) -> AsyncIterator[Runtime]:
    make_repo(project)
    commands = {"check": ["grep", "-q", "v2", "src/app.py"]}
    block = yaml.safe_dump({"tests": {"commands": commands, "sandbox": "bwrap"}})
    (project / "POLICIES.ROUNDTABLE.md").write_text(f"```yaml\n{block}```\n", encoding="utf-8")
    runtime = await Runtime.open(project)
    runtime.policy = load_policy(project)
    try:
        yield runtime
    finally:
        await runtime.close()


async def proposal_v2(rt: Runtime, expected_tests: list[str] | None = None) -> dict[str, Any]:
    """A proposal changing src/app.py to print('v2') (no votes: the key does not need them)."""
    task = await rt.call("task.create", {"title": "v2", "body_md": "Do it."}, OPERATOR)
    task_id = task["task"]["id"]
    claim = {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": "src/app.py"}
    await rt.call("resource.claim", {**claim, "agent_id": AUTHOR}, agent(AUTHOR))
    args = {
        "task_id": task_id,
        "agent_id": AUTHOR,
        "title": "v2",
        "summary_md": "Because.",
        "affected_resources": [],
        "risk": "normal",
        "patch": one_line_patch("src/app.py", "print('v1')", "print('v2')"),
        "expected_tests": expected_tests or [],
    }
    return (await rt.call("proposal.create", args, agent(AUTHOR)))["proposal"]  # type: ignore[no-any-return]


async def _select(app, key: str) -> None:  # type: ignore[no-untyped-def]
    pane = app.query_one(ProposalsPane)
    pane.focus()
    await wait_for(lambda: any(r.value == key for r in pane.rows), what=f"{key} listed")
    for index, row_key in enumerate(pane.rows):
        if row_key.value == key:
            pane.move_cursor(row=index)


async def _runs(rt: Runtime, proposal_id: str) -> list[str]:
    async with rt.db.read() as r:
        rows = await r.fetchall(
            "SELECT command || ' ' || status || ' ' || sandbox FROM test_runs WHERE proposal_id = ? ORDER BY created_at",
            (proposal_id,),
        )
    return [row[0] for row in rows]


async def test_t_runs_the_configured_command_on_the_revision(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    if await runner.problem("bwrap"):
        pytest.skip("bwrap does not work here")
    run = await runs.create_run(rt, "ship v2")
    proposal = await proposal_v2(rt)
    before = await _runs(rt, proposal["id"])
    app = make_app(rt, run_id=run.id)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, proposal["id"])
        await pilot.press("T")
        await wait_for(lambda: len(app.gate_reports) > 0 and proposal["id"] in app.gate_reports, what="gate report")
    assert (await _runs(rt, proposal["id"]))[len(before) :] == ["check passed bwrap"]


async def test_t_asks_before_running_unsandboxed(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(runner._probed, "bwrap", "bwrap is not installed")
    run = await runs.create_run(rt, "ship v2")
    # The agent's expected tests: one is not a configured command.
    proposal = await proposal_v2(rt, ["printf pwned", "check"])
    before = await _runs(rt, proposal["id"])
    app = make_app(rt, run_id=run.id)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(app)
        await _select(app, proposal["id"])
        await pilot.press("T")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="the unsandboxed confirmation")
        body = str(app.screen.body.renderables[4])  # type: ignore[attr-defined]
        assert "bwrap is not installed" in body
        await pilot.press("n")
        await wait_for(lambda: any("Tests not run." in n for n in notifications(app)), what="cancel notice")
        assert await _runs(rt, proposal["id"]) == before
        assert any("printf pwned" in n for n in notifications(app))  # skipped, never run
        await pilot.press("T")
        await wait_for(lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation again")
        await pilot.press("y")
        await wait_for(lambda: any("check: passed" in n for n in notifications(app)), timeout=20, what="the run")
    assert (await _runs(rt, proposal["id"]))[len(before) :] == ["check passed none"]
    assert await scalar(rt, "SELECT count(*) FROM test_runs WHERE command LIKE '%pwned%'", ()) == 0
