"""What an agent reads over MCP is sized for it: `tools/list` shows each principal the tools it
may call (an agent never sees patch_apply/patch_reject) at half the reference's 41 KB; proposal
results leave the store's bookkeeping out, `proposal.get` gives one line per revision and the
diff since a revision; `patch.validate` summarises votes unless asked for detail."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from roundtable.owner import Owner
from roundtable.tools.registry import Registry, get_registry
from tests.helpers import auth_headers, sdk_http
from tests.support.results import value_of

pytestmark = pytest.mark.anyio

REFERENCE_TOOLS_LIST_BYTES = 41_284  # one agent's tools/list before (measured with the SDK client)
APP = "".join(f"line {n}\n" for n in range(1, 21))


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True)


@pytest.fixture
async def real(owner: Owner) -> Owner:
    owner.runtime.registry = get_registry()
    root = owner.runtime.root
    (root / "app.txt").write_text(APP)
    (root / ".gitignore").write_text(".roundtable/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "init")
    return owner


async def _listing(owner: Owner, headers: dict[str, str]) -> tuple[list[str], int]:
    async with Client(sdk_http(owner.http_url, headers), mode="legacy") as client:
        listed = await client.session.list_tools()
    return [t.name for t in listed.tools], len(listed.model_dump_json(by_alias=True, exclude_none=True))


async def test_each_principal_sees_the_tools_it_may_call(real: Owner) -> None:
    agent_names, agent_bytes = await _listing(real, await auth_headers(real.runtime, agent_id="implementer-1"))
    operator_names, _ = await _listing(real, await auth_headers(real.runtime, operator=True))
    anonymous_names, _ = await _listing(real, await auth_headers(real.runtime))
    assert {"patch_apply", "patch_reject"} & set(agent_names) == set()
    assert set(operator_names) == {s.mcp_name for s in get_registry().exposed()} and "patch_apply" in operator_names
    assert set(anonymous_names) == {s.mcp_name for s in get_registry().exposed() if s.read_only}
    assert agent_bytes <= REFERENCE_TOOLS_LIST_BYTES // 2, agent_bytes


async def test_an_agents_schemas_leave_out_what_the_credential_decides(real: Owner) -> None:
    async with Client(
        sdk_http(real.http_url, await auth_headers(real.runtime, agent_id="implementer-1")), mode="legacy"
    ) as c:
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
    create = tools["proposal_create"].input_schema
    assert "agent_id" not in create["properties"] and "edits" in create["properties"]
    assert "unsandboxed" not in tools["test_run"].input_schema["properties"]
    async with Client(
        sdk_http(real.http_url, await auth_headers(real.runtime, agent_id="reviewer-1")), mode="legacy"
    ) as c:
        vote_cast = next(t for t in (await c.session.list_tools()).tools if t.name == "vote_cast")
    assert vote_cast.input_schema["properties"]["confidence"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": "0 to 1.",
    }
    assert "maxLength" not in create["properties"]["summary_md"]  # the generic ceiling: in tools.schema.json only
    assert tools["repo_read_file"].annotations.read_only_hint is True


async def _call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.session.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return value_of(result)  # type: ignore[no-any-return]


async def test_proposal_results_for_an_agent(real: Owner) -> None:
    runtime = real.runtime
    task = await runtime.call("task.create", {"title": "t", "body_md": "b"})
    task_id = task["task"]["id"]
    me = await auth_headers(runtime, agent_id="implementer-1")
    reviewer = await auth_headers(runtime, agent_id="reviewer-1")
    async with Client(sdk_http(real.http_url, me), mode="legacy") as author:
        await _call(
            author,
            "resource_claim",
            {"resource_type": "file", "claim_type": "write", "task_id": task_id, "path": "app.txt"},
        )
        edit = {"path": "app.txt", "old_string": "line 10\n", "new_string": "line ten\n"}
        created = await _call(
            author,
            "proposal_create",
            {
                "task_id": task_id,
                "title": "t",
                "summary_md": "s",
                "affected_resources": [],
                "risk": "normal",
                "edits": [edit],
            },
        )
        pid = created["proposal"]["id"]
        assert not {"workspace_id", "deliberation_id", "patch_path", "proposer_session_id"} & set(created["proposal"])
        second = {"path": "app.txt", "old_string": "line ten\n", "new_string": "line 10!\n"}
        await _call(author, "proposal_attach_patch", {"proposal_id": pid, "edits": [second]})
    async with Client(sdk_http(real.http_url, reviewer), mode="legacy") as client:
        # A reviewer's view: what the change is for and where it stands, then the patch as a
        # text block of its own (a diff, not an escaped string); no structured copy beside them.
        result = await client.session.call_tool("proposal_get", {"proposal_id": pid})
        header, patch = (value_of(result), result.content[1].text)
        assert set(header) == {"proposal"} and "-line 10\n+line 10!\n" in patch
        # The id it named is not repeated to it, nor the default risk (normal).
        assert set(header["proposal"]) == {"task_id", "agent_id", "title", "summary_md", "status", "revision_number"}
        assert header["proposal"]["revision_number"] == 2
        assert result.structured_content is None and len(result.content) == 2
        since = await client.session.call_tool("proposal_get", {"proposal_id": pid, "since_revision": 1})
        brief, diff = value_of(since), since.content[1].text
        assert set(brief) == {"proposal"} and set(brief["proposal"]) == {"status", "revision_number"}
        assert "-line ten\n+line 10!\n" in diff and "-line 10\n" not in diff
        full = await _call(client, "proposal_get", {"proposal_id": pid, "detail": True})
        assert "patch_path" in full["proposal"] and "touched_files_json" in full["revisions"][0]
        assert [r["number"] for r in full["revisions"]] == [1, 2] and full["gates"]["ok"] is False
        assert "patch" not in full  # the patch is always a block of its own
        vote = await _call(client, "vote_cast", {"proposal_id": pid, "vote": "approve", "reason_md": "x" * 2000})
        assert set(vote["vote"]) == {"id"}  # its own id and verdict are not repeated to it
        report = await _call(client, "patch_validate", {"proposal_id": pid})
        assert len(report["votes"][0]["reason_md"]) == 300 and "session_id" not in report["votes"][0]
        listed = await _call(client, "vote_list", {"proposal_id": pid})
        # A current vote says nothing of it (the default; an older one says `current: false`).
        assert listed["votes"][0]["vote"] == "approve" and not {"current", "revision"} & set(listed["votes"][0])
        detailed = await _call(client, "patch_validate", {"proposal_id": pid, "detail": True})
        assert len(detailed["votes"][0]["reason_md"]) == 2000
        bad = await client.session.call_tool("proposal_get", {"proposal_id": pid, "since_revision": 3})
        assert bad.is_error and "since_revision 3: the proposal has revisions 1 to 2" in bad.content[0].text


async def test_a_kept_listing_follows_the_registry_and_the_name_style(real: Owner) -> None:
    agent = await auth_headers(real.runtime, agent_id="implementer-1")
    operator = await auth_headers(real.runtime, operator=True)
    first, _ = await _listing(real, agent)
    assert "patch_apply" in (await _listing(real, operator))[0]  # another principal, its own listing
    assert (await _listing(real, agent))[0] == first and "patch_apply" not in first
    # A registry without task.get is listed without it at once …
    real.runtime.registry = Registry({s.name: s for s in get_registry() if s.name != "task.get"})
    fewer, _ = await _listing(real, agent)
    assert "task_get" in first and "task_get" not in fewer and len(fewer) == len(first) - 1
    # … and so is another name style.
    object.__setattr__(real.runtime.config.mcp, "tool_names", "dotted")
    dotted, _ = await _listing(real, agent)
    assert "proposal.get" in dotted and "proposal_get" not in dotted
