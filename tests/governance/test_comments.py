"""Line comments (`proposal.comment`): the operator and reviewing agents attach them to a line a
revision's diff shows, to a file, or to the whole proposal; a refused comment records nothing;
who comments comes from the credential; `proposal.get` shows the open ones (on the current
revision) compactly; the author's resume briefing lists them."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from roundtable.errors import RoundtableError
from roundtable.owner import Owner
from roundtable.services.coordination.agents import sync_agents
from roundtable.services.governance.comments import MAX_BODY
from roundtable.services.sessions import briefing
from roundtable.store.records import AgentSession
from tests.governance.conftest import AUTHOR, Flow, agent
from tests.helpers import auth_headers, sdk_http
from tests.support.results import value_of

pytestmark = pytest.mark.anyio

# src/app.py: one line replaced by three (new lines 1-3, old line 1 removed).
PATCH = (
    "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
    "@@ -1 +1,3 @@\n-print('v1')\n+print('v2')\n+x = 1\n+y = 2\n"
)
PATCH_2 = (
    "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
    "@@ -1 +1,2 @@\n-print('v1')\n+print('v3')\n+x = 1\n"
)


async def proposed(flow: Flow, patch: str = PATCH) -> str:
    await flow.task()
    await flow.claim("src/app.py")
    return str((await flow.propose(patch))["id"])


async def stored(flow: Flow) -> tuple[list[dict[str, Any]], int]:
    """Every comment row, and how many `proposal.commented` events there are."""
    async with flow.rt.db.read() as r:
        rows = [dict(row) for row in await r.fetchall("SELECT * FROM proposal_comments ORDER BY created_at, id")]
        events = int(await r.scalar("SELECT count(*) FROM events WHERE type = 'proposal.commented'"))
    return rows, events


async def test_the_operator_comments_on_a_line_and_the_author_sees_it(flow: Flow) -> None:
    pid = await proposed(flow)
    out = await flow.call(
        "proposal.comment", {"proposal_id": pid, "path": "src/app.py", "line": 2, "body_md": "Name x better."}
    )
    assert out["comment"]["at"] == "src/app.py:2" and out["comment"]["revision"] == 1
    rows, events = await stored(flow)
    assert len(rows) == 1 and events == 1
    row = rows[0]
    assert (row["author"], row["path"], row["line"], row["side"], row["revision"]) == (
        "operator",
        "src/app.py",
        2,
        "new",
        1,
    )
    async with flow.rt.db.read() as r:
        event = await r.fetchone(
            "SELECT actor_id, principal, payload_json FROM events WHERE type = 'proposal.commented'"
        )
    assert event["actor_id"] == "operator" and event["principal"] == "operator"
    assert '"where":"src/app.py:2"' in event["payload_json"] and "Name x better" not in event["payload_json"]

    got = await flow.call("proposal.get", {"proposal_id": pid}, agent(AUTHOR))
    assert got["comments"] == [
        {"id": row["id"], "revision": 1, "at": "src/app.py:2", "author": "operator", "body_md": "Name x better."}
    ]
    # A file comment and a comment on the whole proposal; a removed line (old side).
    await flow.call("proposal.comment", {"proposal_id": pid, "path": "src/app.py", "body_md": "Split this file."})
    await flow.call("proposal.comment", {"proposal_id": pid, "body_md": "Add a test."})
    await flow.call(
        "proposal.comment",
        {"proposal_id": pid, "path": "src/app.py", "line": 1, "side": "old", "body_md": "Keep v1's log line."},
    )
    got = await flow.call("proposal.get", {"proposal_id": pid}, agent(AUTHOR))
    assert [c["at"] for c in got["comments"]] == ["(whole proposal)", "src/app.py", "src/app.py:-1", "src/app.py:2"]


async def test_refused_comments_record_nothing(flow: Flow) -> None:
    pid = await proposed(flow)
    bad: list[tuple[dict[str, Any], str]] = [
        ({"path": "README.txt", "line": 1}, "README.txt is not in revision 1's diff (its files: src/app.py)"),
        ({"path": "src/app.py", "line": 4}, "line 4 of the new src/app.py is not in the diff (it shows lines 1-3)"),
        ({"path": "src/app.py", "line": 2, "side": "old"}, "line 2 of the old src/app.py is not in the diff"),
        ({"line": 2}, "a comment on a line needs the path of its file"),
        ({"path": "src/app.py", "revision": 2}, "has revisions 1 to 1; there is no revision 2"),
        ({"path": "src/app.py", "body_md": "x" * (MAX_BODY + 1)}, "too long"),
        ({"path": "src/app.py", "body_md": "   "}, "must not be empty"),
        ({"path": "src/app.py", "author": "someone"}, "unknown argument author"),
    ]
    for extra, message in bad:
        args = {"proposal_id": pid, "body_md": "note", **extra}
        with pytest.raises(RoundtableError, match=message.replace("(", r"\(").replace(")", r"\)")):
            await flow.call("proposal.comment", args)
    with pytest.raises(RoundtableError, match="not found"):
        await flow.call("proposal.comment", {"proposal_id": "P-nope", "body_md": "x"})
    await flow.call("patch.reject", {"proposal_id": pid, "reason_md": "no"})
    with pytest.raises(RoundtableError, match="is rejected; comments are accepted only while pending or in_review"):
        await flow.call("proposal.comment", {"proposal_id": pid, "body_md": "late"})
    assert await stored(flow) == ([], 0)


async def test_an_agent_comments_as_itself_and_never_on_its_own_proposal(flow: Flow) -> None:
    pid = await proposed(flow)
    out = await flow.call(
        "proposal.comment",
        {"proposal_id": pid, "path": "src/app.py", "line": 3, "body_md": "y is unused."},
        agent("reviewer-1"),
    )
    rows, _ = await stored(flow)
    assert [r["author"] for r in rows] == ["reviewer-1"] and rows[0]["id"] == out["comment"]["id"]
    with pytest.raises(RoundtableError, match=r"implementer-1 is the author of proposal .*new revision"):
        await flow.call("proposal.comment", {"proposal_id": pid, "body_md": "I agree"}, agent(AUTHOR))
    with pytest.raises(RoundtableError, match="ghost-9 is not a registered agent"):
        await flow.call("proposal.comment", {"proposal_id": pid, "body_md": "boo"}, agent("ghost-9"))
    assert len((await stored(flow))[0]) == 1


async def test_a_new_revision_leaves_comments_on_the_one_they_were_made_on(flow: Flow) -> None:
    pid = await proposed(flow)
    await flow.call("proposal.comment", {"proposal_id": pid, "path": "src/app.py", "line": 3, "body_md": "Drop y."})
    await flow.call("proposal.attach_patch", {"proposal_id": pid, "patch": PATCH_2}, agent(AUTHOR))
    got = await flow.call("proposal.get", {"proposal_id": pid}, agent(AUTHOR))
    assert "comments" not in got  # none open on revision 2: the key is left out
    # Line 3 exists on revision 1 only; naming the revision still reaches it.
    with pytest.raises(RoundtableError, match=r"line 3 of the new src/app\.py is not in the diff"):
        await flow.call("proposal.comment", {"proposal_id": pid, "path": "src/app.py", "line": 3, "body_md": "x"})
    await flow.call(
        "proposal.comment", {"proposal_id": pid, "revision": 1, "path": "src/app.py", "line": 3, "body_md": "Thanks."}
    )
    full = await flow.call("proposal.get", {"proposal_id": pid, "detail": True})
    assert [(c["revision"], c["body_md"]) for c in full["comments"]] == [(1, "Drop y."), (1, "Thanks.")]


async def test_the_authors_resume_briefing_lists_the_open_comments(flow: Flow) -> None:
    pid = await proposed(flow)
    await flow.call("proposal.comment", {"proposal_id": pid, "path": "src/app.py", "line": 2, "body_md": "Rename x."})
    session = AgentSession.from_row({"id": "S-1", "agent_id": AUTHOR, "run_id": "", "external_session_id": ""})
    async with flow.rt.db.read() as r:
        text = (await briefing.build(r, session)).markdown()
    assert f"- {pid} from you: pending, 1 comment on revision 1:" in text
    assert "src/app.py:2 — Rename x. (operator)" in text
    assert "address the comments" in text


# --- over MCP, with the SDK client ---------------------------------------------------------------


@pytest.fixture
async def owner(repo: Path) -> AsyncIterator[Owner]:
    sockdir = Path(tempfile.mkdtemp(prefix="rtc", dir="/tmp"))
    try:
        async with Owner(repo, http_address="127.0.0.1:0", socket_path=sockdir / "rt.sock", chair=False) as o:
            yield o
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)


async def test_a_reviewer_comments_over_mcp_and_the_author_is_refused(owner: Owner) -> None:
    await sync_agents(owner.runtime)
    flow = Flow(owner.runtime)
    pid = await proposed(flow)
    args = {"proposal_id": pid, "path": "src/app.py", "line": 2, "body_md": "Why x?"}
    async with Client(
        sdk_http(owner.http_url, await auth_headers(owner.runtime, agent_id="reviewer-1")), mode="legacy"
    ) as c:
        listed = {t.name for t in (await c.session.list_tools()).tools}
        assert "proposal_comment" in listed
        out = await c.session.call_tool("proposal_comment", args)
        assert not out.is_error, out.content[0].text
        assert value_of(out) == {"comment": {"id": value_of(out)["comment"]["id"], "revision": 1, "at": "src/app.py:2"}}  # type: ignore[index]
    async with Client(sdk_http(owner.http_url, await auth_headers(owner.runtime, agent_id=AUTHOR)), mode="legacy") as c:
        refused = await c.session.call_tool("proposal_comment", args)
        assert refused.is_error and "is the author of proposal" in refused.content[0].text
        got = await c.session.call_tool("proposal_get", {"proposal_id": pid})
        assert value_of(got)["comments"][0]["author"] == "reviewer-1"  # type: ignore[index]
    rows, events = await stored(flow)
    assert [r["author"] for r in rows] == ["reviewer-1"] and events == 1


async def test_the_cli_comments_as_the_operator_and_lists_the_comments(flow: Flow, repo: Path) -> None:
    pid = await proposed(flow)

    async def cli(*argv: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "roundtable", "proposals", *argv, "--root", str(repo),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await proc.communicate()
        return int(proc.returncode or 0), out.decode(), err.decode()

    code, out, err = await cli("comment", pid, "Rename x.", "--path", "src/app.py", "--line", "2")
    assert code == 0, err
    assert out.startswith("C-") and out.rstrip().endswith(f"on {pid} r1 src/app.py:2")
    code, out, err = await cli("comment", pid, "Out of range.", "--path", "src/app.py", "--line", "9")
    assert code == 1 and "line 9 of the new src/app.py is not in the diff" in err and not out
    code, out, err = await cli("comments", pid)
    assert code == 0 and out == "r1 src/app.py:2 — Rename x. (operator)\n", (out, err)
    rows, events = await stored(flow)
    assert len(rows) == 1 and events == 1


def test_a_revisions_lines_are_numbered_per_side_as_git_reads_the_patch() -> None:
    from roundtable.services.governance.comments import revision_lines
    from roundtable.services.repository.diff_lines import anchor_problem

    patch = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
        "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"
        "@@ -10,2 +10,3 @@\n ten\n+ten and a half\n eleven\n\\ No newline at end of file\n"
        'diff --git "a/old name.py" "b/new name.py"\nsimilarity index 90%\n'
        'rename from old name.py\nrename to new name.py\n--- "a/old name.py"\n+++ "b/new name.py"\n'
        "@@ -4 +4 @@\n-x = 1\n+x = 2\n"
    )
    found = revision_lines(patch)
    assert list(found) == ["a.py", "new name.py"]
    shown = [(d.kind, d.old, d.new) for d in found["a.py"] if d.kind not in ("hunk", "note")]
    assert shown == [
        ("context", 1, 1),
        ("removed", 2, 0),
        ("added", 0, 2),
        ("context", 3, 3),
        ("context", 10, 10),
        ("added", 0, 11),
        ("context", 11, 12),
    ]
    assert anchor_problem(found["a.py"], "a.py", 11, "new") == ""
    assert anchor_problem(found["a.py"], "a.py", 2, "old") == ""
    assert "it shows lines 1-3, 10-12" in anchor_problem(found["a.py"], "a.py", 5, "new")
    assert anchor_problem(found["new name.py"], "new name.py", 4, "new") == ""
