"""`roundtable transactions list|rollback` on a real repository."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from roundtable.cli import cli
from tests.governance.conftest import Flow, make_patch

pytestmark = pytest.mark.anyio


async def test_list_and_rollback(flow: Flow, repo: Path) -> None:
    proposal = await flow.ready(make_patch("src/app.py", "print('v1')", "print('v2')"))
    out = await flow.call("patch.apply", {"proposal_id": proposal["id"]})
    tx_id = out["transaction"]["id"]
    await flow.rt.close()
    runner = CliRunner()

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        # The CLI runs its own event loop: call it from a worker thread.
        return anyio.to_thread.run_sync(lambda: runner.invoke(cli, list(args)))

    listed = await invoke(*["transactions", "list", "--root", str(repo), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)["transactions"]
    assert [(r["id"], r["status"], r["files"]) for r in rows] == [(tx_id, "applied", ["src/app.py"])]

    text = await invoke(*["transactions", "list", "--root", str(repo)])
    assert tx_id in text.output and "[applied]" in text.output

    done = await invoke(*["transactions", "rollback", tx_id, "--root", str(repo), "--reason", "bad idea"])
    assert done.exit_code == 0, done.output
    assert (repo / "src" / "app.py").read_text() == "print('v1')\n"

    again = await invoke(*["transactions", "rollback", tx_id, "--root", str(repo)])
    assert again.exit_code == 1
    assert "only applied transactions can be rolled back" in again.output
