"""Byte-exact framing: whatever Unicode the owner puts in a JSON string, every line the bridge
writes is one valid JSON message equal to what HTTP returned.

Server-sent events end lines at CR, LF or CRLF only; `str.splitlines` also splits at U+2028,
U+2029, U+0085, VT, FF and the file/group/record separators, which cut frames in the old reader.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roundtable.owner import Owner
from roundtable.server.stdio import events, frame
from roundtable.services.args import Args, Text
from roundtable.tools.context import OPERATOR
from roundtable.tools.registry import Registry, ToolSpec
from tests.helpers import make_git_project
from tests.support.owners import Bridge, call
from tests.support.results import value_of

pytestmark = pytest.mark.anyio
# Line breaks for some reader or other, lone surrogates excluded (not encodable as UTF-8).
TRICKY = '\r\n\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\t\x00"\\/\u00e9\U0001f600\ufeff\ufffe'


def _text(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(0, 40)):
        pick = rng.random()
        if pick < 0.5:
            out.append(rng.choice(TRICKY))
        elif pick < 0.8:
            out.append(chr(rng.randint(0x20, 0x7E)))
        else:
            cp = rng.randint(0x80, 0x10FFFF)
            out.append(chr(cp) if not 0xD800 <= cp <= 0xDFFF else "x")
    return "".join(out)


def _check_line(line: bytes) -> Any:
    """One LF-terminated line that every line reader keeps whole; returns its JSON value."""
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and b"\r" not in line
    text = line.decode("utf-8")
    assert len(text[:-1].splitlines()) == 1, "a str.splitlines reader would cut this frame"
    return json.loads(text)


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def _sse_body(messages: list[Any], newline: str) -> bytes:
    parts = [": keep-alive comment\r\n", "id: 7\nretry: 100\n\n"]  # comment, priming event
    for message in messages:
        parts.append(f"event: message{newline}data: {json.dumps(message, ensure_ascii=False)}{newline}{newline}")
    return "".join(parts).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"])), min_size=1, max_size=4),
    newline=st.sampled_from(["\n", "\r", "\r\n"]),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_sse_reader_and_frames_on_arbitrary_unicode(texts: list[str], newline: str, cuts: list[int]) -> None:
    messages = [{"jsonrpc": "2.0", "id": i, "result": {"text": t, t[:8]: [t]}} for i, t in enumerate(texts)]
    body = _sse_body(messages, newline)
    points = sorted({c % (len(body) + 1) for c in cuts})
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True) if body[a:b]]

    async def read() -> list[str]:
        request = httpx2.Request("POST", "http://127.0.0.1/mcp")  # as every reply the bridge reads has
        response = httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=_Chunks(chunks), request=request
        )
        return [data async for data in events(response)]

    datas = asyncio.run(read())
    assert len(datas) == len(messages)
    for data, message in zip(datas, messages, strict=True):
        framed = frame(data)
        assert framed is not None
        line, value = framed
        assert value == message and _check_line(line) == message


class EchoArgs(Args):
    allow_blank = frozenset({"text"})

    text: Text


async def test_fuzzed_strings_through_the_bridge_equal_http(project: Path) -> None:
    async def echo(c: Any) -> dict[str, Any]:
        return {"text": c.args.text, "mirror": {c.args.text: [c.args.text]}}

    spec = ToolSpec(
        name="fuzz.echo",
        description="echo",
        args=EchoArgs,
        output_schema={"type": "object"},
        handler=echo,
        mode="none",
        read_only=True,
    )
    rng = random.Random(20261130)
    texts = [TRICKY, "first line\u2028second part", "\r", "a\rb", *(_text(rng) for _ in range(150))]
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        owner.runtime.registry = Registry({spec.name: spec})
        bridge = await Bridge.spawn("--root", str(project), "--url", owner.http_url)
        try:
            await bridge.handshake()
            await bridge.send(*(call(i, "fuzz_echo", {"text": t}) for i, t in enumerate(texts)))
            via_bridge = {}
            for _ in texts:
                msg = await bridge.recv()
                via_bridge[msg["id"]] = msg["result"]
            for line in bridge.frames:
                _check_line(line)
            via_http = await _over_http(owner.http_url, project, texts)
            assert via_bridge == via_http
            for i, t in enumerate(texts):
                assert value_of(via_bridge[i]) == {"text": t, "mirror": {t: [t]}}
        finally:
            await bridge.close()


async def _over_http(url: str, root: Path, texts: list[str]) -> dict[int, Any]:
    """The same calls straight over Streamable HTTP (with the credential the bridge would use)."""
    from roundtable import credentials

    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    out: dict[int, Any] = {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        init = {
            "jsonrpc": "2.0",
            "id": "i",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        token = credentials.read_credential(root)
        if token:
            http.headers["authorization"] = f"Bearer {token}"
        resp = await http.post(url, json=init)
        http.headers["mcp-session-id"] = resp.headers["mcp-session-id"]
        http.headers["mcp-protocol-version"] = "2025-11-25"
        for i, t in enumerate(texts):
            async with http.stream("POST", url, json=call(i, "fuzz_echo", {"text": t})) as reply:
                async for data in events(reply):
                    out[json.loads(data)["id"]] = json.loads(data)["result"]
    return out


async def test_repro_file_and_task_title_with_line_separator(project: Path) -> None:
    """A committed file and a (stored) task title containing U+2028."""
    await asyncio.to_thread(make_git_project, project, {"notes.txt": "first line\u2028second part\n"})
    async with Owner(project, http_address="127.0.0.1:0", socket=False, chair=False) as owner:
        task = (await owner.runtime.call("task.create", {"title": "t", "body_md": "x\ry"}, OPERATOR))["task"]
        # Titles refuse line separators now; one stored before that rule still travels intact.
        async with owner.runtime.db.write() as tx:
            await tx.update("tasks", {"id": task["id"]}, {"title": "a\u2028b\u2029c\x85d"})
        bridge = await Bridge.spawn("--root", str(project), "--url", owner.http_url)
        try:
            await bridge.handshake()
            await bridge.send(call(2, "repo_read_file", {"path": "notes.txt"}), call(3, "task_list"))
            replies = {m["id"]: m for m in [await bridge.recv(), await bridge.recv()]}
            for line in bridge.frames:
                _check_line(line)
            assert value_of(replies[2]["result"])["content"] == "first line\u2028second part\n"
            titles = [t["title"] for t in value_of(replies[3]["result"])["tasks"]]
            assert "a\u2028b\u2029c\x85d" in titles
        finally:
            await bridge.close()


def test_frame_refuses_what_is_not_json() -> None:
    assert frame("not json") is None
    assert frame('{"a": "\u2028"}')[0] == b'{"a": "\\u2028"}\n'  # type: ignore[index]
    assert frame('{\n "a": 1\r\n}')[0] == b'{"a":1}\n'  # type: ignore[index]
    assert sys.maxunicode == 0x10FFFF
