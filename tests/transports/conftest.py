"""Fixtures for transport tests: a real owner on an ephemeral port and a short temp socket.

Tools with fixed behaviour (echo, fail, crash, write, slow) replace the registry of the
owner's runtime so the transports can be checked independently of the tool groups.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from roundtable.errors import ToolError
from roundtable.owner import Owner
from roundtable.services.args import Args, Int, NoArgs, Number, Text
from roundtable.tools.context import Call
from roundtable.tools.registry import Registry, ToolSpec
from tests.helpers import auth_headers

OBJ: dict[str, Any] = {"type": "object"}


async def _echo(call: Call) -> dict[str, Any]:
    return {
        "args": call.args.model_dump(exclude_unset=True),
        "kind": call.caller.kind,
        "transport": call.caller.transport,
        "agent_id": call.caller.agent_id,
    }


async def _empty(call: Call) -> dict[str, Any]:
    return {}


async def _fail(call: Call) -> dict[str, Any]:
    raise ToolError("refused: the thing is not allowed")


async def _crash(call: Call) -> dict[str, Any]:
    raise RuntimeError("internal detail: /home/secret/path")


async def _write(call: Call) -> dict[str, Any]:
    await call.w.append_event("", "test.written", {"n": call.args.n})
    return {"n": call.args.n}


async def _slow(call: Call) -> dict[str, Any]:
    await asyncio.sleep(call.args.seconds)
    return {"slept": True}


class EchoArgs(Args):
    text: Text = ""
    n: Int = 0


class WriteArgs(Args):
    n: Int = 0


class SlowArgs(Args):
    seconds: Number = 0.3


def _spec(name: str, handler: Any, args: type[Args] = NoArgs, **kw: Any) -> ToolSpec:
    return ToolSpec(name=name, description=f"test tool {name}", args=args, output_schema=OBJ, handler=handler, **kw)


def make_registry() -> Registry:
    specs = [
        _spec("test.echo", _echo, EchoArgs, mode="none", read_only=True),
        _spec("test.empty", _empty, mode="none"),
        _spec("test.fail", _fail, mode="none"),
        _spec("test.crash", _crash, mode="none"),
        _spec("test.write", _write, WriteArgs),
        _spec("test.slow", _slow, SlowArgs, mode="none"),
    ]
    return Registry({s.name: s for s in specs})


@pytest.fixture
def sockdir() -> Iterator[Path]:
    """A short directory for Unix sockets (paths are limited to ~108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def owner(project: Path, sockdir: Path) -> AsyncIterator[Owner]:
    async with Owner(project, http_address="127.0.0.1:0", socket_path=sockdir / "mcp" / "rt.sock", chair=False) as o:
        o.runtime.registry = make_registry()
        yield o


AGENT = "implementer-1"


@pytest.fixture
async def auth(owner: Owner) -> dict[str, str]:
    """`Authorization` with `implementer-1`'s credential: the HTTP endpoint is authenticated by default."""
    return await auth_headers(owner.runtime, agent_id=AGENT)


async def event_count(o: Owner) -> int:
    async with o.runtime.db.read() as r:
        return int(await r.scalar("SELECT COUNT(*) FROM events"))


async def raw_socket(path: Path, payload: bytes, *, eof: bool = False, timeout: float = 5.0) -> bytes:
    """Send raw bytes on a fresh connection; return everything the server sends back."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(payload)
    await writer.drain()
    if eof:
        writer.write_eof()
    try:
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
