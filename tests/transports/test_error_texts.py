"""Transports only encode: the error text a tool call gets is `Runtime.call`'s, already passed
through the secrets redactor, byte for byte the same on the legacy socket and over MCP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from roundtable.errors import ToolError
from roundtable.owner import Owner
from roundtable.services.args import NoArgs
from roundtable.tools.context import Call
from roundtable.tools.registry import Registry, ToolSpec
from tests.helpers import sdk_http

from .conftest import make_registry, raw_socket

pytestmark = pytest.mark.anyio

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


async def _leak(call: Call) -> dict[str, Any]:
    raise ToolError(f"push failed: remote said token={SECRET}")


@pytest.fixture
def leaky(owner: Owner) -> Owner:
    specs = {spec.name: spec for spec in make_registry()}
    specs["test.leak"] = ToolSpec(
        name="test.leak",
        description="fails naming a secret",
        args=NoArgs,
        output_schema={"type": "object"},
        handler=_leak,
        mode="none",
    )
    owner.runtime.registry = Registry(specs)
    return owner


async def test_a_failing_tools_text_is_redacted_once_and_the_same_everywhere(
    leaky: Owner, auth: dict[str, str]
) -> None:
    owner = leaky
    with pytest.raises(ToolError) as info:
        await owner.runtime.call("test.leak", {})
    expected = str(info.value)
    assert SECRET not in expected and "[REDACTED]" in expected and expected.startswith("push failed:")
    reply = json.loads(await raw_socket(owner.socket_path, b'{"tool":"test.leak","args":{}}\n'))
    assert reply == {"ok": False, "error": expected}
    async with Client(sdk_http(owner.http_url, auth), mode="legacy") as client:
        result = await client.session.call_tool("test_leak", {})
    assert result.is_error and result.content[0].text == expected
    crash = json.loads(await raw_socket(owner.socket_path, b'{"tool":"test.crash","args":{}}\n'))
    assert crash["error"] == "test.crash failed with an internal error; the owner's log has details"
