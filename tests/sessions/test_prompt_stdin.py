"""The prompt reaches the harness on standard input and in `PROMPT.md`, never as one argv string:
a launch whose briefing carries a 200 KB review reason starts and exits cleanly (as one argv
string it failed with `Argument list too long`). Real supervisor and process."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from roundtable.runtime import Runtime
from roundtable.services.sessions.records import LaunchArgs
from roundtable.supervisor import start_supervisor
from tests.sessions.helpers import make_task

pytestmark = pytest.mark.anyio

# A harness that reports what it was given: its argv's longest word, its stdin, its prompt file.
HARNESS = (
    "import json, os, sys; data = sys.stdin.read();"
    "text = open(os.environ['ROUNDTABLE_PROMPT_FILE']).read();"
    "print(json.dumps({'argv_max': max(len(a) for a in sys.argv), 'stdin': len(data), 'file': len(text),"
    "'same': data == text, 'tail': data.rstrip()[-13:]}), flush=True)"
)


async def test_a_200_kb_briefing_reaches_the_harness_on_stdin(project: Path) -> None:
    path = project / ".roundtable" / "config.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["adapters"]["reporter"] = {
        "command": f"{shlex.quote(sys.executable)} -c {shlex.quote(HARNESS)}",
        "supports_mcp": True,
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    reason = "revise: " + "x" * 200_000 + " END-OF-REASON"
    runtime = await Runtime.open(project)
    try:
        _run_id, task_id = await make_task(runtime)
        sup = await start_supervisor(runtime, base_dir=project.parent)
        try:
            res = await sup.launch(
                LaunchArgs(agent_id="implementer-1", task_id=task_id, adapter="reporter", briefing=reason)
            )
            session_id = res["session"]["id"]
            await sup.wait(session_id, 60)
        finally:
            await sup.close()
        async with runtime.db.read() as r:
            status = await r.scalar("SELECT status FROM agent_sessions WHERE id = ?", (session_id,))
    finally:
        await runtime.close()
    lines = [line for line in sup.log_path(session_id).read_text().splitlines() if line.startswith("{")]
    assert lines, sup.log_path(session_id).read_text()[:2000]
    seen = json.loads(lines[0])
    assert status == "ended"  # exit 0: the launch did not fail
    assert seen["stdin"] > 200_000 and seen["same"] and seen["tail"] == "END-OF-REASON"
    assert seen["argv_max"] < 5_000  # the harness's code; no prompt in argv
