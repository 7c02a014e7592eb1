"""The MCP surface over authenticated Streamable HTTP with the SDK client: resources, templates,
subscriptions (the turn queue), prompts, logging, completion, instructions and pagination."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

from roundtable.server import mcp_adapter, resources
from roundtable.services.coordination import turns
from tests.helpers import auth_headers, sdk_http

from .conftest import AGENT, Inbox, World, http_client, is_update, schedule_turn

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]


async def test_capabilities_and_instructions(world: World) -> None:
    async with http_client(world) as client:
        caps = client.server_capabilities
        assert caps.resources is not None and caps.resources.subscribe is True and caps.resources.list_changed
        assert caps.prompts is not None and caps.logging is not None and caps.completions is not None
        text = client.instructions or ""
        for name in ("agent_turn_request", "agent_turn_start", "proposal_create", "resource_claim", "vote_cast"):
            assert name in text
        assert "roundtable://turns/" in text and "agent.turn_request" not in text
    object.__setattr__(world.runtime.config.mcp, "tool_names", "dotted")
    async with http_client(world) as client:
        assert "agent.turn_request" in (client.instructions or "")


async def test_resources_list_templates_and_read(world: World) -> None:
    async with http_client(world) as client:
        listed = (await client.session.list_resources()).resources
        uris = {r.uri for r in listed}
        assert "roundtable://doc/AGENTS.ROUNDTABLE.md" in uris and "roundtable://table" in uris
        assert {f"roundtable://run/{world.run_id}", f"roundtable://turns/{world.run_id}"} <= uris
        assert {f"roundtable://task/{world.task_id}", f"roundtable://proposal/{world.proposal_id}"} <= uris
        assert all(r.name and r.mime_type for r in listed)
        templates = {t.uri_template for t in (await client.session.list_resource_templates()).resource_templates}
        assert "roundtable://events/{run_id}{?after,limit}" in templates
        assert "roundtable://proposal/{proposal_id}" in templates

        doc = (await client.session.read_resource("roundtable://doc/AGENTS.ROUNDTABLE.md")).contents[0]
        assert doc.mime_type == "text/markdown" and "Roundtable" in doc.text
        task = json.loads((await client.session.read_resource(f"roundtable://task/{world.task_id}")).contents[0].text)
        assert task == await world.runtime.call("task.get", {"task_id": world.task_id})
        proposal = json.loads(
            (await client.session.read_resource(f"roundtable://proposal/{world.proposal_id}")).contents[0].text
        )
        assert proposal["proposal"]["id"] == world.proposal_id and "gates" in proposal and "revisions" in proposal
        run = json.loads((await client.session.read_resource(f"roundtable://run/{world.run_id}")).contents[0].text)
        assert run["run_id"] == world.run_id and "pending_proposals" in run
        assert run["usage"]["tokens"] == 0 and run["usage"]["by_agent"] == {}  # what its sessions spent
        page = json.loads(
            (await client.session.read_resource(f"roundtable://events/{world.run_id}?after=0&limit=1")).contents[0].text
        )
        assert len(page["events"]) == 1 and page["has_more_events"] is True
        after = page["next_after_event_id"]
        rest = json.loads(
            (await client.session.read_resource(f"roundtable://events/{world.run_id}?after={after}")).contents[0].text
        )
        assert all(e["id"] > after for e in rest["events"])
        source = (await client.session.read_resource("roundtable://file/src/calc.py")).contents[0]
        assert "def add" in source.text
        queue = json.loads((await client.session.read_resource(f"roundtable://turns/{world.run_id}")).contents[0].text)
        assert queue == {"run_id": world.run_id, "run_status": "active", "in_flight": None, "queue": [], "recent": []}

        for bad in (
            "roundtable://task/T-nope",
            "roundtable://nothing/x",
            "file:///etc/passwd",
            "roundtable://doc/x.md",
        ):
            with pytest.raises(MCPError) as info:
                await client.session.read_resource(bad)
            assert info.value.error.code == mcp_adapter.RESOURCE_NOT_FOUND
        with pytest.raises(MCPError) as info:
            await client.session.read_resource("roundtable://file/../../etc/passwd")
        assert "passwd" not in json.dumps(info.value.error.data or "") and info.value.error.code != 0


async def test_subscribe_to_the_turn_queue_gets_the_turn(world: World) -> None:
    inbox = Inbox()
    uri = f"roundtable://turns/{world.run_id}"
    async with http_client(world, inbox=inbox) as client:
        await client.session.subscribe_resource(uri)
        request_id = await schedule_turn(world.runtime, world.run_id)
        note = await inbox.wait_for(is_update(uri, "agent.turn_scheduled"))
        events = note.params.meta["roundtable/events"]
        scheduled = next(e for e in events if e["type"] == "agent.turn_scheduled")
        assert scheduled["agent_id"] == AGENT and scheduled["request_event_id"] == request_id
        queue = json.loads((await client.session.read_resource(uri)).contents[0].text)
        assert queue["in_flight"]["request_event_id"] == request_id and queue["in_flight"]["status"] == "scheduled"
        # Unrelated resources do not fire; unsubscribing stops the updates.
        assert not inbox.updates(f"roundtable://task/{world.task_id}")
        await client.session.unsubscribe_resource(uri)
        count = len(inbox.updates(uri))
        async with world.runtime.db.write() as tx:
            await turns.start_turn(tx, world.run_id, AGENT, request_id)
        await client.session.send_ping()
        assert len(inbox.updates(uri)) == count


async def test_task_and_proposal_subscriptions(world: World) -> None:
    inbox = Inbox()
    task_uri = f"roundtable://task/{world.task_id}"
    proposal_uri = f"roundtable://proposal/{world.proposal_id}"
    async with http_client(world, inbox=inbox) as client:
        await client.session.subscribe_resource(task_uri)
        await client.session.subscribe_resource(proposal_uri)
        await world.runtime.call("task.update_status", {"task_id": world.task_id, "status": "in_progress"})
        await inbox.wait_for(is_update(task_uri, "task.updated"))
        async with world.runtime.db.write() as tx:
            await tx.append_event(world.run_id, "vote.cast", {"proposal_id": world.proposal_id, "vote": "approve"})
        await inbox.wait_for(is_update(proposal_uri, "vote.cast"))


async def test_subscribe_needs_the_right_to_read(world: World) -> None:
    async with http_client(world) as client:
        for uri in ("roundtable://task/T-nope", "roundtable://bogus"):
            with pytest.raises(MCPError):
                await client.session.subscribe_resource(uri)


async def test_prompts(world: World) -> None:
    async with http_client(world) as client:
        listed = (await client.session.list_prompts()).prompts
        assert [p.name for p in listed] == ["implementer", "reviewer", "tester", "security", "architect", "resume"]
        assert all(p.description for p in listed)
        got = await client.session.get_prompt("implementer", {"task_id": world.task_id})
        text = got.messages[0].content.text
        assert "You are an implementer" in text and world.task_id in text and "Add mul" in text
        assert "proposal_create" in text and "Mandatory Rules" in text and "table.get_state" not in text
        review = await client.session.get_prompt("reviewer", {"proposal_id": world.proposal_id})
        assert world.proposal_id in review.messages[0].content.text
        resume = await client.session.get_prompt("resume", {})
        body = resume.messages[0].content.text
        assert body.startswith("# Roundtable Resume Briefing") and f"You are resuming as {AGENT}" in body
        with pytest.raises(MCPError):
            await client.session.get_prompt("nope", {})
        with pytest.raises(MCPError):
            await client.session.get_prompt("implementer", {"task_id": "T-nope"})


async def test_completion_of_prompt_and_template_arguments(world: World) -> None:
    async with http_client(world, operator=True) as client:
        done = await client.session.complete(
            types.PromptReference(name="implementer"), {"name": "task_id", "value": "T"}
        )
        assert {world.task_id, world.other_task_id} <= set(done.completion.values)
        done = await client.session.complete(
            types.ResourceTemplateReference(uri="roundtable://proposal/{proposal_id}"),
            {"name": "proposal_id", "value": world.proposal_id[:3]},
        )
        assert done.completion.values == [world.proposal_id]
        done = await client.session.complete(
            types.ResourceTemplateReference(uri="roundtable://file/{+path}"), {"name": "path", "value": "sr"}
        )
        assert done.completion.values == ["src/"]
        done = await client.session.complete(
            types.ResourceTemplateReference(uri="roundtable://file/{+path}"), {"name": "path", "value": "src/c"}
        )
        assert done.completion.values == ["src/calc.py"]
        done = await client.session.complete(types.PromptReference(name="resume"), {"name": "agent_id", "value": "rev"})
        assert done.completion.values and all(v.startswith("reviewer-") for v in done.completion.values)
        # Unknown prompts and arguments complete to nothing (never an error).
        done = await client.session.complete(types.PromptReference(name="test_prompt"), {"name": "arg1", "value": "x"})
        assert done.completion.values == []
    async with http_client(world) as client:  # an agent completes its own id only
        done = await client.session.complete(types.PromptReference(name="resume"), {"name": "agent_id", "value": ""})
        assert done.completion.values == [AGENT]


async def test_logging_set_level_and_messages(world: World) -> None:
    inbox = Inbox()
    async with http_client(world, inbox=inbox) as client:
        await client.session.set_logging_level("notice")
        await schedule_turn(world.runtime, world.run_id)
        note = await inbox.wait_for(lambda i: isinstance(i, types.LoggingMessageNotification))
        assert note.params.level == "notice" and note.params.data["type"] == "agent.turn_scheduled"
        assert "your turn is scheduled" in note.params.data["summary"]
        # Below the level: an info-level vote on someone else's proposal never arrives.
        await client.session.set_logging_level("error")
        before = len(inbox.items)
        await schedule_turn(world.runtime, world.run_id, "implementer-2")
        await client.session.send_ping()
        assert len(inbox.items) == before


def test_page_cursor_round_trip() -> None:
    items = list(range(23))
    cursor = None
    seen: list[int] = []
    while True:
        chunk, cursor = mcp_adapter.page(items, cursor, "tools", 7)
        seen += chunk
        if cursor is None:
            break
    assert seen == items
    with pytest.raises(MCPError):
        mcp_adapter.page(items, "bogus", "tools", 7)
    _chunk, other = mcp_adapter.page(items, None, "prompts", 7)
    with pytest.raises(MCPError):  # a cursor of another list is not accepted
        mcp_adapter.page(items, other, "tools", 7)


async def test_paginated_tools_list_over_the_wire(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from roundtable.server.http import HttpServer
    from roundtable.tools import roles
    from roundtable.tools.registry import get_registry

    world.runtime.registry = get_registry()
    async with http_client(world) as client:  # the default page holds every tool
        first = await client.session.list_tools()
        # An implementer is shown the advertised tools its role uses (never patch_apply/patch_reject).
        listed = roles.listed_for("implementer") or frozenset()
        agent_tools = [s for s in get_registry().exposed() if s.callable_by(operator=False, anonymous=False)]
        agent_tools = [s for s in agent_tools if s.name in listed]
        assert first.next_cursor is None and len(first.tools) == len(agent_tools)
    real = mcp_adapter.build_server
    monkeypatch.setattr("roundtable.server.http.build_server", lambda rt, **kw: real(rt, page_size=10, **kw))
    assert world.owner.http is not None
    small = HttpServer(world.runtime, replace(world.owner.http.options, port=0))
    await small.start()
    try:
        headers = await auth_headers(world.runtime, agent_id=AGENT)
        async with Client(sdk_http(small.url, headers), mode="legacy") as client:
            names: list[str] = []
            params = None
            pages = 0
            while True:
                result = await client.session.list_tools(params=params)
                names += [t.name for t in result.tools]
                pages += 1
                if not result.next_cursor:
                    break
                params = types.PaginatedRequestParams(cursor=result.next_cursor)
            assert pages == -(-len(agent_tools) // 10) and len(names) == len(set(names)) == len(agent_tools)
            assert names == sorted(names)
            with pytest.raises(MCPError):
                await client.session.list_tools(params=types.PaginatedRequestParams(cursor="not-ours"))
    finally:
        await small.stop()


def test_sdk_contract_connection_attribute() -> None:
    """`sdk.connection_of` relies on `ServerSession._connection` (SDK 2.3)."""
    assert "_connection" in ServerSession.__init__.__code__.co_names


async def test_parse_and_uri_round_trip() -> None:
    for kind, ident in (("task", "T-1"), ("proposal", "P-2"), ("file", "src/a b.py"), ("run", "RUN-x")):
        ref = resources.parse(resources.uri(kind, ident))
        assert ref is not None and (ref.kind, ref.ident) == (kind, ident)
    assert resources.parse("roundtable://events/RUN-1?after=3&limit=2") == resources.Ref(
        "events", "RUN-1", (("after", "3"), ("limit", "2"))
    )
    for bad in ("roundtable://events/RUN-1?after=x", "roundtable://task/a/b", "roundtable://table/x", "http://x/y"):
        assert resources.parse(bad) is None


async def test_update_due_before_the_get_stream_is_held_for_it(world: World) -> None:
    """A client that subscribes before its GET stream is connected still gets the update."""
    import httpx2

    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        **(await auth_headers(world.runtime, agent_id=AGENT)),
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    uri = f"roundtable://turns/{world.run_id}"
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10.0)) as http:
        sid = (await http.post(world.url, json=init)).headers["mcp-session-id"]
        session = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        await http.post(world.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        sub = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}
        assert '"result"' in (await http.post(world.url, json=sub, headers=session)).text
        await schedule_turn(world.runtime, world.run_id)
        await asyncio.sleep(0.3)  # the update is due now; no GET stream yet
        async with http.stream("GET", world.url, headers={**session, "accept": "text/event-stream"}) as stream:
            text = ""
            async for chunk in stream.aiter_text():
                text += chunk
                if "notifications/resources/updated" in text:
                    break
        assert "agent.turn_scheduled" in text


def test_sdk_contract_transport_internals() -> None:
    """`roundtable.server.sdk` reads these SDK 2.3 internals (pushes held for the GET stream,
    sessions per principal, idle-session eviction, shutdown)."""
    from mcp.server.streamable_http import GET_STREAM_KEY, StreamableHTTPServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    assert GET_STREAM_KEY == "_GET_stream"
    assert "_request_streams" in StreamableHTTPServerTransport.__init__.__code__.co_names
    assert "_requests_in_flight" in StreamableHTTPServerTransport.__init__.__code__.co_names
    assert "_server_instances" in StreamableHTTPSessionManager.__init__.__code__.co_names


def test_sdk_internals_are_read_in_one_module() -> None:
    """No server module but `server/sdk.py` names an SDK private attribute."""
    import pathlib
    import re

    import roundtable.server

    private = re.compile(r"\b_(connection|server_instances|request_streams|requests_in_flight|session_manager)\b")
    for path in pathlib.Path(roundtable.server.__file__).parent.glob("*.py"):
        if path.name != "sdk.py":
            assert not private.search(path.read_text()), path.name


async def test_resource_list_changed_when_a_task_appears(world: World) -> None:
    inbox = Inbox()
    async with http_client(world, inbox=inbox) as client:
        await client.session.list_resources()
        created = await world.runtime.call("task.create", {"title": "New", "body_md": "x", "readable_paths": ["src"]})
        await inbox.wait_for(lambda i: isinstance(i, types.ResourceListChangedNotification))
        uris = {r.uri for r in (await client.session.list_resources()).resources}
        assert f"roundtable://task/{created['task']['id']}" in uris


async def test_revoked_token_stops_pushes_on_an_open_stream(world: World) -> None:
    from roundtable.services.sessions import tokens

    inbox, witness = Inbox(), Inbox()
    uri = f"roundtable://turns/{world.run_id}"
    async with (
        http_client(world, agent_id="implementer-2", inbox=inbox) as client,
        http_client(world, operator=True, inbox=witness) as operator,
    ):
        await client.session.subscribe_resource(uri)
        await operator.session.subscribe_resource(uri)
        await schedule_turn(world.runtime, world.run_id)
        await inbox.wait_for(is_update(uri, "agent.turn_scheduled"))
        async with world.runtime.db.write() as tx:
            row = await tx.fetchone(
                "SELECT id FROM access_tokens WHERE agent_id = 'implementer-2' AND revoked_at IS NULL"
            )
            await tokens.revoke(tx, row["id"])
        await asyncio.sleep(1.1)  # liveness is re-checked at most once a second
        seen, told = len(inbox.updates(uri)), len(witness.updates(uri))
        await schedule_turn(world.runtime, world.run_id, "implementer-2")
        # The same push reaches a live subscriber: once it has, the revoked one's turn has passed.
        await witness.wait_for(lambda _item: len(witness.updates(uri)) > told)
        assert len(inbox.updates(uri)) == seen


async def test_path_completion_stays_inside_the_repository(world: World) -> None:
    root = world.runtime.root
    (root / "outside").symlink_to("/etc")
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git" / "config").write_text("[core]\n")
    template = types.ResourceTemplateReference(uri="roundtable://file/{+path}")
    async with http_client(world, operator=True) as client:
        for prefix in ("outside/", "outside/pa", ".git/", ".roundtable/", "../", "src/../../"):
            done = await client.session.complete(template, {"name": "path", "value": prefix})
            assert done.completion.values == [], prefix
        top = await client.session.complete(template, {"name": "path", "value": ""})
        assert ".git/" not in top.completion.values and ".roundtable/" not in top.completion.values
