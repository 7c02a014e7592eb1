"""What an agent pays per step, pinned: each role's `tools/list` size, and each governance step
that takes one call (a revision keeps its review requested, the author reads every word of the
verdicts, a decision releases the review claims, `proposal_create` shows the diff it built and
needs neither `affected_resources` nor `risk`, a refused approval names the operator's command
and the operator's decision keeps the agent's words)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types

from roundtable.owner import Owner
from roundtable.services.coordination.runs import create_run
from roundtable.tools.registry import get_registry
from tests.helpers import auth_headers, sdk_http
from tests.mcp.conftest import Inbox
from tests.support.results import value_of

pytestmark = pytest.mark.anyio

APP = "".join(f"line {n}\n" for n in range(1, 21))
# Bytes of each role's tools/list as the SDK client serialises it (the figures a harness reads
# into its model's context once per session); the operator's list is the whole registry. Tight on
# purpose (about 1 % above 7,140, 2,995 and 3,780 now, with no run active; in a run the turn tools
# add about 1,060): every agent of `python -m bench agent_task` reads its listing, and a byte added
# to one is paid on every path.
LISTING_LIMITS = {"implementer-1": 7_210, "reviewer-1": 3_025, "architect-1": 3_820}


def _git(root: Any, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True)


@pytest.fixture
async def real(owner: Owner) -> Owner:
    owner.runtime.registry = get_registry()
    root = owner.runtime.root
    (root / "app.txt").write_text(APP)
    (root / ".gitignore").write_text(".roundtable/\n")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "init")):
        _git(root, *args)
    return owner


async def _listing(owner: Owner, headers: dict[str, str]) -> tuple[set[str], int]:
    async with Client(sdk_http(owner.http_url, headers), mode="legacy") as client:
        listed = await client.session.list_tools()
    return {t.name for t in listed.tools}, len(listed.model_dump_json(by_alias=True, exclude_none=True))


async def test_each_role_is_listed_what_it_uses_within_its_size(real: Owner) -> None:
    sizes: dict[str, int] = {}
    names: dict[str, set[str]] = {}
    for agent, limit in LISTING_LIMITS.items():
        names[agent], sizes[agent] = await _listing(real, await auth_headers(real.runtime, agent_id=agent))
        assert sizes[agent] <= limit, (agent, sizes[agent])
    operator, _ = await _listing(real, await auth_headers(real.runtime, operator=True))
    assert operator == {s.mcp_name for s in get_registry().exposed()}
    assert {"vote_cast", "proposal_create"} & names["implementer-1"] == {"proposal_create"}
    assert {"vote_cast", "proposal_create", "proposal_attach_patch"} & names["reviewer-1"] == {"vote_cast"}
    # The architect reviews and records what lasts; it plans in a planner session of its own.
    assert names["architect-1"] - names["reviewer-1"] == {"memory_query", "memory_record"}
    assert not {"task_create", "task_list", "decision_record"} & names["architect-1"]


TURN_TOOLS = {"agent_turn_request", "agent_turn_start", "agent_turn_complete"}


async def test_the_turn_tools_are_listed_while_a_run_is_active(real: Owner) -> None:
    """Turns are needed only inside an active run: without one an agent is not shown them; when a
    run starts, a client that listed is told (`tools/list_changed`) and lists them."""
    inbox = Inbox()
    me = await auth_headers(real.runtime, agent_id="reviewer-1")
    async with Client(sdk_http(real.http_url, me), mode="legacy", message_handler=inbox.handler) as client:
        assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
        before = {t.name for t in (await client.session.list_tools()).tools}
        assert not before & TURN_TOOLS and "vote_cast" in before
        await create_run(real.runtime, "a goal")
        await inbox.wait_for(lambda item: isinstance(item, types.ToolListChangedNotification))
        after = {t.name for t in (await client.session.list_tools()).tools}
    assert after - before == TURN_TOOLS
    operator, _ = await _listing(real, await auth_headers(real.runtime, operator=True))
    assert TURN_TOOLS <= operator


async def _call(client: Any, tool: str, args: dict[str, Any]) -> Any:
    result = await client.session.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return result


async def test_a_review_round_trip_takes_one_call_per_step(real: Owner) -> None:
    runtime = real.runtime
    task_id = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
    me = await auth_headers(runtime, agent_id="implementer-1")
    reviewer = await auth_headers(runtime, agent_id="reviewer-1")
    reason = "Rename it. " + "x" * 600
    async with (
        Client(sdk_http(real.http_url, me), mode="legacy") as author,
        Client(sdk_http(real.http_url, reviewer), mode="legacy") as critic,
    ):
        claim = {"resource_type": "file", "task_id": task_id, "path": "app.txt"}
        await _call(author, "resource_claim", {**claim, "claim_type": "write"})
        edit = {"path": "app.txt", "old_string": "line 10\n", "new_string": "line ten\n"}
        # No affected_resources, no risk: both optional; the answer shows the diff it built.
        made = await _call(
            author, "proposal_create", {"task_id": task_id, "title": "t", "summary_md": "s", "edits": [edit]}
        )
        pid = value_of(made)["proposal"]["id"]
        assert "risk" not in value_of(made)["proposal"]  # normal, the default: said by saying nothing
        assert len(made.content) == 2 and "-line 10\n+line ten\n" in made.content[1].text
        await _call(author, "proposal_request_review", {"proposal_id": pid})
        # The reviewer claims every touched file in one call.
        review = {
            "resource_type": "file",
            "task_id": task_id,
            "claim_type": "review",
            "paths": ["app.txt", ".gitignore"],
        }
        claimed = value_of(await _call(critic, "resource_claim", review))["claims"]
        # The mode and the paths it asked for are not repeated to it: its claims are their ids,
        # in the order of its paths.
        assert len(claimed) == 2 and all(isinstance(c, str) and c.startswith("C-") for c in claimed)
        await _call(critic, "vote_cast", {"proposal_id": pid, "vote": "revise", "reason_md": reason})
        votes = value_of(await _call(author, "vote_list", {"proposal_id": pid}))["votes"]
        assert votes[0]["reason_md"] == reason  # every word, in the one call
        second = {"path": "app.txt", "old_string": "line ten\n", "new_string": "line 10!\n"}
        revised = value_of(await _call(author, "proposal_attach_patch", {"proposal_id": pid, "edits": [second]}))
        assert revised["proposal"]["status"] == "in_review"  # no second request for review
    await runtime.call("patch.reject", {"proposal_id": pid, "reason_md": "not now"})
    async with runtime.db.read() as r:
        rows = await r.fetchall("SELECT resource_id, status FROM claims WHERE agent_id = 'reviewer-1' ORDER BY 1")
    # The decision released the review claim on what the proposal touched, not the other one.
    assert [tuple(row) for row in rows] == [("file:.gitignore", "active"), ("file:app.txt", "released")]


async def test_an_approval_refusal_names_the_operators_command_and_the_decision_keeps_the_request(
    real: Owner,
) -> None:
    runtime = real.runtime
    me = await auth_headers(runtime, agent_id="implementer-1")
    asked = {"subject": "Release", "reason_md": "The agent's reasons."}
    async with Client(sdk_http(real.http_url, me), mode="legacy") as client:
        approval = value_of(await _call(client, "human_request_approval", asked))["approval"]
        refused = await client.session.call_tool(
            "human_request_approval", {**asked, "approval_id": approval["id"], "status": "approved"}
        )
    assert refused.is_error and f"roundtable approvals approve {approval['id']}" in refused.content[0].text
    decided = await runtime.call(
        "human.request_approval",
        {"approval_id": approval["id"], "status": "approved", "subject": "ok", "reason_md": "Fine by me."},
    )
    record = decided["approval"]
    assert (record["subject"], record["reason_md"]) == ("Release", "The agent's reasons.")
    assert (record["status"], record["decision_md"]) == ("approved", "Fine by me.")


# A workspace session (a harness with its own editor, shell and search in its worktree) reads the
# listing of `?tools=workspace`: none of the tools that read or edit files through roundtable.
WORKSPACE_LISTING_LIMIT = 4_280  # 4,236 now (no run active)


async def test_a_workspace_session_is_listed_without_what_its_own_tools_do(real: Owner) -> None:
    me = await auth_headers(real.runtime, agent_id="implementer-1")
    full, full_size = await _listing(real, me)
    names, size = await _listing_at(real, f"{real.http_url}?tools=workspace", me)
    assert size <= WORKSPACE_LISTING_LIMIT, (size, full_size)
    assert {"workspace_propose", "workspace_sync", "test_run", "table_watch", "vote_list"} <= names
    assert not names & {"repo_read_file", "repo_search", "proposal_create", "proposal_attach_patch", "resource_claim"}
    # What only a session with its own editor does is in its list alone.
    assert names - full == {"workspace_create", "workspace_propose", "workspace_sync"}
    # The listing is not authority: a workspace session may still call what it is not shown.
    async with Client(sdk_http(f"{real.http_url}?tools=workspace", me), mode="legacy") as client:
        read = await _call(client, "repo_read_file", {"path": "app.txt", "start_line": 1, "end_line": 1})
    assert "line 1" in read.content[0].text
    unknown, _ = await _listing_at(real, f"{real.http_url}?tools=other", me)
    assert unknown == full  # a kind it does not know is the full list


async def _listing_at(owner: Owner, url: str, headers: dict[str, str]) -> tuple[set[str], int]:
    async with Client(sdk_http(url, headers), mode="legacy") as client:
        listed = await client.session.list_tools()
    return {t.name for t in listed.tools}, len(listed.model_dump_json(by_alias=True, exclude_none=True))


async def test_a_connected_agent_gets_its_workspace_in_one_call(
    real: Owner, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    runtime = real.runtime
    mine = (await runtime.call("task.create", {"title": "t", "body_md": "b"}))["task"]["id"]
    theirs = (await runtime.call("task.create", {"title": "u", "body_md": "b", "assigned_agent_id": "implementer-2"}))[
        "task"
    ]["id"]
    me = await auth_headers(runtime, agent_id="implementer-1")
    async with Client(sdk_http(real.http_url, me), mode="legacy") as client:
        made = value_of(await _call(client, "workspace_create", {"task_id": mine}))
        again = value_of(await _call(client, "workspace_create", {"task_id": mine}))
        refused = await client.session.call_tool("workspace_create", {"task_id": theirs})
        other = await client.session.call_tool("workspace_create", {"task_id": mine, "agent_id": "implementer-2"})
    assert made["created"] is True and "agent_id" not in made["workspace"]  # its own id is not repeated to it
    assert (tmp_path / "roundtable" / "workspaces").exists()
    assert (Path(made["workspace"]["path"]) / "app.txt").read_text() == APP
    assert again["created"] is False and again["workspace"]["id"] == made["workspace"]["id"]
    assert refused.is_error and "assigned to implementer-2" in refused.content[0].text
    assert other.is_error
    async with runtime.db.read() as r:
        assert await r.scalar("SELECT count(*) FROM workspaces") == 1
        assert await r.scalar("SELECT agent_id FROM workspaces") == "implementer-1"


async def test_the_bridge_names_a_workspace_sessions_kind(real: Owner, auth: dict[str, str]) -> None:
    """`roundtable mcp stdio --tools workspace` (what `connect --workspace` writes) is listed as a
    workspace session; without it, the full list."""
    import sys

    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def names(extra: list[str]) -> set[str]:
        args = ["-m", "roundtable", "mcp", "stdio", "--root", str(real.root), "--url", real.http_url]
        params = StdioServerParameters(command=sys.executable, args=[*args, "--agent", "implementer-1", *extra])
        async with Client(stdio_client(params), mode="legacy") as client:
            return {t.name for t in (await client.session.list_tools()).tools}

    workspace, full = await names(["--tools", "workspace"]), await names([])
    assert "workspace_propose" in workspace and "repo_read_file" not in workspace
    assert "repo_read_file" in full and "workspace_propose" not in full
