"""Both protocol eras through the stdio bridge, driven by the SDK's own stdio client.

`mode="2026-07-28"` sends per-request envelopes from the first message (no `initialize`), which
the owner accepts only with `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers that
match the body; `auto` probes `server/discover` and adopts 2026-07-28; `legacy` runs the
`initialize` handshake with a session.
"""

from __future__ import annotations

import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from roundtable.owner import Owner
from roundtable.server.stdio import encode_header_value
from tests.support.results import value_of

from .conftest import AGENT, make_registry

pytestmark = pytest.mark.anyio


def params(o: Owner) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "roundtable", "mcp", "stdio", "--root", str(o.root), "--url", o.http_url, "--agent", AGENT],
    )


def sessions(o: Owner) -> int:
    return len(o.http.open_sessions())


@pytest.mark.parametrize(
    ("mode", "era", "stateful"),
    [("2026-07-28", "2026-07-28", False), ("auto", "2026-07-28", False), ("legacy", "2025-11-25", True)],
)
async def test_sdk_client_through_bridge_in_every_mode(
    owner: Owner, auth: dict[str, str], mode: str, era: str, stateful: bool
) -> None:
    """`auth` gives implementer-1 its credential file; the bridge presents it (`--agent`)."""
    owner.runtime.registry = make_registry()
    async with Client(stdio_client(params(owner)), mode=mode) as client:
        assert client.session.protocol_version == era
        names = [t.name for t in (await client.session.list_tools()).tools]
        assert "test_echo" in names
        text = "née\u2028x"
        result = await client.session.call_tool("test_echo", {"text": text})
        assert result.is_error is False
        assert value_of(result)["args"] == {"text": text}
        assert value_of(result)["args"]["text"] == text
        failed = await client.session.call_tool("test_fail", {})
        assert failed.is_error and failed.content[0].text == "refused: the thing is not allowed"
        assert sessions(owner) == (1 if stateful else 0)


def test_mcp_name_header_encoding_matches_the_sdk() -> None:
    from mcp.shared.inbound import encode_header_value as sdk_encode

    for value in ("test_echo", "task.create", "née", " padded ", "=?base64?abc?=", "a\u2028b", "", "x" * 300):
        assert encode_header_value(value) == sdk_encode(value)
