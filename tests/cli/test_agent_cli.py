"""`roundtable agent` (`rt`): an agent's tools as commands, against a real owner over HTTP.

Each command is a real process (`python -m roundtable agent ...`) with the agent's own credential
in its environment, as a session's shell runs it. What it lists is what the MCP endpoint lists the
same credential (the SDK client's `tools/list`); what it prints is the text an MCP client hands its
model; a bad command line is refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from roundtable.owner import Owner
from roundtable.server import agent_cli
from tests.helpers import credential, sdk_http

pytestmark = pytest.mark.anyio

AUTHOR, REVIEWER = "implementer-1", "reviewer-1"


@pytest.fixture
async def owner(project: Path, short_tmp: Path) -> AsyncIterator[Owner]:
    async with Owner(project, http_address="127.0.0.1:0", socket_path=short_tmp / "s" / "rt.sock", chair=False) as o:
        yield o


async def environ(owner: Owner, agent_id: str, kind: str = "") -> dict[str, str]:
    token = await credential(owner.runtime, agent_id=agent_id)
    url = owner.http_url + (f"?tools={kind}" if kind else "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTABLE_")}
    return {**env, agent_cli.URL_ENV: url, agent_cli.TOKEN_ENV: token}


async def rt(env: dict[str, str], *words: str, stdin: str = "") -> tuple[int, str, str]:
    """`rt WORDS` as a process (the event loop keeps serving the owner meanwhile)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "roundtable",
        "agent",
        *words,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def events(owner: Owner) -> int:
    async with owner.runtime.db.read() as r:
        return int(await r.scalar("SELECT COUNT(*) FROM events"))


async def sdk_listing(owner: Owner, agent_id: str, kind: str = "") -> list[str]:
    """The tools the SDK client is listed for that credential (a harness's listing: no `_meta`)."""
    from mcp import ClientSession

    token = await credential(owner.runtime, agent_id=agent_id)
    url = owner.http_url + (f"?tools={kind}" if kind else "")
    async with sdk_http(url, {"Authorization": f"Bearer {token}"}) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
    assert all(tool.meta is None for tool in tools)  # the rare arguments only for who asks (rt)
    return [tool.name for tool in tools]


# What `rt` prints when an agent runs it with no arguments: read once per session, in place of a
# tool listing (about 1 % above 1,041, 944 and 1,094 bytes now; `python -m bench agent_task`).
RT_LISTING_LIMITS = {("implementer-1", "workspace"): 1_055, (REVIEWER, ""): 955, ("architect-1", ""): 1_105}


async def test_rt_s_listing_is_pinned_per_role(owner: Owner) -> None:
    for (agent_id, kind), limit in RT_LISTING_LIMITS.items():
        code, out, err = await rt(await environ(owner, agent_id, kind))
        assert code == 0, err
        assert len(out.encode("utf-8")) <= limit, (agent_id, len(out.encode("utf-8")))


@pytest.mark.parametrize(("agent_id", "kind"), [(AUTHOR, "workspace"), (AUTHOR, ""), (REVIEWER, "")])
async def test_rt_lists_what_the_mcp_endpoint_lists_the_same_credential(owner: Owner, agent_id: str, kind: str) -> None:
    code, out, err = await rt(await environ(owner, agent_id, kind))
    assert code == 0, err
    usage, *lines = out.splitlines()
    assert usage.startswith("usage: rt TOOL")
    assert [line.split(" ", 1)[0] for line in lines] == await sdk_listing(owner, agent_id, kind)
    if kind:
        assert any(line.startswith("workspace_propose TASK_ID ") for line in lines)
    assert ("vote_cast PROPOSAL_ID approve|" in out) is (agent_id == REVIEWER)


async def test_rt_calls_a_tool_and_prints_what_a_model_reads(owner: Owner) -> None:
    env = await environ(owner, AUTHOR)
    made = await owner.runtime.call("task.create", {"title": "Tidy the README", "body_md": "Shorter, please."})
    task_id = made["task"]["id"]
    code, out, _err = await rt(env, "task_get", task_id)
    assert code == 0
    shown = yaml.safe_load(out)
    assert shown["task"]["title"] == "Tidy the README" and shown["task"]["body_md"] == "Shorter, please."
    assert "created_at" not in shown["task"]  # the agent's rendering, not the operator's JSON


async def test_options_arrays_numbers_and_stdin_follow_the_schema(owner: Owner) -> None:
    env = await environ(owner, REVIEWER)
    made = await owner.runtime.call("task.create", {"title": "Review it", "body_md": "b"})
    task_id = made["task"]["id"]
    paths = ["README.md", "POLICIES.ROUNDTABLE.md"]
    code, out, err = await rt(env, "resource_claim", "file", "review", task_id, "--paths", *paths)
    assert code == 0, out + err
    claims = yaml.safe_load(out)["claims"]
    assert len(claims) == 2
    async with owner.runtime.db.read() as r:
        rows = await r.fetchall("SELECT resource_id FROM claims WHERE agent_id = ?", (REVIEWER,))
    assert sorted(row[0] for row in rows) == sorted(f"file:{p}" for p in paths)
    # A memory entry whose body comes on standard input (`-`), its title as `--name=value`.
    architect = await environ(owner, "architect-1")
    body = "Line one.\nLine two: with a colon.\n"
    code, out, err = await rt(
        architect, "memory_record", "project", "decision", "--title=Keep it small", "--body-md", "-", stdin=body
    )
    assert code == 0, out + err
    async with owner.runtime.db.read() as r:
        stored = await r.scalar("SELECT body_md FROM memory_entries WHERE title = 'Keep it small'")
    assert stored == body


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (
            ["proposal_get", "--bogus", "1"],
            "proposal_get has no --bogus (its arguments: --proposal-id, --since-revision",
        ),
        (["proposal_get"], "proposal_get needs PROPOSAL_ID"),
        (["proposal_get", "P-1", "P-2"], "too many values (P-2)"),
        (["proposal_get", "P-1", "--since-revision", "two"], "--since-revision: 'two' is not an integer"),
        (["no_such_tool"], "you have no tool 'no_such_tool'"),
        (["vote_cast", "P-1", "approve", "fine", "--confidence"], "--confidence needs a value"),
    ],
)
async def test_a_bad_command_line_is_refused_before_anything_is_sent(owner: Owner, words: list[str], says: str) -> None:
    env = await environ(owner, REVIEWER)
    before = await events(owner)
    code, out, err = await rt(env, *words)
    assert code == agent_cli.USAGE_ERROR and out == ""
    assert says in err
    assert await events(owner) == before


async def test_a_tool_refusal_is_printed_for_the_model_and_changes_nothing(owner: Owner) -> None:
    env = await environ(owner, REVIEWER)
    before = await events(owner)
    code, out, _err = await rt(env, "vote_cast", "P-nope", "maybe", "why not")
    assert code == agent_cli.REFUSED
    assert "argument vote must be one of approve" in out
    assert await events(owner) == before


async def test_one_tool_s_help_names_every_argument(owner: Owner) -> None:
    code, out, _err = await rt(await environ(owner, REVIEWER), "vote_cast", "--help")
    assert code == 0
    assert out.startswith("usage: rt vote_cast PROPOSAL_ID approve|")
    for option in (
        "--proposal-id (string, required)",
        "--reason-md (string, required)",
        "--confidence (number, optional)",
    ):
        assert option in out


async def test_no_endpoint_or_a_wrong_credential_says_so_in_one_line(owner: Owner) -> None:
    bare = {k: v for k, v in os.environ.items() if not k.startswith("ROUNDTABLE_")}
    code, out, err = await rt(bare, "table_watch")
    assert code == agent_cli.NO_ENDPOINT and out == ""
    assert "no session endpoint: ROUNDTABLE_MCP_SOCKET or ROUNDTABLE_MCP_URL is not set" in err
    remote = {**await environ(owner, REVIEWER), agent_cli.URL_ENV: "http://192.0.2.7:7117/mcp"}
    code, out, err = await rt(remote, "table_watch")  # never the credential in the clear to another host
    assert code == agent_cli.NO_ENDPOINT and "192.0.2.7 is not this machine" in err
    wrong = {**await environ(owner, REVIEWER), agent_cli.TOKEN_ENV: "rttok_not-a-token"}
    code, out, err = await rt(wrong, "table_watch")
    assert code == agent_cli.NO_ENDPOINT and "refused the credential (401)" in err
    assert "rttok_not-a-token" not in err


def _tool(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": properties, "required": required}}


def test_arguments_convert_by_type_and_fill_required_ones_in_order(tmp_path: Path) -> None:
    tool = _tool(
        {
            "proposal_id": {"type": "string"},
            "paths": {"type": "array", "items": {"type": "string"}},
            "line": {"type": "integer"},
            "confidence": {"type": "number"},
            "detail": {"type": "boolean"},
            "edits": {"type": "array", "items": {"type": "object"}},
        },
        ["proposal_id", "paths"],
    )
    edits = [{"path": "a.py", "old_string": "x", "new_string": "y"}]
    (tmp_path / "edits.json").write_text(json.dumps(edits), encoding="utf-8")
    got = agent_cli.arguments(
        tool,
        [
            "P-1",
            "a.py",
            "b.py",
            "--line=3",
            "--confidence",
            "0.5",
            "--detail",
            "--edits",
            f"@{tmp_path / 'edits.json'}",
        ],
        lambda: "",
    )
    assert got == {
        "proposal_id": "P-1",
        "paths": ["a.py", "b.py"],
        "line": 3,
        "confidence": 0.5,
        "detail": True,
        "edits": edits,
    }
    assert agent_cli.arguments(tool, ["--paths", "a", "--no-detail", "--proposal-id", "P-2"], lambda: "") == {
        "paths": ["a"],
        "detail": False,
        "proposal_id": "P-2",
    }
    with pytest.raises(agent_cli.UsageError, match="--edits: not JSON"):
        agent_cli.arguments(tool, ["P-1", "a", "--edits", "[oops"], lambda: "")
    with pytest.raises(agent_cli.UsageError, match="--line is not a flag"):
        agent_cli.arguments(tool, ["P-1", "a", "--no-line"], lambda: "")


def test_a_session_s_own_task_or_proposal_may_be_named_first_though_not_required() -> None:
    # A session's schema does not require the ids its capability names (its task, its proposal),
    # yet its model names them first as its prompt gives them (measured with Claude Code: `rt
    # proposal_get P-1` and `rt workspace_propose T-1 --title ...` were refused as "too many values").
    get = _tool({"proposal_id": {"type": "string"}, "since_revision": {"type": "integer"}}, [])
    assert agent_cli.arguments(get, ["P-1"], lambda: "") == {"proposal_id": "P-1"}
    assert agent_cli.arguments(get, [], lambda: "") == {}
    vote = _tool(
        {"proposal_id": {"type": "string"}, "vote": {"type": "string"}, "reason_md": {"type": "string"}},
        ["vote", "reason_md"],
    )
    assert agent_cli.arguments(vote, ["approve", "fine"], lambda: "") == {"vote": "approve", "reason_md": "fine"}
    assert agent_cli.arguments(vote, ["P-1", "approve", "fine"], lambda: "") == {
        "proposal_id": "P-1",
        "vote": "approve",
        "reason_md": "fine",
    }
    claim = _tool(
        {"resource_type": {"type": "string"}, "claim_type": {"type": "string"}, "task_id": {"type": "string"}},
        ["resource_type", "claim_type"],
    )
    assert agent_cli.arguments(claim, ["file", "write", "T-1"], lambda: "") == {
        "resource_type": "file",
        "claim_type": "write",
        "task_id": "T-1",
    }
    # Only those ids, only once each: a value for another optional argument is still too many.
    with pytest.raises(agent_cli.UsageError, match="too many values"):
        agent_cli.arguments(get, ["P-1", "2"], lambda: "")
    with pytest.raises(agent_cli.UsageError, match=r"too many values \(P-2\)"):
        agent_cli.arguments(get, ["P-2", "--proposal-id", "P-1"], lambda: "")
    watch = _tool({"run_id": {"type": "string"}, "after_event_id": {"type": "integer"}}, [])
    with pytest.raises(agent_cli.UsageError, match="too many values"):
        agent_cli.arguments(watch, ["R-1"], lambda: "")
